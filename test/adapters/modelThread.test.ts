import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ModelJob, startModelThread } from "../../src/adapters/modelThread.ts"
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
