import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { EngramConfig } from "../../src/config.ts"
import { chunkParsed } from "../../src/ingest/chunk.ts"
import { parseDocument } from "../../src/ingest/parse/index.ts"
import { cutParsed } from "../../src/ingest/tasks.ts"
import { IngestThreads } from "../../src/adapters/IngestThreads.ts"
import { defaultSettings } from "../support/server.ts"

const markdown = Array.from({ length: 200 }, (_, i) => `## Part ${i}\n\nAcme Corp met Globex in Berlin on May ${1 + (i % 28)}, 2021.`)
  .join("\n\n")
const bytes = new TextEncoder().encode(markdown)

const threads = IngestThreads.layer.pipe(
  Layer.provide(EngramConfig.layerWith({ ...defaultSettings("/nonexistent"), workerConcurrency: 1 }))
)

describe("cutParsed", () => {
  it("keeps the first maxChars characters and the blocks within them, the last one cut", async () => {
    const parsed = await parseDocument("markdown", bytes)
    const cut = cutParsed(parsed, 1000)
    assert.strictEqual(cut.text, parsed.text.slice(0, 1000))
    const last = cut.blocks.at(-1)!
    assert.strictEqual(last.end, 1000)
    for (const block of cut.blocks) assert.strictEqual(cut.text.slice(block.start, block.end), block.text)
    assert.strictEqual(cutParsed(parsed, parsed.text.length), parsed)
  })
})

layer(threads, { excludeTestServices: true })("IngestThreads", (it) => {
  it.effect("parse, chunk and extract run on a worker thread with the same results as in this thread", () =>
    Effect.gen(function*() {
      const pool = yield* IngestThreads
      const expected = yield* Effect.promise(() => parseDocument("markdown", bytes))
      const parsed = yield* pool.run({ kind: "parse", format: "markdown", bytes, maxChars: 1e9 }, 30_000)
      assert.strictEqual(parsed.text, expected.text)
      assert.deepStrictEqual(JSON.parse(parsed.blocksJson), expected.blocks)
      assert.strictEqual(parsed.blockCount, expected.blocks.length)
      assert.strictEqual(parsed.charsTotal, expected.text.length)
      const options = { targetTokens: 64, overlapTokens: 8 }
      const drafts = yield* pool.run({ kind: "chunk", text: parsed.text, blocksJson: parsed.blocksJson, options }, 30_000)
      assert.deepStrictEqual(drafts, chunkParsed(expected, options))
      const chunks = drafts.map((draft) => ({ ordinal: draft.ordinal, text: draft.text, speaker: null, spokenAt: null }))
      const { extraction, chunksRead } = yield* pool.run({
        kind: "extract",
        input: { title: "Notes", documentDate: null, chunks },
        milliseconds: 30_000
      }, 60_000)
      assert.strictEqual(chunksRead, chunks.length)
      assert.isTrue(extraction.entities.some((entity) => entity.name === "Globex"))
    }))

  it.effect("a parse past ENGRAM_PARSE_MAX_CHARS is cut and reports its full length", () =>
    Effect.gen(function*() {
      const pool = yield* IngestThreads
      const { text, charsTotal } = yield* pool.run({ kind: "parse", format: "markdown", bytes, maxChars: 500 }, 30_000)
      assert.strictEqual(text.length, 500)
      assert.isAbove(charsTotal, 500)
    }))

  it.effect("a task past its time limit fails as a permanent timeout; its thread is replaced and the next task runs", () =>
    Effect.gen(function*() {
      const pool = yield* IngestThreads
      const big = new TextEncoder().encode(markdown.repeat(20))
      const error = yield* Effect.flip(pool.run({ kind: "parse", format: "markdown", bytes: big, maxChars: 1e9 }, 1))
      assert.strictEqual(error.reason, "timeout")
      assert.strictEqual(error.code, "parse_timeout")
      assert.isTrue(error.permanent)
      const { blockCount } = yield* pool.run({ kind: "parse", format: "markdown", bytes, maxChars: 1e9 }, 30_000)
      assert.isAbove(blockCount, 0)
    }))

  it.effect("content that will never parse fails as permanent with its reason", () =>
    Effect.gen(function*() {
      const pool = yield* IngestThreads
      const error = yield* Effect.flip(
        pool.run({ kind: "parse", format: "pdf", bytes: new TextEncoder().encode("%PDF-1.4 not really"), maxChars: 1e9 }, 30_000)
      )
      assert.strictEqual(error.reason, "failed")
      assert.strictEqual(error.code, "pdf_unreadable")
      assert.isTrue(error.permanent)
    }))
})
