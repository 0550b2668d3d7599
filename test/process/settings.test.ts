import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as Os from "node:os"
import { settingsConfig } from "../../src/config.ts"

/** The settings read from these environment variables, as at start-up. */
const settingsFrom = (env: Record<string, string>) =>
  settingsConfig.parse(ConfigProvider.fromEnvRecord(env))

describe("settings", () => {
  it.effect("jobs worked at once: two with the embedded database, three per core with PostgreSQL, or as set", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* settingsFrom({})).workerConcurrency, 2)
      const postgres = "postgres://engram@127.0.0.1:5432/engram"
      assert.strictEqual(
        (yield* settingsFrom({ DATABASE_URL: postgres })).workerConcurrency,
        Math.min(16, 3 * Os.availableParallelism())
      )
      assert.strictEqual(
        (yield* settingsFrom({ DATABASE_URL: postgres, ENGRAM_WORKER_CONCURRENCY: "0" })).workerConcurrency,
        0
      )
      assert.strictEqual((yield* settingsFrom({ ENGRAM_WORKER_CONCURRENCY: "5" })).workerConcurrency, 5)
    }))
})
