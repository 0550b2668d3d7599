import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ModelJob, type ModelOnDemand, modelOnDemand, startModelThread } from "../../src/adapters/modelThread.ts"
import { fixtureModelDir } from "../support/datasets.ts"

const job: ModelJob = {
  kind: "embed",
  location: fixtureModelDir,
  local: true,
  cacheDir: fixtureModelDir,
  dtype: "q8",
  pooling: "cls"
}
/** A batch the fixture model takes tens of milliseconds over. */
const texts = Array.from({ length: 64 }, (_, i) => `passage number ${i} `.repeat(60))

describe("the model's thread", () => {
  it.live("closed while a batch runs, it stops after the batch: the process lives on, the caller hears why", () =>
    Effect.gen(function*() {
      // Closing at different moments lands in the tokenizer, in onnxruntime's run, and between the two. A thread
      // stopped from outside during the run aborts the whole process ("terminate called after throwing an instance
      // of 'Napi::Error'"), and with it this test.
      for (const delayMs of [0, 5, 10, 20, 30, 40, 60, 80, 120]) {
        const reply = yield* Effect.scoped(Effect.gen(function*() {
          const thread = yield* startModelThread(job)
          const reply = thread.run<Float32Array>({ texts }).then(
            (vectors) => `${vectors.length} numbers`,
            (error: Error) => error.message
          )
          yield* Effect.sleep(delayMs)
          return reply
        }))
        expect(["the model's thread has stopped", `${texts.length * 32} numbers`]).toContain(
          yield* Effect.promise(() => reply)
        )
      }
      // A thread started after the others stopped still embeds.
      const vectors = yield* Effect.scoped(Effect.gen(function*() {
        const thread = yield* startModelThread(job)
        return yield* Effect.promise(() => thread.run<Float32Array>({ texts: ["one", "two"] }))
      }))
      expect(vectors.length).toBe(2 * 32)
    }))
})

describe("a model on demand", () => {
  const loadedWithin = (model: ModelOnDemand, expected: boolean) =>
    Effect.gen(function*() {
      for (let i = 0; i < 200 && (yield* model.loaded) !== expected; i++) yield* Effect.sleep("50 millis")
      return yield* model.loaded
    })

  it.live("loads with the first request, stops once idle for its keep-alive, loads again for the next", () =>
    Effect.scoped(Effect.gen(function*() {
      const failures: Array<string> = []
      const model = yield* modelOnDemand(job, {
        keepAliveSeconds: 0,
        onLoadFailure: (reason) => Effect.sync(() => failures.push(reason))
      })
      expect(yield* model.loaded).toBe(false)
      // Requests at once share one thread.
      const replies = yield* Effect.all(
        [["one"], ["two", "three"], ["four"]].map((texts) => model.run<Float32Array>({ texts })),
        { concurrency: "unbounded" }
      )
      expect(replies.map((vectors) => vectors.length)).toEqual([32, 64, 32])
      expect(yield* loadedWithin(model, false)).toBe(false)
      const again = yield* model.run<Float32Array>({ texts: ["five"] })
      expect(again.length).toBe(32)
      expect(failures).toEqual([])
    })))

  it.live("with a keep-alive of -1 the model stays loaded", () =>
    Effect.scoped(Effect.gen(function*() {
      const model = yield* modelOnDemand(job, { keepAliveSeconds: -1, onLoadFailure: () => Effect.void })
      yield* model.run<Float32Array>({ texts: ["one"] })
      yield* Effect.sleep("300 millis")
      expect(yield* model.loaded).toBe(true)
    })))

  it.live("a model that cannot load fails every request with why, and says so once", () =>
    Effect.scoped(Effect.gen(function*() {
      const failures: Array<string> = []
      const model = yield* modelOnDemand({ ...job, location: "/nonexistent/model-dir" }, {
        keepAliveSeconds: 0,
        onLoadFailure: (reason) => Effect.sync(() => failures.push(reason))
      })
      const first = yield* Effect.flip(model.run({ texts: ["one"] }))
      const second = yield* Effect.flip(model.run({ texts: ["two"] }))
      expect(first.length).toBeGreaterThan(0)
      expect(second).toBe(first)
      expect(failures).toEqual([first])
      expect(yield* model.loaded).toBe(false)
    })))
})
