import { assert, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { request } from "../support/http.ts"
import { freshServer, TestServer } from "../support/server.ts"

layer(freshServer("pglite"), { excludeTestServices: true, timeout: 120_000 })("the embedded database's thread", (it) => {
  it.effect("a long query holds up no other request: health is answered while it runs", () =>
    Effect.gen(function*() {
      const { sql, url } = yield* TestServer
      let finished = false
      // Seconds of work inside the embedded database, on the service's only database connection.
      const long = yield* sql<{ n: string }>`SELECT count(*) AS n FROM generate_series(1, 30000000)`.pipe(
        Effect.tap(() => Effect.sync(() => (finished = true))),
        Effect.forkChild
      )
      yield* Effect.sleep("100 millis")
      // The test shares the service's process: with the database on the service's thread, nothing here would run
      // until the query ended. On a thread of its own, health requests keep completing meanwhile.
      let answered = 0
      while (!finished) {
        const health = yield* request(url, "/api/v1/system/health")
        assert.strictEqual(health.status, 200)
        if (!finished) answered++
      }
      assert.isAtLeast(answered, 100, "health requests completed while the query ran")
      const [row] = yield* Fiber.join(long)
      assert.strictEqual(Number(row!.n), 30_000_000)
    }))
})

layer(freshServer("pglite", { pgliteSharedBuffersMb: 24 }), { excludeTestServices: true, timeout: 120_000 })(
  "the embedded database's buffer pool",
  (it) => {
    it.effect("is the size ENGRAM_PGLITE_SHARED_BUFFERS_MB says", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const [row] = yield* sql<{ shared_buffers: string }>`SHOW shared_buffers`
        assert.strictEqual(row!.shared_buffers, "24MB")
      }))
  }
)
