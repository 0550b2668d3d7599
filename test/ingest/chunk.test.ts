import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { chunkParsed, countTokens } from "../../src/ingest/chunk.ts"
import { parseMarkdown } from "../../src/ingest/parse/markdown.ts"
import { parseMessages } from "../../src/ingest/parse/messages.ts"

const Words = Schema.Array(Schema.Literals(["alpha", "beta.", "Gamma", "delta,", "# Head", "\n\n", "- item", "epsilon!"]))

describe("chunking", () => {
  it.effect.prop(
    "every chunk is its slice of the text, within the target, in order, and together they cover every block",
    [Words, Schema.Int.check(Schema.isBetween({ minimum: 3, maximum: 40 }))],
    ([words, target]) =>
      Effect.sync(() => {
        const parsed = parseMarkdown(words.join(" "))
        const chunks = chunkParsed(parsed, { targetTokens: target, overlapTokens: 2 })
        chunks.forEach((chunk, i) => {
          assert.strictEqual(chunk.ordinal, i)
          assert.strictEqual(parsed.text.slice(chunk.char_start, chunk.char_end), chunk.text)
          assert.isAtMost(chunk.token_count, target)
          if (i > 0) assert.isAtLeast(chunk.char_start, chunks[i - 1]!.char_start)
        })
        for (const block of parsed.blocks) {
          const covered = chunks.some((c) => c.char_start <= block.start && block.start < c.char_end) &&
            chunks.some((c) => c.char_start < block.end && block.end <= c.char_end)
          assert.isTrue(covered, JSON.stringify(block))
        }
      })
  )

  it.effect("chunks never cross a heading and keep the section path", () =>
    Effect.sync(() => {
      const parsed = parseMarkdown("# A\n\nOne two.\n\n## B\n\nThree four.\n\n# C\n\nFive.")
      const chunks = chunkParsed(parsed, { targetTokens: 100, overlapTokens: 10 })
      assert.deepStrictEqual(chunks.map((c) => c.section_path), [["A"], ["A", "B"], ["C"]])
      assert.deepStrictEqual(chunks.map((c) => c.text), ["A\n\nOne two.", "B\n\nThree four.", "C\n\nFive."])
    }))

  it.effect("a long paragraph is split at sentence ends with overlap", () =>
    Effect.sync(() => {
      const sentences = Array.from({ length: 12 }, (_, i) => `Sentence number ${i} is here.`)
      const parsed = parseMarkdown(sentences.join(" "))
      const chunks = chunkParsed(parsed, { targetTokens: 20, overlapTokens: 6 })
      assert.isAbove(chunks.length, 3)
      for (const chunk of chunks) {
        assert.match(chunk.text, /^Sentence number \d+ is here\./)
        assert.match(chunk.text, /here\.$/)
      }
      assert.isBelow(chunks[1]!.char_start, chunks[0]!.char_end, "consecutive pieces overlap")
    }))

  it.effect("messages are chunked by whole turns, keeping speaker and time", () =>
    Effect.sync(() => {
      const parsed = parseMessages([
        { speaker: "Alice", content: "Did the migration to Postgres finish?", timestamp: "2024-05-01T10:00:00Z" },
        { speaker: "Bob", content: "Yes, on Tuesday.", timestamp: "2024-05-01T10:02:00Z" },
        { role: "assistant", content: "Noted." }
      ])
      const chunks = chunkParsed(parsed, { targetTokens: 10, overlapTokens: 0 })
      assert.deepStrictEqual(chunks.map((c) => c.speaker), ["Alice", "Bob", "assistant"])
      assert.strictEqual(chunks[0]!.spoken_at, "2024-05-01T10:00:00.000Z")
      assert.strictEqual(chunks[1]!.text, "Bob: Yes, on Tuesday.")
      const together = chunkParsed(parsed, { targetTokens: 100, overlapTokens: 0 })
      assert.strictEqual(together.length, 1)
      assert.isNull(together[0]!.speaker)
      assert.strictEqual(together[0]!.spoken_at, "2024-05-01T10:00:00.000Z")
    }))

  it.effect("token counts are words and punctuation", () =>
    Effect.sync(() => {
      assert.strictEqual(countTokens("Hello, world!"), 4)
      assert.strictEqual(countTokens(""), 0)
    }))
})
