import { Effect, type Scope } from "effect"
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
          })
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
