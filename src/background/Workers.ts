import { Cause, Context, Effect, Fiber, Layer, Option, Queue, Ref } from "effect"
import { parentFromTraceParent } from "../observability/Tracing.ts"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as Os from "node:os"
import { EngramConfig } from "../config.ts"
import { Embedder } from "../adapters/Embedder.ts"
import { type JobRow, Jobs } from "../stores/Jobs.ts"
import { LexicalIndex } from "../stores/LexicalIndex.ts"
import { Lifecycle } from "../stores/Lifecycle.ts"
import { Pipeline } from "./Pipeline.ts"
import { VectorIndex } from "../stores/VectorIndex.ts"

/** The workers' state for readiness, and the stop a shutdown begins with. */
export class Workers extends Context.Service<Workers, {
  readonly running: Effect.Effect<number>
  /** Stops claiming and hands every job in progress back to the queue, lease cleared (shutdown); idempotent. */
  readonly stop: Effect.Effect<void>
}>()("engram/Workers") {
  /**
   * ENGRAM_WORKER_CONCURRENCY loops claim jobs (none in the api role) and compact BM25's index while there is none;
   * a run's outcome is settled by the Lifecycle (permanent failures fail at once, transient ones retry with backoff
   * up to ENGRAM_JOB_MAX_ATTEMPTS, a shutdown hands the job back). At start, rows an older release left disagreeing
   * are repaired first.
   */
  static readonly layer = Layer.effect(
    Workers,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      const jobs = yield* Jobs
      const lifecycle = yield* Lifecycle
      const pipeline = yield* Pipeline
      const lexical = yield* LexicalIndex
      const running = yield* Ref.make(0)
      const leaseSeconds = settings.jobLeaseSeconds
      const processId = `${Os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

      /**
       * Runs one job while renewing its lease; losing the lease (cancelled, taken over) stops the work. Only the
       * run itself is interruptible (`restore`): however it ends, interrupted by a shutdown included, it is settled.
       */
      const work = (job: JobRow, worker: string, restore: <A, E, R>(run: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
        Effect.gen(function*() {
          const keepLease = Effect.gen(function*() {
            while (true) {
              yield* Effect.sleep(`${Math.max(1, Math.floor(leaseSeconds / 3))} seconds`)
              if (!(yield* jobs.renew(job.id, worker, leaseSeconds))) return
            }
          })
          const exit = yield* restore(pipeline.run(job).pipe(
            Effect.raceFirst(keepLease.pipe(Effect.andThen(Effect.interrupt)))
          )).pipe(Effect.exit)
          yield* lifecycle.settle(job, exit)
        }).pipe(
          Effect.annotateLogs({ job_id: job.id, job_kind: job.kind }),
          // The job continues the trace of the request that queued it (upload to ready in one trace).
          Effect.withSpan(`engram.job.${job.kind}`, {
            attributes: {
              "engram.job.id": job.id,
              "engram.job.kind": job.kind,
              "engram.job.attempt": job.attempts + 1,
              "engram.document.id": job.document_id ?? "",
              "engram.source.id": job.source_id ?? ""
            },
            ...Option.match(parentFromTraceParent(job.trace_parent), {
              onNone: () => ({ root: true }),
              onSome: (parent) => ({ parent })
            })
          })
        )

      // A claimed job is always worked and settled: a stop interrupts the wait for work or the run, never the
      // moment in between, so no job is left holding a lease nobody renews.
      const loop = (worker: string) =>
        Effect.forever(Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const claimed = yield* jobs.claim(worker, leaseSeconds).pipe(
              Effect.catchCause((cause) =>
                Effect.logWarning("claiming a job failed", cause).pipe(Effect.as(Option.none<JobRow>()))
              )
            )
            if (Option.isSome(claimed)) {
              yield* work(claimed.value, worker, restore).pipe(
                Effect.catchCause((cause) => Effect.logError("settling a job failed", cause))
              )
            } else {
              // No job: BM25's index is compacted a step at a time, then the queue looked at again. A stop
              // interrupting a step is no failure (its transaction rolls back).
              const compacted = yield* restore(lexical.compactStep).pipe(
                Effect.catchCause((cause) =>
                  Cause.hasInterruptsOnly(cause)
                    ? Effect.failCause(cause)
                    : Effect.logWarning("compacting the BM25 index failed", cause).pipe(Effect.as(false))
                )
              )
              if (!compacted) yield* restore(Queue.take(jobs.wakeups).pipe(Effect.timeoutOption("1 second")))
            }
          })
        ))

      const repaired = yield* lifecycle.reconcile.pipe(
        Effect.catchCause((cause) => Effect.logWarning("repairing job states failed", cause).pipe(Effect.as(0)))
      )
      if (repaired > 0) yield* Effect.logInfo("finished jobs whose document was already ready").pipe(
        Effect.annotateLogs({ jobs: repaired })
      )
      const loops = settings.role === "api" ? 0 : settings.workerConcurrency
      const fibers = yield* Effect.forEach(
        Array.from({ length: loops }, (_, i) => `${processId}:${i}`),
        (worker) => Effect.forkScoped(loop(worker))
      )
      yield* Ref.set(running, fibers.length)
      const stop = Fiber.interruptAll(fibers).pipe(Effect.andThen(Ref.set(running, 0)))
      yield* Effect.addFinalizer(() => stop)
      return Workers.of({ running: Ref.get(running), stop })
    })
  )
}

/**
 * Once the embedding model has loaded, makes sure every searchable chunk has a vector in the active index:
 * the first model becomes active, chunks ingested without a model get a reindex job, and a model different
 * from the index's is reported (the operator starts the reindex; vectors of two models are never mixed).
 */
export const IndexReconciler = Layer.effectDiscard(Effect.gen(function*() {
  // Reindex jobs are queued by the processes that run workers; an api process only embeds queries.
  if ((yield* EngramConfig).role === "api") return
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
