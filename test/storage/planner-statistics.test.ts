import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { freshServer, TestServer } from "../support/server.ts"

// Without statistics, statements prepared while the tables are small keep their plans (sequential scans) as the
// tables grow: a PostgreSQL server that does not analyze them (autovacuum off) gets them analyzed by the service.
layer(freshServer("postgres", { workerConcurrency: 0 }))("planner statistics (postgres)", (it) => {
  it.effect("with autovacuum off the service analyzes its tables; with it on, it leaves that to autovacuum", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestServer
      const [setting] = yield* sql<{ on: boolean }>`SELECT current_setting('autovacuum') = 'on' AS on`
      const analyzed = Effect.map(
        sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_user_tables WHERE relname = 'chunks' AND last_analyze IS NOT NULL`,
        ([row]) => row!.n
      )
      if (setting!.on) {
        assert.strictEqual(yield* analyzed, 0)
        return
      }
      // The first analysis runs as the service starts; polled for a generous while (real time: the test's clock
      // does not move by itself).
      let n = yield* analyzed
      for (let polls = 0; n === 0 && polls < 150; polls++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
        n = yield* analyzed
      }
      assert.strictEqual(n, 1, "the service analyzed its tables")
    }))
})
