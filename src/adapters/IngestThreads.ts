import { Context, Data, Effect, Layer, Semaphore } from "effect"
import * as Os from "node:os"
import { Worker } from "node:worker_threads"
import { EngramConfig } from "../config.ts"
import type { IngestTask, IngestTaskResult, TaskFailure } from "../ingest/tasks.ts"
import { workerScripts } from "../workers.ts"

/** A task failed on its thread (`failed`), its thread died (`crashed`), or it ran past its time limit (`timeout`). */
export class IngestTaskError extends Data.TaggedError("IngestTaskError")<{
  readonly reason: "failed" | "crashed" | "timeout"
  readonly code: string
  readonly message: string
  readonly permanent: boolean
}> {}

type Reply = { readonly id: number; readonly ok?: unknown; readonly failure?: TaskFailure }

/** Runs one task on a thread of the pool within `limitMillis`. */
export type RunTask = <T extends IngestTask>(task: T, limitMillis: number) => Effect.Effect<IngestTaskResult<T>, IngestTaskError>

/**
 * How long a thread may wait for work before it is stopped: its memory (a V8 heap with the NLP libraries loaded,
 * 100 MB or more) is given back between bursts of ingestion, and the next task starts a new thread (about a second).
 */
const defaultIdleMillis = 30_000

/**
 * Each thread's young generation, in MB. V8 grows it to its largest (over 120 MB a thread) under the rules' rate of
 * short-lived allocations; at 16 MB the rules took the same time on 500 SciFact abstracts (at 8 MB, 12 % more) and
 * the service held about 230 MB less after an ingest (docs/benchmarks.md).
 */
const youngGenerationMb = 16

/**
 * A pool of up to `size` worker threads running `script` (src/ingest/worker.ts by default), each running one task at
 * a time, started on demand, stopped after `idleMillis` without a task and with the scope. A task past its time
 * limit has its thread stopped (a new one replaces it).
 */
export const makeThreads = (size: number, script: URL = workerScripts.ingest, idleMillis = defaultIdleMillis) =>
  Effect.gen(function*() {
    const permits = yield* Semaphore.make(size)
    /** Threads waiting for a task, each with the timer that stops it. */
    const idle = new Map<Worker, ReturnType<typeof setTimeout>>()
    const live = new Set<Worker>()
    let next = 0

    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        for (const timer of idle.values()) clearTimeout(timer)
        return Promise.all([...live].map((thread) => thread.terminate()))
      }).pipe(Effect.ignore)
    )

    const start = () => {
      const thread = new Worker(script, { resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb } })
      thread.unref()
      // A thread's uncaught error is followed by its exit, which fails the task it was running.
      thread.on("error", () => {})
      live.add(thread)
      return thread
    }

    const stop = (thread: Worker) => {
      live.delete(thread)
      void thread.terminate()
    }

    const release = (thread: Worker) => {
      const timer = setTimeout(() => {
        idle.delete(thread)
        stop(thread)
      }, idleMillis)
      timer.unref()
      idle.set(thread, timer)
    }

    /** The thread that waited least (the others are the ones left to stop). */
    const takeIdle = () => {
      const thread = [...idle.keys()].at(-1)
      if (thread === undefined) return undefined
      clearTimeout(idle.get(thread))
      idle.delete(thread)
      return thread
    }

    const acquire = Effect.try({
      try: () => takeIdle() ?? start(),
      catch: (error) =>
        new IngestTaskError({ reason: "crashed", code: "thread_unavailable", message: String(error), permanent: false })
    })

    const onThread = (task: IngestTask, thread: Worker) =>
      Effect.callback<unknown, IngestTaskError>((resume) => {
        const id = next++
        const detach = () => {
          thread.off("message", onMessage)
          thread.off("exit", onExit)
        }
        const onMessage = (reply: Reply) => {
          if (reply.id !== id) return
          detach()
          release(thread)
          resume(
            reply.failure === undefined
              ? Effect.succeed(reply.ok)
              : Effect.fail(new IngestTaskError({ reason: "failed", ...reply.failure }))
          )
        }
        const onExit = () => {
          detach()
          live.delete(thread)
          resume(Effect.fail(
            new IngestTaskError({
              reason: "crashed",
              code: "thread_crashed",
              message: "The worker thread stopped while processing the document",
              permanent: false
            })
          ))
        }
        thread.on("message", onMessage)
        thread.once("exit", onExit)
        thread.postMessage({ id, task })
        // Interrupted (time limit, shutdown): the thread may be busy for long, so it is stopped, not reused.
        return Effect.sync(() => {
          detach()
          stop(thread)
        })
      })

    const run = <T extends IngestTask>(task: T, limitMillis: number) =>
      permits.withPermits(1)(
        acquire.pipe(
          Effect.flatMap((thread) => onThread(task, thread)),
          Effect.timeoutOrElse({
            duration: `${Math.max(1, Math.round(limitMillis))} millis`,
            orElse: () =>
              Effect.fail(
                new IngestTaskError({
                  reason: "timeout",
                  code: `${task.kind}_timeout`,
                  message: `The ${task.kind} stage took longer than its limit of ${Math.round(limitMillis / 1000)} s`,
                  permanent: true
                })
              )
          })
        )
      ).pipe(Effect.withSpan("IngestThreads.run", { attributes: { task: task.kind } })) as Effect.Effect<
        IngestTaskResult<T>,
        IngestTaskError
      >

    return run as RunTask
  })

/**
 * The worker threads that run CPU-heavy ingestion work (parsing, chunking, rule extraction; src/ingest/tasks.ts)
 * off the thread that serves requests: one thread per ingestion worker (ENGRAM_WORKER_CONCURRENCY, at least one),
 * up to one per core (more would only share the cores), each running one task at a time. A task past its time
 * limit has its thread stopped (a new one replaces it), so no document can hold a thread longer than its stage's
 * budget.
 */
export class IngestThreads extends Context.Service<IngestThreads, {
  readonly run: <T extends IngestTask>(task: T, limitMillis: number) => Effect.Effect<IngestTaskResult<T>, IngestTaskError>
}>()("engram/IngestThreads") {
  static readonly layer = Layer.effect(
    IngestThreads,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      const run = yield* makeThreads(Math.max(1, Math.min(settings.workerConcurrency, Os.availableParallelism())))
      return IngestThreads.of({ run })
    })
  )
}
