import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { engines, freshSettings, withServer } from "../support/server.ts"
import { login, request, waitUntilReady } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"

describe("search visibility", () => {
  for (const engine of engines) {
    it.live(`queued, paused and reprocessing documents are not returned until ready again (${engine})`, () =>
      Effect.gen(function*() {
        const settings = yield* freshSettings(engine)
        const seeded = yield* withServer(settings, ({ url }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const token = yield* login(url, "Viz")
            const sourceId = yield* createSource(url, token)
            const kept = yield* ingestText(url, token, sourceId, "kept", "Herons stalk fish in shallow water.")
            const moving = yield* ingestText(url, token, sourceId, "moving", "Herons nest in tall trees in colonies.")
            yield* waitForDocument(url, token, sourceId, kept.body.id)
            yield* waitForDocument(url, token, sourceId, moving.body.id)
            const both = yield* request(url, "/api/v1/search", { token, json: { query: "herons", strategy: "lexical" } })
            assert.strictEqual(both.body.results.length, 2)
            return { token, sourceId, kept: kept.body.id, moving: moving.body.id }
          }))
        const { token, sourceId } = seeded
        const found = (url: string) =>
          Effect.gen(function*() {
            const ids = new Set<string>()
            for (const strategy of ["lexical", "vector", "multi"]) {
              const reply = yield* request(url, "/api/v1/search", { token, json: { query: "herons nest", strategy } })
              assert.strictEqual(reply.status, 200, reply.text)
              for (const result of reply.body.results) ids.add(result.document_id)
            }
            return ids
          })
        yield* withServer({ ...settings, workerConcurrency: 0 }, ({ url }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const base = `/api/v1/sources/${sourceId}/documents/${seeded.moving}`
            const queued = yield* request(url, `${base}/reprocess`, { method: "POST", token })
            assert.strictEqual(queued.body.status, "queued")
            let ids = yield* found(url)
            assert.isFalse(ids.has(seeded.moving), "a queued reprocess takes the document out of search")
            assert.isTrue(ids.has(seeded.kept))
            yield* request(url, `${base}/pause`, { method: "POST", token })
            ids = yield* found(url)
            assert.isFalse(ids.has(seeded.moving), "a paused document is not returned")
          }))
        yield* withServer(settings, ({ url }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            yield* request(url, `/api/v1/sources/${sourceId}/documents/${seeded.moving}/resume`, { method: "POST", token })
            yield* waitForDocument(url, token, sourceId, seeded.moving, (d) => d.status === "ready")
            const ids = yield* found(url)
            assert.isTrue(ids.has(seeded.moving), "ready again, it is returned again")
          }))
      }).pipe(Effect.scoped))

    it.live(`BM25 looks past any number of better-scoring chunks search cannot return (${engine})`, () =>
      Effect.gen(function*() {
        // Small chunks: the loud document becomes well over a hundred chunks, each scoring above the quiet one.
        const settings = { ...(yield* freshSettings(engine)), chunkTokens: 32, chunkOverlapTokens: 0 }
        const search = (url: string, token: string, topK: number) =>
          request(url, "/api/v1/search", { token, json: { query: "herons", strategy: "lexical", top_k: topK } })
        const seeded = yield* withServer(settings, ({ url }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const token = yield* login(url, "Loud")
            const sourceId = yield* createSource(url, token)
            const loudText = Array.from({ length: 600 }, (_, i) => `Herons herons herons, part ${i}.`).join("\n\n")
            const loud = yield* ingestText(url, token, sourceId, "loud", loudText)
            const quiet = yield* ingestText(url, token, sourceId, "quiet",
              "Once a heron was seen near the long river bank, among many other birds that were resting there.")
            const ready = yield* waitForDocument(url, token, sourceId, loud.body.id)
            yield* waitForDocument(url, token, sourceId, quiet.body.id)
            assert.isAbove(ready.chunk_count, 120)
            const before = yield* search(url, token, 50)
            assert.isTrue(before.body.results.every((r: { document_id: string }) => r.document_id === loud.body.id))
            return { token, sourceId, loud: loud.body.id as string, quiet: quiet.body.id as string }
          }))
        // No workers: a reprocess stays queued, which takes every chunk of the loud document out of search.
        yield* withServer({ ...settings, workerConcurrency: 0 }, ({ url }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const { token, sourceId } = seeded
            const queued = yield* request(url, `/api/v1/sources/${sourceId}/documents/${seeded.loud}/reprocess`, {
              method: "POST",
              token
            })
            assert.strictEqual(queued.body.status, "queued", queued.text)
            const after = yield* search(url, token, 1)
            assert.deepStrictEqual(after.body.results.map((r: { document_id: string }) => r.document_id), [seeded.quiet])
          }))
      }).pipe(Effect.scoped))
  }
})
