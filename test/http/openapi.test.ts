import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Api } from "../../src/api/Api.ts"
import { engramVersion } from "../../src/version.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { request } from "../support/http.ts"

interface Operation {
  readonly summary?: string
  readonly requestBody?: unknown
  readonly responses: Record<string, unknown>
  readonly security?: ReadonlyArray<Record<string, unknown>>
}

const declaredEndpoints = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    method: endpoint.method.toLowerCase(),
    path: endpoint.path.replace(/:(\w+)/g, "{$1}")
  }))
)

const publicPaths = new Set([
  "/api/v1/auth/login",
  "/api/v1/auth/register",
  "/api/v1/system/health",
  "/api/v1/system/ready",
  "/api/v1/system/capabilities"
])

for (const engine of engines) {
  layer(freshServer(engine))(`API documentation (${engine})`, (it) => {
    it.effect("/openapi.json is OpenAPI 3.1 and documents every endpoint with its errors", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/openapi.json")
        assert.strictEqual(reply.status, 200)
        assert.match(reply.body.openapi, /^3\.1\./)
        assert.strictEqual(reply.body.info.version, engramVersion)
        assert.isAbove(declaredEndpoints.length, 9)
        for (const { method, path } of declaredEndpoints) {
          const operation: Operation | undefined = reply.body.paths[path]?.[method]
          assert.isDefined(operation, `${method} ${path}`)
          assert.isString(operation!.summary, `${method} ${path} has a summary`)
          assert.isTrue(
            Object.keys(operation!.responses).some((status) => /^2\d\d$/.test(status)),
            `${method} ${path} documents its success`
          )
          for (const status of ["400", "422", "500"]) {
            assert.property(operation!.responses, status, `${method} ${path} documents ${status}`)
          }
          if (operation!.requestBody !== undefined) {
            assert.property(operation!.responses, "413", `${method} ${path} documents 413`)
            assert.property(operation!.responses, "415", `${method} ${path} documents 415`)
          }
          if (publicPaths.has(path)) {
            assert.deepStrictEqual(operation!.security ?? [], [], `${method} ${path} is public`)
          } else {
            assert.deepStrictEqual(operation!.security, [{ bearer: [] }], `${method} ${path} needs a token`)
            assert.property(operation!.responses, "401", `${method} ${path} documents 401`)
          }
        }
        assert.deepStrictEqual(reply.body.components.securitySchemes.bearer, { type: "http", scheme: "Bearer" })
      }))

    it.effect("/docs serves the interactive reference with its script inline, and / leads there", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const docs = yield* request(url, "/docs")
        assert.strictEqual(docs.status, 200)
        assert.match(docs.headers.get("content-type") ?? "", /text\/html/)
        assert.include(docs.text, "Scalar.createApiReference")
        assert.notMatch(docs.text, /<script[^>]+src=/, "the docs page loads nothing from elsewhere")
        const root = yield* Effect.promise(() => fetch(url + "/", { redirect: "manual" }))
        assert.strictEqual(root.status, 302)
        assert.strictEqual(root.headers.get("location"), "/docs")
      }))
  })
}
