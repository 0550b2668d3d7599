import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Jobs } from "../../src/services/Jobs.ts"
import { login, request } from "../support/http.ts"
import { engines, freshSettings, serverLayer, TestServer } from "../support/server.ts"

/** A server without workers, with its services in context, so the test drives the queue itself. */
const withQueue = <A, E, R>(use: Effect.Effect<A, E, R>, engine: (typeof engines)[number]) =>
  Effect.gen(function*() {
    const settings = yield* freshSettings(engine, { workerConcurrency: 0 })
    const context = yield* Layer.build(serverLayer(settings))
    return yield* use.pipe(Effect.provide(context))
  }).pipe(Effect.scoped)

const userId = (url: string, name: string) =>
  Effect.gen(function*() {
    const token = yield* login(url, name)
    return (yield* request(url, "/api/v1/auth/me", { token })).body.id as string
  })

describe("job claiming", () => {
  for (const engine of engines) {
    it.live(`one owner's backlog does not starve another owner's later job (${engine})`, () =>
      withQueue(
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const jobs = yield* Jobs
          const big = yield* userId(url, "Bulk Uploader")
          const small = yield* userId(url, "Small Uploader")
          const backlog = yield* Effect.forEach(
            Array.from({ length: 6 }),
            () => jobs.enqueue({ ownerId: big, kind: "reindex" })
          )
          const first = yield* jobs.claim("worker-1", 60)
          assert.strictEqual(Option.getOrThrow(first).id, backlog[0]!.id)
          const late = yield* jobs.enqueue({ ownerId: small, kind: "reindex" })
          const second = yield* jobs.claim("worker-2", 60)
          assert.strictEqual(Option.getOrThrow(second).id, late.id, "the owner with no running job goes first")
          const third = yield* jobs.claim("worker-3", 60)
          assert.strictEqual(Option.getOrThrow(third).id, backlog[1]!.id, "then the backlog, oldest first")
        }),
        engine
      ))
  }
})

