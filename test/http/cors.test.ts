import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { request } from "../support/http.ts"

const preflight = (url: string, origin: string) =>
  request(url, "/api/v1/auth/login", {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type,authorization"
    }
  })

for (const engine of engines) {
  layer(freshServer(engine, { corsOrigins: ["https://app.example.com", "http://localhost:5173"] }))(
    `CORS with explicit origins (${engine})`,
    (it) => {
      it.effect("a listed origin's preflight is answered with credentials allowed", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const reply = yield* preflight(url, "https://app.example.com")
          assert.strictEqual(reply.status, 204)
          assert.strictEqual(reply.headers.get("access-control-allow-origin"), "https://app.example.com")
          assert.strictEqual(reply.headers.get("access-control-allow-credentials"), "true")
          assert.match(reply.headers.get("access-control-allow-methods") ?? "", /POST/)
          assert.match(reply.headers.get("access-control-allow-headers") ?? "", /authorization/)
        }))

      it.effect("an unlisted origin gets no CORS grant", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const reply = yield* preflight(url, "https://evil.example.net")
          assert.isNull(reply.headers.get("access-control-allow-origin"))
          const simple = yield* request(url, "/api/v1/system/health", { headers: { origin: "https://evil.example.net" } })
          assert.isNull(simple.headers.get("access-control-allow-origin"))
        }))

      it.effect("actual responses to a listed origin carry the grant and expose x-request-id", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const reply = yield* request(url, "/api/v1/system/health", { headers: { origin: "http://localhost:5173" } })
          assert.strictEqual(reply.headers.get("access-control-allow-origin"), "http://localhost:5173")
          assert.match(reply.headers.get("access-control-expose-headers") ?? "", /x-request-id/)
        }))
    }
  )

  layer(freshServer(engine, { corsOrigins: ["*"] }))(`CORS with * (${engine})`, (it) => {
    it.effect("any origin, never with credentials", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* preflight(url, "https://anywhere.example.org")
        assert.strictEqual(reply.status, 204)
        assert.strictEqual(reply.headers.get("access-control-allow-origin"), "*")
        assert.isNull(reply.headers.get("access-control-allow-credentials"))
      }))
  })

  layer(freshServer(engine))(`CORS not configured (${engine})`, (it) => {
    it.effect("no CORS headers at all", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/system/health", { headers: { origin: "https://app.example.com" } })
        assert.isNull(reply.headers.get("access-control-allow-origin"))
        const options = yield* preflight(url, "https://app.example.com")
        assert.isNull(options.headers.get("access-control-allow-origin"))
      }))
  })
}
