/**
 * The embedded database's thread (src/adapters/databaseWorker.ts), which can start before the service has read its
 * settings: src/main.ts starts it as the process begins, so that it loads PGlite while this thread loads the
 * service's modules; the Db layer then tells it where to open the database. Only node's own modules here, so that
 * importing this costs the entry nothing.
 */
import { Worker } from "node:worker_threads"
import { workerScripts } from "../workers.ts"

/** Where and how to open the database: the thread's first message. */
export interface OpenRequest {
  /** The PGlite data directory; a new (missing or empty) one starts as a copy of `template` when that exists. */
  readonly dataDir: string
  readonly socketPath: string
  readonly template: string | undefined
  /** PostgreSQL's buffer pool, all of it resident in the WebAssembly memory from the start. */
  readonly sharedBuffersMb: number
  /** More server settings (name → value), the defaults of its one session. */
  readonly settings: Readonly<Record<string, string>>
}

/** The thread's answer to `open`: serving (and why the template could not be used, if it could not), or why not. */
export type OpenAnswer =
  | { readonly ready: true; readonly templateFailed?: string | undefined }
  | { readonly failed: "open" | "serve"; readonly message: string }

interface Thread {
  readonly worker: Worker
  /** Settles when the thread dies before it answers (its error, or its exit), whenever that is. */
  readonly died: Promise<Error>
}

const spawn = (): Thread => {
  const worker = new Worker(workerScripts.database)
  // Listened to from the start: an early thread's error, before anyone opens it, must not go unhandled.
  const died = new Promise<Error>((resolve) => {
    worker.once("error", resolve)
    worker.once("exit", (code) => resolve(new Error(`its thread exited with code ${code}`)))
  })
  return { worker, died }
}

let early: Thread | undefined

/** Starts the thread now, for a later `openDatabase`; it keeps no process alive until then. Its thread id. */
export const startEarly = (): number => {
  if (early === undefined) {
    early = spawn()
    early.worker.unref()
  }
  return early.worker.threadId
}

/** Ends the early thread if it was started and is not wanted (the database is a PostgreSQL server). */
export const discardEarly = () => {
  void early?.worker.terminate()
  early = undefined
}

/**
 * Opens the database on the early thread, or on a new one: resolves with the thread and its answer, rejects with the
 * thread's error if it dies first.
 */
export const openDatabase = (
  request: OpenRequest
): Promise<{ readonly worker: Worker; readonly answer: OpenAnswer }> => {
  const thread = early ?? spawn()
  early = undefined
  thread.worker.ref()
  const answered = new Promise<OpenAnswer>((resolve) => thread.worker.once("message", resolve))
  thread.worker.postMessage(request)
  return Promise.race([
    answered.then((answer) => ({ worker: thread.worker, answer })),
    thread.died.then((error) => Promise.reject(error))
  ])
}
