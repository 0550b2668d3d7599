import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { freshServer, TestServer } from "../support/server.ts"

// Without statistics, statements prepared while the tables are small keep their plans (sequential scans) as the
// tables grow, and without vacuuming, dead rows pile up: a PostgreSQL server that does neither (autovacuum off)
// gets its tables analyzed and vacuumed by the service, by autovacuum's rule.
// The service keeps its own (real) clock: its maintenance runs every 5 s.
const live = { excludeTestServices: true }
layer(freshServer("postgres", { workerConcurrency: 0 }), live)("planner statistics (postgres)", (it) => {
  it.effect("with autovacuum off the service analyzes and vacuums changed tables; with it on, autovacuum does", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestServer
      const [setting] = yield* sql<{ on: boolean }>`SELECT current_setting('autovacuum') = 'on' AS on`
      type State = { readonly analyzed: boolean; readonly vacuumed: boolean; readonly dead: number }
      const maintained = Effect.map(
        sql<State>`
          SELECT last_analyze IS NOT NULL AS analyzed, last_vacuum IS NOT NULL AS vacuumed, n_dead_tup::int AS dead
          FROM pg_stat_user_tables WHERE relname = 'users' AND schemaname = current_schema()`,
        ([row]) => row!
      )
      // Polled for a generous while: the service checks every 5 s.
      const poll = Effect.fnUntraced(function*(done: (state: State) => boolean) {
        let state = yield* maintained
        for (let polls = 0; !done(state) && polls < 200; polls++) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
          state = yield* maintained
        }
        return state
      })
      if (setting!.on) {
        assert.isFalse((yield* maintained).vacuumed)
        return
      }
      // Analyzed as the service starts, before anything changed.
      assert.isTrue((yield* poll((state) => state.analyzed)).analyzed, "the service analyzed its tables")
      // 200 rows in and out again: 200 dead rows, past autovacuum's default threshold (50 + 20 % of the rows).
      yield* sql`INSERT INTO users (name) SELECT 'vacuum probe ' || n FROM generate_series(1, 200) AS n`
      yield* sql`DELETE FROM users WHERE name LIKE 'vacuum probe %'`
      const after = yield* poll((state) => state.vacuumed && state.dead === 0)
      assert.isTrue(after.vacuumed, "the service vacuumed a table with many dead rows")
      assert.strictEqual(after.dead, 0)
    }), 120_000)
})
