import { assert, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { withGenericPlans } from "../../src/stores/writeTransaction.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

// The pipeline's write transactions (Lifecycle's transitions, Graph.store) run on generic plans; the setting must
// end with them, so that searches on the same pooled connection keep the planner's own choice.
const live = { excludeTestServices: true }
for (const engine of engines) {
  layer(freshServer(engine, { workerConcurrency: 0 }), live)(`write transactions (${engine})`, (it) => {
    it.effect("run on generic plans, and the connection plans as before once they commit or roll back", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const mode = Effect.map(
          sql<{ mode: string }>`SELECT current_setting('plan_cache_mode') AS mode`,
          ([row]) => row!.mode
        )
        const before = yield* mode
        assert.strictEqual(before, "auto")
        assert.strictEqual(yield* withGenericPlans(sql, mode), "force_generic_plan")
        for (let n = 0; n < 4; n++) assert.strictEqual(yield* mode, before, "the setting ended with the commit")

        const failed = yield* Effect.exit(withGenericPlans(
          sql,
          sql`INSERT INTO users (name) VALUES ('generic plan probe')`.pipe(Effect.andThen(Effect.fail("stop")))
        ))
        assert.isTrue(Exit.isFailure(failed))
        const [{ count }] = yield* sql<{ count: number }>`
          SELECT count(*)::int AS count FROM users WHERE name = 'generic plan probe'`
        assert.strictEqual(count, 0, "the failed transaction wrote nothing")
        for (let n = 0; n < 4; n++) assert.strictEqual(yield* mode, before, "the setting ended with the rollback")
      }))
  })
}
