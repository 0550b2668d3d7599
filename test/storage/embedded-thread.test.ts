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
      // The query takes seconds alone and over a minute on a machine busy with other tests: bounded generously.
    }), 300_000)
})

// One server for the embedded database's settings: its buffer pool, and its maintenance every second (the service
// vacuums and checkpoints it every minute by default).
layer(
  freshServer("pglite", { pgliteSharedBuffersMb: 24, pgliteMaintenanceSeconds: 1 }),
  { excludeTestServices: true, timeout: 120_000 }
)(
  "the embedded database's settings",
  (it) => {
    it.effect("its buffer pool is the size ENGRAM_PGLITE_SHARED_BUFFERS_MB says", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const [row] = yield* sql<{ shared_buffers: string }>`SHOW shared_buffers`
        assert.strictEqual(row!.shared_buffers, "24MB")
      }))

    it.effect("its write-ahead log is checkpointed by the service: segments do not pile up until it closes", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const wal = sql<{ oldest: string; segments: number; bytes: string }>`
          SELECT min(name) AS oldest, count(*)::int AS segments, sum(size)::bigint AS bytes
          FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`
        const [before] = yield* wal
        // About 200 MB of log, more than the 128 MB a checkpoint keeps for reuse: PGlite alone keeps all of it.
        yield* sql`CREATE TABLE wal_probe (body text)`
        for (let i = 0; i < 8; i++) {
          yield* sql`INSERT INTO wal_probe SELECT repeat(md5(g::text), 40) FROM generate_series(1, 20000) g`
        }
        // The segments the log held before the writes are removed or reused, and no more than about 128 MB is
        // kept.
        let after = (yield* wal)[0]!
        const trimmed = () => after.oldest > before!.oldest && Number(after.bytes) <= 160 * 2 ** 20
        for (let waited = 0; !trimmed() && waited < 60_000; waited += 250) {
          yield* Effect.sleep("250 millis")
          after = (yield* wal)[0]!
        }
        assert.isTrue(
          after.oldest > before!.oldest,
          `the oldest segment ${before!.oldest} was checkpointed away (oldest now ${after.oldest})`
        )
        assert.isAtMost(Number(after.bytes), 160 * 2 ** 20, `the log holds ${after.segments} segments`)
      }))
  }
)
