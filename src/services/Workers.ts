import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Queue, Ref } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as Os from "node:os"
import { EngramConfig } from "../config.ts"
import { Embedder } from "./Embedder.ts"
import { type JobFailure, type JobRow, Jobs } from "./Jobs.ts"
import { type Outcome, Pipeline, type StageFailure } from "./Pipeline.ts"
import { VectorIndex } from "./VectorIndex.ts"

/** The workers' state for readiness: how many loops run and whether they have started. */
export class Workers extends Context.Service<Workers, {
  readonly running: Effect.Effect<number>
}>()("engram/Workers") {
  /**
   * ENGRAM_WORKER_CONCURRENCY loops claim jobs. A job's outcome is written to the job and its document:
   * permanent failures fail at once, transient ones retry with exponential backoff up to
   * ENGRAM_JOB_MAX_ATTEMPTS, and a shutdown hands the job back to the queue.
   */
  static readonly layer = Layer.effect(
    Workers,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      const sql = yield* SqlClient.SqlClient
      const jobs = yield* Jobs
      const pipeline = yield* Pipeline
      const running = yield* Ref.make(0)
      const leaseSeconds = settings.jobLeaseSeconds
      const processId = `${Os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

      const failDocument = (job: JobRow, error: JobFailure) =>
        job.document_id === null ? Effect.void : sql`
          UPDATE documents SET status = 'failed', error_code = ${error.code}, error_message = ${error.message},
            error_stage = ${error.stage}, updated_at = now()
          WHERE id = ${job.document_id} AND job_id = ${job.id}`.pipe(Effect.orDie, Effect.asVoid)

      const settle = (job: JobRow, exit: Exit.Exit<Outcome, StageFailure>) =>
        Effect.gen(function*() {
          if (Exit.isSuccess(exit)) {
            const outcome = exit.value
            if (outcome === "done") return yield* jobs.finish(job.id, "succeeded")
            if (outcome === "paused") return yield* jobs.release(job.id, "paused")
            return yield* jobs.finish(job.id, "cancelled")
          }
          if (Cause.hasInterruptsOnly(exit.cause)) return yield* jobs.release(job.id, "queued")
          const failure = Cause.findErrorOption(exit.cause)
          const error: JobFailure & { readonly permanent: boolean } = Option.match(failure, {
            onSome: (stageFailure) => stageFailure,
            onNone: () => ({
              code: "internal_error",
              message: "An internal error interrupted processing; it is in the server log",
              stage: job.stage,
              permanent: false
            })
          })
          if (Option.isNone(failure)) yield* Effect.logError("job failed unexpectedly", exit.cause)
          const stillExists = job.document_id === null || (yield* sql`SELECT 1 FROM documents WHERE id = ${job.document_id}`
            .pipe(Effect.orDie)).length > 0
          if (!stillExists) return yield* jobs.finish(job.id, "cancelled")
          if (!error.permanent && job.attempts < settings.jobMaxAttempts) {
            const delay = Math.min(2 ** job.attempts, 300)
            yield* Effect.logWarning("job will be retried").pipe(
              Effect.annotateLogs({ job_id: job.id, attempt: job.attempts, retry_in_s: delay, code: error.code })
            )
            return yield* jobs.retryLater(job.id, delay, error)
          }
          const final = error.permanent ? error : { ...error, message: `${error.message} (gave up after ${job.attempts} attempts)` }
          yield* jobs.finish(job.id, "failed", final)
          yield* failDocument(job, final)
        })

      /** Runs one job while renewing its lease; losing the lease (cancelled, taken over) stops the work. */
      const work = (job: JobRow, worker: string) =>
        Effect.gen(function*() {
          const keepLease = Effect.gen(function*() {
            while (true) {
              yield* Effect.sleep(`${Math.max(1, Math.floor(leaseSeconds / 3))} seconds`)
              if (!(yield* jobs.renew(job.id, worker, leaseSeconds))) return
            }
          })
          const exit = yield* pipeline.run(job).pipe(
            Effect.raceFirst(keepLease.pipe(Effect.andThen(Effect.interrupt))),
            Effect.exit
          )
          yield* settle(job, exit).pipe(Effect.uninterruptible)
        }).pipe(
          Effect.annotateLogs({ job_id: job.id, job_kind: job.kind }),
          Effect.withSpan("Workers.work", { attributes: { job: job.id } })
        )

      const loop = (worker: string) =>
        Effect.forever(Effect.gen(function*() {
          const claimed = yield* jobs.claim(worker, leaseSeconds).pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("claiming a job failed", cause).pipe(Effect.as(Option.none<JobRow>()))
            )
          )
          if (Option.isSome(claimed)) {
            yield* work(claimed.value, worker).pipe(
              Effect.catchCause((cause) => Effect.logError("settling a job failed", cause))
            )
          } else {
            yield* Queue.take(jobs.wakeups).pipe(Effect.timeoutOption("1 second"))
          }
        }))

      const fibers = yield* Effect.forEach(
        Array.from({ length: settings.workerConcurrency }, (_, i) => `${processId}:${i}`),
        (worker) => Effect.forkScoped(loop(worker))
      )
      yield* Ref.set(running, fibers.length)
      yield* Effect.addFinalizer(() => Fiber.interruptAll(fibers))
      return Workers.of({ running: Ref.get(running) })
    })
  )
}

/**
 * Once the embedding model has loaded, makes sure every searchable chunk has a vector in the active index:
 * the first model becomes active, chunks ingested without a model get a reindex job, and a model different
 * from the index's is reported (the operator starts the reindex; vectors of two models are never mixed).
 */
export const IndexReconciler = Layer.effectDiscard(Effect.gen(function*() {
  const embedder = yield* Embedder
  const vectors = yield* VectorIndex
  const jobs = yield* Jobs
  const sql = yield* SqlClient.SqlClient
  yield* Effect.gen(function*() {
    const loaded = yield* embedder.loaded
    if (Option.isNone(loaded)) return
    const active = yield* vectors.active
    if (Option.isSome(active) && active.value.name !== loaded.value.name) {
      return yield* Effect.logWarning(
        `the index holds vectors of ${active.value.name} but the configured embedding model is ` +
          `${loaded.value.name}: dense retrieval is unavailable until POST /api/v1/system/reindex completes`
      )
    }
    const model = yield* vectors.register(loaded.value)
    const missing = yield* vectors.countMissing(model)
    const pending = yield* sql`SELECT 1 FROM jobs WHERE kind = 'reindex' AND status IN ('queued', 'running', 'paused')`
      .pipe(Effect.orDie)
    if (missing > 0 && pending.length === 0) {
      yield* jobs.enqueue({ ownerId: null, kind: "reindex" })
      yield* jobs.wake
      yield* Effect.logInfo("embedding chunks that have no vector yet").pipe(Effect.annotateLogs({ chunks: missing }))
    }
  }).pipe(
    Effect.catchCause((cause) => Effect.logError("checking the vector index failed", cause)),
    Effect.forkScoped
  )
}))
