import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { sessionEfSearch } from "../../src/adapters/Db.ts"
import { Embedder } from "../../src/adapters/Embedder.ts"
import { VectorIndex } from "../../src/stores/VectorIndex.ts"
import { login } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

for (const engine of engines) {
  // Small chunks: a document of a few hundred words becomes many vectors.
  layer(freshServer(engine, { chunkTokens: 16, chunkOverlapTokens: 0 }))(`vector search sessions (${engine})`, (it) => {
    it.effect("every session has HNSW's iterative scan on and the ef_search most lists need", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const [scan] = yield* sql<{ value: string }>`SELECT current_setting('hnsw.iterative_scan') AS value`
        const [ef] = yield* sql<{ value: string }>`SELECT current_setting('hnsw.ef_search') AS value`
        assert.strictEqual(scan!.value, "relaxed_order")
        assert.strictEqual(ef!.value, String(sessionEfSearch))
      }))

    it.effect("lists of a source few vectors belong to come back whole, shorter and longer than ef_search / 4", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Vectors")
        const crowd = yield* createSource(url, token)
        const few = yield* createSource(url, token)
        const sentences = (topic: string, n: number) =>
          Array.from({ length: n }, (_, i) => `The ${topic} report number ${i} lists ${topic} figures.`).join("\n\n")
        const big = yield* ingestText(url, token, crowd, "crowd", sentences("harbour", 400))
        const small = yield* ingestText(url, token, few, "few", sentences("orchard", 80))
        yield* waitForDocument(url, token, crowd, big.body.id)
        const ready = yield* waitForDocument(url, token, few, small.body.id)
        assert.isAtLeast(ready.chunk_count, 70)
        const vectors = yield* VectorIndex
        const model = Option.getOrThrow(yield* vectors.active)
        const [embedding] = yield* (yield* Embedder).embed(["harbour report figures"], "query").pipe(Effect.orDie)
        const [{ n }] = yield* (yield* TestServer).sql<{ n: number }>`
          SELECT count(*)::int AS n FROM chunks WHERE source_id = ${few}`
        for (const limit of [10, sessionEfSearch / 4, 70]) {
          const nearest = yield* vectors.nearest(model, embedding!, [few], limit)
          assert.strictEqual(nearest.length, Math.min(limit, n), `limit ${limit}`)
          assert.strictEqual(new Set(nearest.map((hit) => hit.id)).size, nearest.length)
          const scores = nearest.map((hit) => hit.score)
          assert.deepStrictEqual(scores, [...scores].sort((a, b) => b - a))
        }
      }))
  })
}
