import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request, waitUntilReady } from "../support/http.ts"

for (const engine of engines) {
  layer(freshServer(engine))(`system endpoints (${engine})`, (it) => {
    it.effect("health, ready and capabilities answer without a token", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const health = yield* request(url, "/api/v1/system/health")
        assert.strictEqual(health.status, 200)
        assert.deepStrictEqual(health.body, { status: "ok" })
        const ready = yield* waitUntilReady(url)
        assert.deepStrictEqual(ready.checks, [
          { name: "database", ready: true, detail: "ok" },
          { name: "workers", ready: true, detail: "2 running" },
          { name: "embedder", ready: true, detail: "tiny-random-bert:q8 (32 dimensions)" }
        ])
        // The vector index of a freshly loaded model is created just after the model is ready.
        let capabilities = yield* request(url, "/api/v1/system/capabilities")
        for (let i = 0; i < 50 && !capabilities.body.dense_retrieval.available; i++) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
          capabilities = yield* request(url, "/api/v1/system/capabilities")
        }
        assert.strictEqual(capabilities.status, 200)
        assert.strictEqual(capabilities.body.engine.name, "engram")
        assert.match(capabilities.body.engine.version, /^\d+\.\d+\.\d+/)
        assert.strictEqual(capabilities.body.storage, engine)
        assert.deepStrictEqual(capabilities.body.auth, { local_login: true, registration: false })
        assert.deepStrictEqual(capabilities.body.connectors, ["file_upload", "web"])
        assert.deepStrictEqual(capabilities.body.embedding, { model: "tiny-random-bert:q8", dimension: 32 })
        assert.deepStrictEqual(capabilities.body.dense_retrieval, { available: true, reason: null })
        assert.deepStrictEqual(capabilities.body.llm, { provider: "extractive", model: null })
        assert.isFalse(capabilities.body.rerank.available)
      }))

    it.effect("model settings: empty by default, validated, replaced by PUT, scoped to the user", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const alice = yield* login(url, "Alice")
        const bob = yield* login(url, "Bob")
        assert.deepStrictEqual((yield* request(url, "/api/v1/system/model-settings", { token: alice })).body, {})

        const saved = { llm_model: "llama3.1:8b", temperature: 0.2, max_tokens: 512 }
        const put = yield* request(url, "/api/v1/system/model-settings", { method: "PUT", token: alice, json: saved })
        assert.strictEqual(put.status, 200)
        assert.deepStrictEqual(put.body, saved)
        assert.deepStrictEqual((yield* request(url, "/api/v1/system/model-settings", { token: alice })).body, saved)
        assert.deepStrictEqual((yield* request(url, "/api/v1/system/model-settings", { token: bob })).body, {})

        const replaced = yield* request(url, "/api/v1/system/model-settings", {
          method: "PUT",
          token: alice,
          json: { temperature: 1 }
        })
        assert.deepStrictEqual(replaced.body, { temperature: 1 })

        const invalid = yield* request(url, "/api/v1/system/model-settings", {
          method: "PUT",
          token: alice,
          json: { temperature: 5, max_tokens: 1.5, colour: "red" }
        })
        assert.strictEqual(invalid.status, 422)
        const paths = invalid.body.error.issues.map((issue: { path: string }) => issue.path).sort()
        assert.deepStrictEqual(paths, ["body.colour", "body.max_tokens", "body.temperature"])
        assert.deepStrictEqual((yield* request(url, "/api/v1/system/model-settings", { token: alice })).body, {
          temperature: 1
        })
      }))

    it.effect("preferences: validated and persisted per user", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Carol")
        const prefs = { theme: "dark", language: "pt-BR", timezone: "Europe/Lisbon", default_top_k: 5 }
        const put = yield* request(url, "/api/v1/system/preferences", { method: "PUT", token, json: prefs })
        assert.strictEqual(put.status, 200)
        assert.deepStrictEqual((yield* request(url, "/api/v1/system/preferences", { token })).body, prefs)
        const invalid = yield* request(url, "/api/v1/system/preferences", {
          method: "PUT",
          token,
          json: { timezone: "Mars/Olympus", theme: "neon" }
        })
        assert.strictEqual(invalid.status, 422)
        assert.strictEqual(invalid.body.error.issues.length, 2)
        assert.deepStrictEqual((yield* request(url, "/api/v1/system/preferences", { token })).body, prefs)
      }))

    it.effect("settings need a token", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (const path of ["/api/v1/system/model-settings", "/api/v1/system/preferences"]) {
          assert.strictEqual((yield* request(url, path)).status, 401)
        }
      }))
  })
}

layer(freshServer("pglite", { admins: ["Root Admin", "ops"] }))("instance-wide operations", (it) => {
  it.effect("reindex is for administrators (ENGRAM_ADMINS, names without case): 403 admin_required otherwise", () =>
    Effect.gen(function*() {
      const { url, sql } = yield* TestServer
      yield* waitUntilReady(url)
      const someone = yield* login(url, "Someone")
      const refused = yield* request(url, "/api/v1/system/reindex", { method: "POST", token: someone })
      assert.strictEqual(refused.status, 403)
      assert.strictEqual(refused.body.error.code, "admin_required")
      assert.include(refused.body.error.message, "ENGRAM_ADMINS")
      const queued = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM jobs WHERE kind = 'reindex'`
      assert.strictEqual(queued[0]!.n, 0, "a refused reindex queues nothing")

      const admin = yield* login(url, "root admin")
      const accepted = yield* request(url, "/api/v1/system/reindex", { method: "POST", token: admin })
      assert.strictEqual(accepted.status, 202)
      assert.strictEqual(accepted.body.kind, "reindex")

      const openapi = yield* request(url, "/openapi.json")
      const responses = openapi.body.paths["/api/v1/system/reindex"].post.responses
      assert.property(responses, "403")
      assert.property(responses, "202")
    }))
})
