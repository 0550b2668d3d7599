import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { engines, freshSettings, scratchDatabase, scratchDir, defaultSettings, withServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { latestMigrationId } from "../../src/migrations/index.ts"

describe("storage", () => {
  for (const engine of engines) {
    it.live(`data and tokens survive a restart on the same data directory (${engine})`, () =>
      Effect.gen(function*() {
        const settings = yield* freshSettings(engine)
        const first = yield* withServer(settings, ({ url }) =>
          Effect.gen(function*() {
            const token = yield* login(url, "Persistent Pat")
            yield* request(url, "/api/v1/system/preferences", { method: "PUT", token, json: { theme: "light" } })
            const me = yield* request(url, "/api/v1/auth/me", { token })
            return { token, id: me.body.id as string }
          }))
        yield* withServer(settings, ({ url }) =>
          Effect.gen(function*() {
            const me = yield* request(url, "/api/v1/auth/me", { token: first.token })
            assert.strictEqual(me.status, 200, "a token issued before the restart is still valid")
            assert.strictEqual(me.body.id, first.id)
            const token = yield* login(url, "persistent pat")
            const prefs = yield* request(url, "/api/v1/system/preferences", { token })
            assert.deepStrictEqual(prefs.body, { theme: "light" })
          }))
      }).pipe(Effect.scoped))

    it.live(`migrations run once: a restart on a migrated database applies nothing twice (${engine})`, () =>
      Effect.gen(function*() {
        const settings = yield* freshSettings(engine)
        yield* withServer(settings, () => Effect.void)
        yield* withServer(settings, ({ sql }) =>
          Effect.gen(function*() {
            const rows = yield* sql<{ migration_id: number }>`SELECT migration_id FROM engram_migrations`
            assert.deepStrictEqual(
              rows.map((row) => row.migration_id),
              Array.from({ length: latestMigrationId }, (_, i) => i + 1)
            )
            const vector = yield* sql<{ v: string }>`SELECT '[1,2,3]'::vector <=> '[1,2,4]'::vector AS v`
            assert.isTrue(Number(vector[0]!.v) > 0)
          }))
      }).pipe(Effect.scoped))
  }

  it.live("one data directory serves one server at a time (pglite)", () =>
    Effect.gen(function*() {
      const settings = defaultSettings(yield* scratchDir)
      yield* withServer(settings, () =>
        Effect.gen(function*() {
          const second = yield* withServer(settings, () => Effect.void).pipe(Effect.flip)
          assert.strictEqual(second._tag, "StartupError")
          assert.match(second.message, /is in use by another Engram process/)
        }))
      yield* withServer(settings, () => Effect.void)
    }).pipe(Effect.scoped))

  it.live("ready turns 503 naming the database when the database is gone (postgres)", () =>
    Effect.gen(function*() {
      const database = yield* scratchDatabase
      const settings = defaultSettings(yield* scratchDir, database.url)
      yield* withServer(settings, ({ url }) =>
        Effect.gen(function*() {
          assert.strictEqual((yield* request(url, "/api/v1/system/ready")).status, 200)
          yield* database.drop
          const reply = yield* request(url, "/api/v1/system/ready")
          assert.strictEqual(reply.status, 503)
          assert.strictEqual(reply.body.error.code, "not_ready")
          assert.match(reply.body.error.message, /database/)
          assert.strictEqual((yield* request(url, "/api/v1/system/health")).status, 200)
        }))
    }).pipe(Effect.scoped))

  it.live("ready turns 503 when the database is not migrated (pglite)", () =>
    Effect.gen(function*() {
      const settings = defaultSettings(yield* scratchDir)
      yield* withServer(settings, ({ url, sql }) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM engram_migrations`
          const reply = yield* request(url, "/api/v1/system/ready")
          assert.strictEqual(reply.status, 503)
          assert.match(reply.body.error.message, /not migrated/)
        }))
    }).pipe(Effect.scoped))
})
