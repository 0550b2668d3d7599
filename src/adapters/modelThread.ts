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

/**
 * Starts a model on a thread of its own (src/adapters/modelWorker.ts) and waits until it is loaded; fails with why
 * it could not load. The thread ends with the scope.
 */
export const startModelThread = (
  job: ModelJob,
  onProgress: (detail: string) => void = () => {}
): Effect.Effect<ModelThread, string, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly worker: Worker; readonly thread: ModelThread }, string>((resume) => {
      // The model's tensors live outside the V8 heap; its young generation needs no more than the ingestion threads'.
      const worker = new Worker(workerScripts.model, {
        workerData: job,
        resourceLimits: { maxYoungGenerationSizeMb: 16 }
      })
      worker.unref()
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
        if (reply.ready === true) return resume(Effect.succeed({ worker, thread }))
        if (reply.failed !== undefined) {
          stop(reply.failed)
          void worker.terminate()
          return
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
      return Effect.promise(() => worker.terminate()).pipe(Effect.ignore)
    }),
    ({ worker }) => Effect.promise(() => worker.terminate()).pipe(Effect.ignore)
  ).pipe(Effect.map(({ thread }) => thread))
