import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { engines, freshSettings, withServer } from "../support/server.ts"
import { embeddingServer } from "../support/embeddingServer.ts"
import { login, request, waitUntilReady } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"

describe("OpenAI-compatible embeddings provider", () => {
  for (const engine of engines) {
    it.live(`documents are embedded through /v1/embeddings with the API key (${engine})`, () =>
      Effect.gen(function*() {
        const provider = yield* embeddingServer
        const settings = {
          ...(yield* freshSettings(engine)),
          embedBaseUrl: Option.some(provider.url),
          embedApiKey: Option.some(Redacted.make("sk-test-key")),
          embedModel: "tiny-embed"
        }
        yield* withServer(settings, ({ url, sql }) =>
          Effect.gen(function*() {
            yield* waitUntilReady(url)
            const capabilities = yield* request(url, "/api/v1/system/capabilities")
            assert.deepStrictEqual(capabilities.body.embedding, { model: "tiny-embed@openai", dimension: 32 })
            const token = yield* login(url, "Remote")
            const sourceId = yield* createSource(url, token)
            const accepted = yield* ingestText(url, token, sourceId, "doc", "# A\n\nAlpha.\n\n# B\n\nBeta.")
            assert.strictEqual((yield* waitForDocument(url, token, sourceId, accepted.body.id)).status, "ready")
            const [model] = yield* sql<{ table_name: string; name: string }>`
              SELECT table_name, name FROM embedding_models WHERE status = 'active'`
            assert.strictEqual(model!.name, "tiny-embed@openai")
            const [vectors] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(model!.table_name)}`
            assert.strictEqual(vectors!.n, 2)
            assert.isTrue(provider.requests.length >= 2)
            assert.isTrue(provider.requests.every((r) => r.authorization === "Bearer sk-test-key" && r.model === "tiny-embed"))
          }))
      }).pipe(Effect.scoped))
  }

  it.live("a provider failing for a while is retried with backoff; one that keeps failing fails the document", () =>
    Effect.gen(function*() {
      const provider = yield* embeddingServer
      const settings = { ...(yield* freshSettings("pglite")), embedBaseUrl: Option.some(provider.url) }
      yield* withServer(settings, ({ url }) =>
        Effect.gen(function*() {
          yield* waitUntilReady(url)
          const token = yield* login(url, "Patient")
          const sourceId = yield* createSource(url, token)
          provider.failures.remaining = 4
          const recovered = yield* ingestText(url, token, sourceId, "one", "Eventually embedded.")
          const done = yield* waitForDocument(url, token, sourceId, recovered.body.id)
          assert.strictEqual(done.status, "ready")
          const job = yield* request(url, `/api/v1/jobs/${done.job_id}`, { token })
          assert.strictEqual(job.body.status, "succeeded")
          assert.strictEqual(job.body.attempts, 1, "attempts count failures: the first attempt failed, the retry succeeded")

          provider.failures.remaining = 1000
          const doomed = yield* ingestText(url, token, sourceId, "two", "Never embedded.")
          const failed = yield* waitForDocument(url, token, sourceId, doomed.body.id)
          assert.strictEqual(failed.status, "failed")
          assert.strictEqual(failed.error.code, "embedding_failed")
          assert.strictEqual(failed.error.stage, "embed")
          assert.match(failed.error.message, /gave up after 3 attempts/)
          const failedJob = yield* request(url, `/api/v1/jobs/${failed.job_id}`, { token })
          assert.deepStrictEqual([failedJob.body.status, failedJob.body.attempts], ["failed", 3])
        }))
    }).pipe(Effect.scoped))

  it.live("an unreachable provider leaves the node serving, degraded, with the reason", () =>
    Effect.gen(function*() {
      const settings = { ...(yield* freshSettings("pglite")), embedBaseUrl: Option.some("http://127.0.0.1:9/v1") }
      yield* withServer(settings, ({ url }) =>
        Effect.gen(function*() {
          let ready = yield* request(url, "/api/v1/system/ready")
          for (let i = 0; i < 300 && !ready.body.checks[2].detail.startsWith("unavailable"); i++) {
            yield* Effect.sleep("100 millis")
            ready = yield* request(url, "/api/v1/system/ready")
          }
          assert.strictEqual(ready.status, 200)
          assert.strictEqual(ready.body.status, "degraded")
          assert.match(ready.body.checks[2].detail, /unavailable: the embedding endpoint failed/)
        }))
    }).pipe(Effect.scoped))
})
