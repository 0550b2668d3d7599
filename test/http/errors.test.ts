import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Os from "node:os"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"

const internalMarkers = [/select/i, /relation/i, /user_settings/, /sql/i, /\bat .*\(/, /\/work\//, /node_modules/]

for (const engine of engines) {
  layer(freshServer(engine))(`error model (${engine})`, (it) => {
    it.effect("every response carries x-request-id; a sane incoming one is kept and echoed in errors", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const ok = yield* request(url, "/api/v1/system/health")
        assert.match(ok.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/)
        const kept = yield* request(url, "/api/v1/auth/me", { headers: { "x-request-id": "trace-42" } })
        assert.strictEqual(kept.headers.get("x-request-id"), "trace-42")
        assert.strictEqual(kept.body.error.request_id, "trace-42")
        const replaced = yield* request(url, "/api/v1/system/health", { headers: { "x-request-id": "bad id<script>" } })
        assert.notStrictEqual(replaced.headers.get("x-request-id"), "bad id<script>")
      }))

    it.effect("unknown routes are 404 in the error envelope", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/nothing-here")
        assert.strictEqual(reply.status, 404)
        assert.strictEqual(reply.body.error.code, "not_found")
        assert.strictEqual(reply.body.error.request_id, reply.headers.get("x-request-id"))
      }))

    it.effect("malformed JSON and wrong types are 422 with each issue", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const broken = yield* request(url, "/api/v1/auth/login", {
          body: "{\"name\": ",
          headers: { "content-type": "application/json" }
        })
        assert.strictEqual(broken.status, 422)
        assert.deepStrictEqual(broken.body.error.issues, [{ path: "body", message: "Expected a valid JSON body" }])
        const wrong = yield* request(url, "/api/v1/auth/login", { json: { name: 42, extra: true } })
        assert.strictEqual(wrong.status, 422)
        assert.deepStrictEqual(
          wrong.body.error.issues.map((issue: { path: string }) => issue.path).sort(),
          ["body.extra", "body.name"]
        )
        const missing = yield* request(url, "/api/v1/auth/login", { json: {} })
        assert.deepStrictEqual(missing.body.error.issues, [{ path: "body.name", message: "Missing key" }])
      }))

    it.effect("a body that is not JSON is 415", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/auth/login", {
          body: "name=alice",
          headers: { "content-type": "application/x-www-form-urlencoded" }
        })
        assert.strictEqual(reply.status, 415)
        assert.strictEqual(reply.body.error.code, "unsupported_media_type")
      }))

    it.effect("bodies over the limit are 413, whether declared or streamed", () =>
      Effect.gen(function*() {
        const { url, settings } = yield* TestServer
        const big = JSON.stringify({ name: "x".repeat(settings.maxBodyBytes) })
        const declared = yield* request(url, "/api/v1/auth/login", {
          body: big,
          headers: { "content-type": "application/json" }
        })
        assert.strictEqual(declared.status, 413)
        assert.strictEqual(declared.body.error.code, "payload_too_large")
        const streamed = yield* Effect.promise(async () => {
          const bytes = new TextEncoder().encode(big)
          const body = new ReadableStream({
            start(controller) {
              for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.subarray(i, i + 8192))
              controller.close()
            }
          })
          const response = await fetch(`${url}/api/v1/auth/login`, {
            method: "POST",
            body,
            headers: { "content-type": "application/json" },
            duplex: "half"
          } as RequestInit)
          return { status: response.status, body: (await response.json()) as { error: { code: string } } }
        })
        assert.strictEqual(streamed.status, 413)
        assert.strictEqual(streamed.body.error.code, "payload_too_large")
      }))

    it.effect("a database failure is a generic 500: no SQL, table, stack, path or host in the body", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const token = yield* login(url, "Dora")
        yield* sql`DROP TABLE user_settings`
        const reply = yield* request(url, "/api/v1/system/preferences", { token })
        assert.strictEqual(reply.status, 500)
        assert.deepStrictEqual(Object.keys(reply.body.error).sort(), ["code", "message", "request_id"])
        assert.strictEqual(reply.body.error.code, "internal_error")
        assert.strictEqual(reply.body.error.message, "Internal server error")
        assert.strictEqual(reply.body.error.request_id, reply.headers.get("x-request-id"))
        for (const marker of [...internalMarkers, new RegExp(Os.hostname())]) {
          assert.notMatch(reply.text, marker)
        }
      }))
  })
}
