import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeThreads } from "../../src/adapters/IngestThreads.ts"
import type { IngestTask } from "../../src/ingest/tasks.ts"

const echo = new URL("../support/echoThread.ts", import.meta.url)
/** Any task: the echo thread answers every message with its thread id. */
const task = { kind: "parse" } as unknown as IngestTask

describe("ingestion threads", () => {
  it.live("reuse a waiting thread, and stop it once it has waited longer than the idle limit", () =>
    Effect.gen(function*() {
      const patient = yield* makeThreads(1, echo, 60_000)
      const first = yield* patient(task, 30_000)
      expect(yield* patient(task, 30_000)).toBe(first)

      const brief = yield* makeThreads(1, echo, 10)
      const before = yield* brief(task, 30_000)
      yield* Effect.sleep("300 millis")
      const after = yield* brief(task, 30_000)
      expect(typeof after).toBe("number")
      expect(after).not.toBe(before)
    }).pipe(Effect.scoped))
})
