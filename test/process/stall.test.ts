import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fixtureModelDir } from "../support/datasets.ts"
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

describe("no stage stalls the service", () => {
  it.live("while a 2 MB upload is parsed, chunked, embedded and indexed, every health probe is answered within 2 s", () =>
    Effect.gen(function*() {
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_LOG_LEVEL: "info",
        ENGRAM_EMBED_MODEL_DIR: fixtureModelDir,
        // Larger chunks and no rule extraction keep the run short; parsing, chunking and indexing see every byte.
        ENGRAM_CHUNK_TOKENS: "1024",
        ENGRAM_EXTRACTOR: "off"
      })
      const url = yield* listeningUrl(engram)
      const token = yield* login(url, "Prober")
      yield* waitUntilReady(url)
      const sourceId = yield* createSource(url, token)
      const accepted = yield* upload(url, token, sourceId, [
        { name: "notes.md", bytes: new TextEncoder().encode(largeMarkdown(2 * 1024 * 1024)) }
      ])
      assert.strictEqual(accepted.status, 202, accepted.text)
      const ready = Effect.runPromise(waitForDocument(url, token, sourceId, accepted.body.documents[0].id))
      const latencies = yield* Effect.promise(() => probeHealth(url, ready))
      const document = yield* Effect.promise(() => ready)
      assert.strictEqual(document.status, "ready")
      assert.isAtLeast(latencies.length, 10)
      const slowest = Math.max(...latencies)
      assert.isBelow(slowest, 2000, `slowest health answer ${slowest.toFixed(0)} ms of ${latencies.length} probes`)
    }), { timeout: 240_000 })
})
