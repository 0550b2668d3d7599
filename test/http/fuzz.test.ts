import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createFixtures, formatReport, leakIn, runFuzz } from "../../scripts/lib/fuzz.ts"
import { freshServer, TestServer } from "../support/server.ts"

layer(freshServer("pglite"))("fuzz over every JSON endpoint (fixed seed)", (it) => {
  it.effect("a deterministic slice of scripts/fuzz-api.ts: no 5xx and no internal detail in any response", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const report = yield* Effect.promise(async () =>
        runFuzz({ baseUrl: url, fixtures: await createFixtures(url), seed: 12, maxRequests: 1200, maxSeconds: 120, perEndpoint: 4 })
      )
      assert.isAtLeast(Object.keys(report.endpoints).length, 50, "every endpoint of /openapi.json is fuzzed")
      assert.isTrue(Object.values(report.endpoints).every((endpoint) => endpoint.sent > 0))
      assert.strictEqual(report.serverErrors, 0, formatReport(report))
      assert.strictEqual(report.leaks, 0, formatReport(report))
    }), { timeout: 180_000 })

  it("the leak detector recognises SQL, stack traces, file paths and Node errors, and not our error bodies", () => {
    for (
      const leaking of [
        "{\"message\":\"syntax error at or near \\\"FROM\\\"\"}",
        "SELECT id FROM sources WHERE id = $1",
        "    at Object.run (/work/inputs/src/services/Sources.ts:12:3)",
        "TypeError: Cannot read properties of undefined",
        "ENOENT: no such file /home/engram/data/x",
        "invalid byte sequence for encoding \"UTF8\": 0x00"
      ]
    ) assert.isDefined(leakIn(leaking), leaking)
    for (
      const clean of [
        "{\"error\":{\"code\":\"validation_failed\",\"message\":\"Invalid request: body.name: must not contain NUL (\\\\u0000) characters\",\"request_id\":\"r\"}}",
        "{\"error\":{\"code\":\"internal_error\",\"message\":\"Internal server error\",\"request_id\":\"4f1c\"}}",
        "{\"error\":{\"code\":\"unsupported_media_type\",\"message\":\"Send the body as application/json\",\"request_id\":\"r\"}}"
      ]
    ) assert.isUndefined(leakIn(clean), clean)
  })
})
