import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { engines, freshSettings, withServer } from "../support/server.ts"
import { login, request, waitUntilReady } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import type { SqlClient } from "effect/sql"

/** Chunks of searchable versions and how many of them have a vector in the active model's table. */
const coverage = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const models = yield* sql<{ name: string; table_name: string; status: string }>`
      SELECT name, table_name, status FROM embedding_models ORDER BY created_at`
    const active = models.find((m) => m.status === "active")
    const [chunks] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version`
    if (active === undefined) return { models, active: undefined, chunks: chunks!.n, vectors: 0 }
    const [vectors] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(active.table_name)}`
    return { models, active: active.name, chunks: chunks!.n, vectors: vectors!.n }
  })

const waitFor = <A, E>(check: Effect.Effect<A, E>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600; i++) {
      const value = yield* check
      if (done(value)) return value
      yield* Effect.sleep("100 millis")
    }
    return yield* Effect.die(new Error("timed out waiting"))
  })

describe("embedding lifecycle", () => {
  for (const engine of engines) {
    it.live(`without a model the node serves lexically; once one is available every chunk is embedded (${engine})`, () =>
      Effect.gen(function*() {
        const base = yield* freshSettings(engine, { admins: ["Lexi"] })
        const noModel = { ...base, embedModelDir: Option.some("/nonexistent/model-dir") }
        const ids = yield* withServer(noModel, ({ url }) =>
          Effect.gen(function*() {
            const ready = yield* waitFor(
              request(url, "/api/v1/system/ready"),
              (reply) => reply.body.checks?.[2]?.detail?.startsWith("unavailable") === true
            )
            assert.strictEqual(ready.status, 200)
            assert.strictEqual(ready.body.status, "degraded")
            const capabilities = yield* request(url, "/api/v1/system/capabilities")
            assert.isNull(capabilities.body.embedding)
            assert.isFalse(capabilities.body.dense_retrieval.available)
            assert.match(capabilities.body.dense_retrieval.reason, /cannot load the embedding model/)
            const token = yield* login(url, "Lexi")
            const sourceId = yield* createSource(url, token)
            const accepted = yield* ingestText(url, token, sourceId, "doc", "# A\n\nAlpha.\n\n# B\n\nBeta.")
            const done = yield* waitForDocument(url, token, sourceId, accepted.body.id)
            assert.strictEqual(done.status, "ready")
            assert.strictEqual(done.chunk_count, 2)
            const reindex = yield* request(url, "/api/v1/system/reindex", { method: "POST", token })
            assert.strictEqual(reindex.status, 503)
            assert.strictEqual(reindex.body.error.code, "no_embedding_model")
            return { token, sourceId }
          }))
        yield* withServer(base, ({ url, sql }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const covered = yield* waitFor(coverage(sql), (c) => c.active !== undefined && c.vectors === c.chunks)
            assert.strictEqual(covered.chunks, 2)
            assert.strictEqual(covered.active, "tiny-random-bert:q8")
            const added = yield* ingestText(url, ids.token, ids.sourceId, "more", "Gamma.")
            yield* waitForDocument(url, ids.token, ids.sourceId, added.body.id)
            const after = yield* coverage(sql)
            assert.deepStrictEqual([after.chunks, after.vectors], [3, 3])
          }))
      }).pipe(Effect.scoped))

    it.live(`a different model never mixes vectors; the reindex job switches atomically (${engine})`, () =>
      Effect.gen(function*() {
        const base = yield* freshSettings(engine, { admins: ["Switcher"] })
        const token = yield* withServer(base, ({ url }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const token = yield* login(url, "Switcher")
            const sourceId = yield* createSource(url, token)
            for (const text of ["One.", "Two.", "Three."]) {
              const accepted = yield* ingestText(url, token, sourceId, text, text)
              yield* waitForDocument(url, token, sourceId, accepted.body.id)
            }
            return token
          }))
        yield* withServer({ ...base, embedDtype: "fp32" }, ({ url, sql }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const capabilities = yield* request(url, "/api/v1/system/capabilities")
            assert.strictEqual(capabilities.body.embedding.model, "tiny-random-bert:fp32")
            assert.isFalse(capabilities.body.dense_retrieval.available)
            assert.match(capabilities.body.dense_retrieval.reason, /run POST \/api\/v1\/system\/reindex/)
            const before = yield* coverage(sql)
            assert.strictEqual(before.active, "tiny-random-bert:q8", "the old index stays active")
            assert.strictEqual(before.vectors, 3)
            const job = yield* request(url, "/api/v1/system/reindex", { method: "POST", token })
            assert.strictEqual(job.status, 202)
            assert.strictEqual(job.body.kind, "reindex")
            const finished = yield* waitFor(
              request(url, `/api/v1/jobs/${job.body.id}`, { token }),
              (reply) => reply.body.status === "succeeded" || reply.body.status === "failed"
            )
            assert.strictEqual(finished.body.status, "succeeded")
            assert.deepStrictEqual(finished.body.progress, { done: 3, total: 3 })
            const after = yield* coverage(sql)
            assert.strictEqual(after.active, "tiny-random-bert:fp32")
            assert.strictEqual(after.vectors, 3)
            assert.deepStrictEqual(after.models.map((m) => m.status).sort(), ["active", "retired"])
            const tables = yield* sql<{ n: number }>`
              SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'chunk_vectors_%'`
            assert.strictEqual(tables[0]!.n, 1, "the retired model's table is dropped")
            const dense = yield* request(url, "/api/v1/system/capabilities")
            assert.isTrue(dense.body.dense_retrieval.available)
          }))
      }).pipe(Effect.scoped))
  }
})
