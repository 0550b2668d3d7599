import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"

type JsonSchema = { readonly [key: string]: any }

/** Every schema reachable from `schema`, following $refs into the document's components. */
const reachable = (document: JsonSchema, schema: unknown, seen = new Set<unknown>()): Array<JsonSchema> => {
  if (typeof schema !== "object" || schema === null || seen.has(schema)) return []
  seen.add(schema)
  const node = schema as JsonSchema
  const target = typeof node.$ref === "string"
    ? node.$ref.replace(/^#\//, "").split("/").reduce((at: JsonSchema, key: string) => at?.[key], document)
    : undefined
  return [node, ...(target === undefined ? [] : reachable(document, target, seen)), ...Object.values(node).flatMap((child) => reachable(document, child, seen))]
}

/** The schemas of every request body, path and query parameter in the OpenAPI document. */
const requestSchemas = (document: JsonSchema) =>
  Object.values(document.paths as Record<string, Record<string, JsonSchema>>).flatMap((operations) =>
    Object.values(operations).flatMap((operation) => [
      ...Object.values(operation.requestBody?.content ?? {}).map((media: any) => media.schema),
      ...(operation.parameters ?? []).map((parameter: any) => parameter.schema)
    ])
  ).flatMap((schema) => reachable(document, schema))

layer(freshServer("pglite"))("input bounds and the published contract", (it) => {
  it.effect("query lengths count characters: 2,500 emoji are accepted, 4,001 characters are not", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const token = yield* login(url, "bounds")
      const emoji = yield* request(url, "/api/v1/search", { token, json: { query: "😀".repeat(2500) } })
      assert.strictEqual(emoji.status, 200, emoji.text)
      const atLimit = yield* request(url, "/api/v1/search", { token, json: { query: "😀".repeat(4000) } })
      assert.strictEqual(atLimit.status, 200, atLimit.text)
      const over = yield* request(url, "/api/v1/search", { token, json: { query: "😀".repeat(4001) } })
      assert.strictEqual(over.status, 422)
      assert.deepStrictEqual(over.body.error.issues, [{ path: "body.query", message: "must be 1 to 4000 characters" }])
      const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "🦊".repeat(200) } })
      assert.strictEqual(agent.status, 201, agent.text)
      const longName = yield* request(url, "/api/v1/agents", { token, json: { name: "🦊".repeat(201) } })
      assert.strictEqual(longName.status, 422)
    }))

  it.effect("OpenAPI publishes minLength and maxLength of bounded strings, and no Infinity or NaN strings", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const document = (yield* request(url, "/openapi.json")).body
      const search = document.components.schemas.SearchRequest.properties.query
      const query = reachable(document, search)
      assert.isTrue(query.some((node) => node.minLength === 1), JSON.stringify(search))
      assert.isTrue(query.some((node) => node.maxLength === 4000), JSON.stringify(search))
      const sourceName = reachable(document, document.components.schemas.CreateSourceRequest.properties.name)
      assert.isTrue(sourceName.some((node) => node.minLength === 1), JSON.stringify(sourceName[0]))
      assert.isTrue(sourceName.some((node) => node.maxLength === 200), JSON.stringify(sourceName[0]))
      const nonFinite = requestSchemas(document).filter((node) =>
        (node.enum ?? []).some((value: unknown) => value === "Infinity" || value === "NaN" || value === "-Infinity")
      )
      assert.deepStrictEqual(nonFinite, [])
      const temperature = reachable(document, document.components.schemas.ChatCompletionRequest.properties.temperature)
      assert.isTrue(temperature.some((node) => node.type === "number" && node.maximum === 2))
    }))

  it.effect("unknown query parameters are 422 naming the parameter, on list endpoints and on endpoints with none", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const token = yield* login(url, "bounds")
      const source = yield* request(url, "/api/v1/sources", {
        token,
        json: { name: "s", connector_kind: "file_upload", config: {} }
      })
      for (
        const path of [
          `/sources/${source.body.id}/events?limt=5`,
          `/sources/${source.body.id}/entities?limt=5`,
          "/sources?limt=5",
          `/sources/${source.body.id}?limt=5`,
          "/agents?limt=5",
          "/graph?limt=5"
        ]
      ) {
        const reply = yield* request(url, `/api/v1${path}`, { token })
        assert.strictEqual(reply.status, 422, `${path}: ${reply.text}`)
        assert.deepStrictEqual(
          reply.body.error.issues.map((issue: { path: string }) => issue.path),
          ["query.limt"],
          path
        )
      }
      const known = yield* request(url, `/api/v1/sources/${source.body.id}/events?limit=5`, { token })
      assert.strictEqual(known.status, 200, known.text)
    }))

  it.effect("free-form JSON (a source's config) nested 10,000 deep is 422, not a stack overflow", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const token = yield* login(url, "bounds")
      const depth = 10_000
      for (const [kind, nested] of [["web", "[".repeat(depth) + "]".repeat(depth)], ["file_upload", "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)]]) {
        const reply = yield* request(url, "/api/v1/sources", {
          token,
          body: `{"name":"deep","connector_kind":"${kind}","config":{"urls":${nested}}}`,
          headers: { "content-type": "application/json" }
        })
        assert.strictEqual(reply.status, 422, `${kind}: ${reply.text.slice(0, 300)}`)
        assert.match(reply.body.error.issues[0].message, /nest more than 32 levels/)
      }
      const sources = yield* request(url, "/api/v1/sources", { token })
      assert.isFalse(sources.body.items.some((source: { name: string }) => source.name === "deep"))
    }))

  it.effect("an upload sent without a multipart body is told to send multipart/form-data with the part name", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const token = yield* login(url, "bounds")
      const source = yield* request(url, "/api/v1/sources", {
        token,
        json: { name: "u", connector_kind: "file_upload", config: {} }
      })
      const path = `/api/v1/sources/${source.body.id}/documents/upload`
      for (const options of [{ json: { text: "hello" } }, { body: "" }, { body: "hi", headers: { "content-type": "text/plain" } }]) {
        const reply = yield* request(url, path, { token, method: "POST", ...options })
        assert.strictEqual(reply.status, 415, reply.text)
        assert.strictEqual(reply.body.error.code, "unsupported_media_type")
        assert.match(reply.body.error.message, /multipart\/form-data/)
        assert.match(reply.body.error.message, /files/)
      }
      const json = yield* request(url, "/api/v1/sources", { token, body: "x", headers: { "content-type": "text/plain" } })
      assert.strictEqual(json.status, 415)
      assert.match(json.body.error.message, /application\/json/)
    }))
})
