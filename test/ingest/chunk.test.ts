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

  it.effect("a chunk of several messages keeps each message's speaker, time and offsets, and their time span", () =>
    Effect.sync(() => {
      const parsed = parseMessages([
        { speaker: "Ana", content: "Flight booked for the conference.", timestamp: "2026-02-03T09:00:00Z" },
        { speaker: "Ben", content: "Nice, which hotel?" },
        { speaker: "Ana", content: "I deployed the new load balancer this morning.", timestamp: "2026-02-09T08:30:00Z" },
        { speaker: "Ben", content: "Saw it, all green.", timestamp: "2026-02-11T17:00:00Z" }
      ])
      const [chunk, ...rest] = chunkParsed(parsed, { targetTokens: 200, overlapTokens: 0 })
      assert.strictEqual(rest.length, 0)
      assert.isNull(chunk!.speaker)
      assert.strictEqual(chunk!.spoken_at, "2026-02-03T09:00:00.000Z")
      assert.strictEqual(chunk!.spoken_until, "2026-02-11T17:00:00.000Z")
      assert.deepStrictEqual(chunk!.messages.map((m) => [m.speaker, m.spoken_at]), [
        ["Ana", "2026-02-03T09:00:00.000Z"],
        ["Ben", "2026-02-03T09:00:00.000Z"],
        ["Ana", "2026-02-09T08:30:00.000Z"],
        ["Ben", "2026-02-11T17:00:00.000Z"]
      ])
      assert.deepStrictEqual(
        chunk!.messages.map((m) => parsed.text.slice(m.char_start, m.char_end)),
        parsed.blocks.map((block) => block.text)
      )
    }))

  it.effect("messages before the first timestamp take the document's date; a long message is split inside itself", () =>
    Effect.sync(() => {
      const long = Array.from({ length: 30 }, (_, i) => `Point ${i} is made here.`).join(" ")
      const parsed = parseMessages([
        { speaker: "Ana", content: "Morning!" },
        { speaker: "Ben", content: long, timestamp: "2026-02-09T08:30:00Z" },
        { speaker: "Ana", content: "Agreed." }
      ])
      const chunks = chunkParsed(parsed, { targetTokens: 40, overlapTokens: 5, documentDate: "2026-02-01T00:00:00.000Z" })
      assert.strictEqual(chunks[0]!.messages[0]!.spoken_at, "2026-02-01T00:00:00.000Z")
      for (const chunk of chunks) {
        // Every chunk is a run of whole messages, or lies inside one message.
        assert.isAbove(chunk.messages.length, 0)
        for (const message of chunk.messages) {
          const block = parsed.blocks.find((b) => b.start <= message.char_start && message.char_end <= b.end)
          assert.isDefined(block)
          if (chunk.messages.length > 1) assert.deepStrictEqual([message.char_start, message.char_end], [block!.start, block!.end])
        }
        assert.strictEqual(chunk.char_start, chunk.messages[0]!.char_start)
        assert.strictEqual(chunk.char_end, chunk.messages[chunk.messages.length - 1]!.char_end)
      }
      const benParts = chunks.filter((chunk) => chunk.speaker === "Ben")
      assert.isAbove(benParts.length, 1, "the long message is split")
      assert.isTrue(benParts.every((chunk) => chunk.spoken_at === "2026-02-09T08:30:00.000Z"))
      assert.strictEqual(chunks[chunks.length - 1]!.messages.at(-1)!.spoken_at, "2026-02-09T08:30:00.000Z")
    }))

  it.effect("token counts are words and punctuation", () =>
    Effect.sync(() => {
      assert.strictEqual(countTokens("Hello, world!"), 4)
      assert.strictEqual(countTokens(""), 0)
    }))
})
