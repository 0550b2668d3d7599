import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Path from "node:path"
import { buildEncoderModel } from "../../scripts/lib/encoder-model.ts"
import { fixtureModelDir, sharedDir } from "../support/datasets.ts"
import { login, waitUntilReady } from "../support/http.ts"
import { createSource, upload, waitForDocument } from "../support/ingest.ts"
import { listeningUrl, spawnEngram } from "../support/process.ts"
import { scratchDir } from "../support/server.ts"

const words = ["river", "engine", "ledger", "orbit", "harvest", "signal", "canvas", "meadow", "quartz", "lantern", "harbor", "willow"]

/** About `bytes` of Markdown: sections of plain prose. */
const largeMarkdown = (bytes: number) => {
  const parts: Array<string> = []
  let size = 0
  for (let section = 0; size < bytes; section++) {
    const text = `## Section ${section}\n\n` + Array.from({ length: 120 }, (_, i) =>
      `${words[(section * 7 + i) % words.length]} ${words[(section + i * 3) % words.length]} number ${section * 1000 + i}.`
    ).join(" ")
    parts.push(text)
    size += text.length + 2
  }
  return parts.join("\n\n")
}

/** Sends GET /system/health one after another until `done` resolves; the latency of each, or Infinity when unanswered. */
const probeHealth = async (url: string, done: Promise<unknown>) => {
  const latencies: Array<number> = []
  let finished = false
  void done.finally(() => (finished = true))
  while (!finished) {
    const started = performance.now()
    const answered = await fetch(`${url}/api/v1/system/health`, { signal: AbortSignal.timeout(30_000) }).then(
      (response) => response.ok,
      () => false
    )
    latencies.push(answered ? performance.now() - started : Number.POSITIVE_INFINITY)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return latencies
}

/**
 * A service with `env` (and the data directory) ingests one Markdown file of about `bytes` while health is probed;
 * every probe must be answered within 2 s. Answers the document as the API shows it once ready.
 */
const ingestWhileProbing = (dataDir: string, env: Record<string, string>, bytes: number) =>
  Effect.gen(function*() {
    const engram = yield* spawnEngram({
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_HOST: "127.0.0.1",
      ENGRAM_PORT: "0",
      ENGRAM_LOG_LEVEL: "info",
      ...env
    })
    const url = yield* listeningUrl(engram)
    const token = yield* login(url, "Prober")
    yield* waitUntilReady(url)
    const sourceId = yield* createSource(url, token)
    const accepted = yield* upload(url, token, sourceId, [
      { name: "notes.md", bytes: new TextEncoder().encode(largeMarkdown(bytes)) }
    ])
    assert.strictEqual(accepted.status, 202, accepted.text)
    // The tests' own timeouts bound the wait: a slow machine embeds a real model's batches for minutes.
    const ready = Effect.runPromise(waitForDocument(url, token, sourceId, accepted.body.documents[0].id, undefined, 200_000))
    const latencies = yield* Effect.promise(() => probeHealth(url, ready))
    const document = yield* Effect.promise(() => ready)
    assert.strictEqual(document.status, "ready")
    assert.isAtLeast(latencies.length, 10)
    const slowest = Math.max(...latencies)
    assert.isBelow(slowest, 2000, `slowest health answer ${slowest.toFixed(0)} ms of ${latencies.length} probes`)
    return document
  })

describe("no stage stalls the service", () => {
  it.live("while a 2 MB upload is parsed, chunked, embedded and indexed, every health probe is answered within 2 s", () =>
    Effect.gen(function*() {
      yield* ingestWhileProbing(yield* scratchDir, {
        ENGRAM_EMBED_MODEL_DIR: fixtureModelDir,
        // Larger chunks and no rule extraction keep the run short; parsing, chunking and indexing see every byte.
        ENGRAM_CHUNK_TOKENS: "1024",
        ENGRAM_EXTRACTOR: "off"
      }, 2 * 1024 * 1024)
    }), { timeout: 240_000 })

  it.live("while an encoder of a real model's size embeds 512-token chunks, every health probe is answered within 2 s", () =>
    Effect.gen(function*() {
      // bge-small's shape with random weights (scripts/lib/encoder-model.ts): a batch of 32 such chunks takes
      // seconds on a small machine, all of it inside onnxruntime, which holds the thread that calls it.
      const dir = yield* scratchDir
      const modelDir = Path.join(dir, "bge-small-shape")
      buildEncoderModel(Path.join(sharedDir, "models/_tokenizers/bge-small-en-v1.5"), modelDir)
      const document = yield* ingestWhileProbing(Path.join(dir, "data"), {
        ENGRAM_EMBED_MODEL_DIR: modelDir,
        ENGRAM_EMBED_DTYPE: "fp32",
        ENGRAM_EMBED_BATCH_SIZE: "32",
        ENGRAM_CHUNK_TOKENS: "512",
        ENGRAM_EXTRACTOR: "off"
      }, 100 * 1024)
      assert.isAtLeast(document.chunk_count, 32)
    }), { timeout: 240_000 })
})
