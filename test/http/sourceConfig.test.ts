import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { login, request } from "../support/http.ts"
import { freshServer, TestServer } from "../support/server.ts"

layer(freshServer("pglite"))("source config messages", (it) => {
  it.effect("an unknown config key is 422 naming the key and the settings the connector takes", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const token = yield* login(url, "Configurer")
      const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
        ["file_upload", { bogus: 1 }, "unknown setting: file_upload sources take no config"],
        ["web", { urls: ["https://example.com/"], depth: 1 }, "unknown setting: web sources take urls, crawl_depth and max_pages"],
        ["folder", { path: "/tmp", recurse: true }, "unknown setting: folder sources take path and recursive"]
      ]
      for (const [kind, config, message] of cases) {
        const reply = yield* request(url, "/api/v1/sources", { token, json: { name: "x", connector_kind: kind, config } })
        assert.strictEqual(reply.status, 422, reply.text)
        const key = Object.keys(config).at(-1)!
        const issue = reply.body.error.issues.find((i: { path: string }) => i.path === `body.config.${key}`)
        assert.isDefined(issue, reply.text)
        assert.include(issue.message, message)
        assert.notInclude(reply.text, "Expected never")
      }
    }))
})
