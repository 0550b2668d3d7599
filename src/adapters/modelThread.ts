import { Duration, Effect, Exit, Fiber, Scope, Semaphore } from "effect"
import { Worker } from "node:worker_threads"
import { errorText } from "../errorText.ts"
import { workerScripts } from "../workers.ts"

/** The model a thread loads: the embedder's sentence-embedding pipeline, or the reranker's cross-encoder. */
export type ModelJob =
  | {
    readonly kind: "embed"
    /** An absolute directory, or a hub model id when `local` is false. */
    readonly location: string
    readonly local: boolean
    readonly cacheDir: string
    readonly dtype: string
    readonly pooling: "cls" | "mean"
  }
  | { readonly kind: "rerank"; readonly directory: string }

export type ModelRequest =
  | { readonly texts: ReadonlyArray<string> }
  | { readonly query: string; readonly passages: ReadonlyArray<string> }

type Reply = {
  readonly id?: number
  readonly ok?: unknown
  readonly error?: string
  readonly progress?: string
  readonly ready?: true
  readonly failed?: string
}

export interface ModelThread {
  /** One request to the model; rejects with the model's error, or when the thread has stopped. */
  readonly run: <A>(request: ModelRequest) => Promise<A>
  /** False once the thread has stopped (asked to, or crashed). */
  readonly alive: () => boolean
}

/** How long a thread asked to stop may take to finish the batch it runs before it is stopped from outside. */
const stopGraceMs = 30_000

/**
 * Starts a model on a thread of its own (src/adapters/modelWorker.ts) and waits until it is loaded; fails with why
 * it could not load. The thread ends with the scope.
 */
export const startModelThread = (
  job: ModelJob,
  onProgress: (detail: string) => void = () => {}
): Effect.Effect<ModelThread, string, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly close: Effect.Effect<void>; readonly thread: ModelThread }, string>((resume) => {
      // The model's tensors live outside the V8 heap; its young generation needs no more than the ingestion threads'.
      const worker = new Worker(workerScripts.model, {
        workerData: job,
        resourceLimits: { maxYoungGenerationSizeMb: 16 }
      })
      worker.unref()
      const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()))
      // Asks the thread to stop and waits until it has. The thread ends itself between two batches: a thread stopped
      // from outside (`terminate`) while onnxruntime-node runs a batch aborts the whole process when the batch
      // returns ("terminate called after throwing an instance of 'Napi::Error'"), so that is only the last resort.
      const close = Effect.promise(() => {
        worker.postMessage({ stop: true })
        const timer = setTimeout(() => void worker.terminate(), stopGraceMs)
        return exited.finally(() => clearTimeout(timer))
      })
      const pending = new Map<number, { resolve: (value: never) => void; reject: (error: Error) => void }>()
      let next = 0
      let stopped: string | undefined
      const thread: ModelThread = {
        run: <A>(request: ModelRequest) =>
          new Promise<A>((resolve, reject) => {
            if (stopped !== undefined) return reject(new Error(stopped))
            const id = next++
            pending.set(id, { resolve: resolve as (value: never) => void, reject })
            worker.postMessage({ id, ...request })
          }),
        alive: () => stopped === undefined
      }
      const stop = (reason: string) => {
        stopped ??= reason
        for (const { reject } of pending.values()) reject(new Error(stopped))
        pending.clear()
        // Before it is loaded, a thread that stops fails the start (once started, `resume` ignores this).
        resume(Effect.fail(stopped))
      }
      worker.on("message", (reply: Reply) => {
        if (reply.progress !== undefined) return onProgress(reply.progress)
        if (reply.ready === true) return resume(Effect.succeed({ close, thread }))
        if (reply.failed !== undefined) {
          stop(reply.failed)
          return worker.postMessage({ stop: true })
        }
        const call = reply.id === undefined ? undefined : pending.get(reply.id)
        if (call === undefined) return
        pending.delete(reply.id!)
        if (reply.error !== undefined) call.reject(new Error(reply.error))
        else call.resolve(reply.ok as never)
      })
      worker.on("error", (error) => stop(`the model's thread failed: ${errorText(error)}`))
      worker.on("exit", () => stop("the model's thread has stopped"))
      // Interrupted while loading (the service stopping): the thread goes too.
      return close
    }),
    ({ close }) => close
  ).pipe(Effect.map(({ thread }) => thread))

/** A local model whose thread runs only while it is used (`modelOnDemand`). */
export interface ModelOnDemand {
  /** One request; the first one after an idle period loads the model again. Fails with why. */
  readonly run: <A>(request: ModelRequest) => Effect.Effect<A, string>
  /** Whether the model's thread runs now. */
  readonly loaded: Effect.Effect<boolean>
}

/**
 * A model on a thread started by the first request and stopped once no request has come for `keepAliveSeconds`
 * (-1: never), as Ollama keeps a model: an idle service holds none of a model's memory (docs/decisions.md, "Less
 * idle memory"). A thread that crashed is started again by the next request; a model that fails to load is not
 * loaded again (`onLoadFailure` hears why, once) and every later request fails with that reason.
 */
export const modelOnDemand = (job: ModelJob, options: {
  readonly keepAliveSeconds: number
  readonly onProgress?: (detail: string) => void
  readonly onLoadFailure: (reason: string) => Effect.Effect<void>
}): Effect.Effect<ModelOnDemand, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const lock = yield* Semaphore.make(1)
    let loaded: { readonly thread: ModelThread; readonly scope: Scope.Closeable } | undefined
    let failure: string | undefined
    let running = 0
    let idleStop: Fiber.Fiber<void> | undefined

    const unload = Effect.suspend(() => {
      const current = loaded
      loaded = undefined
      return current === undefined ? Effect.void : Scope.close(current.scope, Exit.void)
    })
    const acquire = lock.withPermits(1)(Effect.gen(function*() {
      if (idleStop !== undefined) {
        yield* Fiber.interrupt(idleStop)
        idleStop = undefined
      }
      if (failure !== undefined) return yield* Effect.fail(failure)
      if (loaded !== undefined && !loaded.thread.alive()) yield* unload
      if (loaded === undefined) {
        const threadScope = yield* Scope.fork(scope)
        const thread = yield* startModelThread(job, options.onProgress).pipe(
          Scope.provide(threadScope),
          Effect.onError((cause) => Scope.close(threadScope, Exit.failCause(cause))),
          Effect.tapError((reason) => {
            failure = reason
            return options.onLoadFailure(reason)
          })
        )
        loaded = { thread, scope: threadScope }
      }
      running++
      return loaded.thread
    }))
    const release = lock.withPermits(1)(Effect.gen(function*() {
      running--
      if (running > 0 || options.keepAliveSeconds < 0) return
      idleStop = yield* Effect.sleep(Duration.seconds(options.keepAliveSeconds)).pipe(
        Effect.andThen(lock.withPermits(1)(Effect.suspend(() => running > 0 ? Effect.void : unload))),
        Effect.forkIn(scope)
      )
    }))
    return {
      run: <A>(request: ModelRequest) =>
        Effect.acquireUseRelease(
          acquire,
          (thread) => Effect.tryPromise({ try: () => thread.run<A>(request), catch: (error) => errorText(error) }),
          () => release
        ),
      loaded: Effect.sync(() => loaded?.thread.alive() === true)
    }
  })
