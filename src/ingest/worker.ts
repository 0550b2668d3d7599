/**
 * A worker thread of adapters/IngestThreads.ts: runs one ingestion task at a time (parse, chunk, extract), so a
 * large document never stalls the service's event loop. Messages in: {id, task}; out: {id, ok} or {id, failure}.
 */
import { parentPort } from "node:worker_threads"
import { failureOf, type IngestTask, runTask } from "./tasks.ts"

parentPort!.on("message", (message: { readonly id: number; readonly task: IngestTask }) => {
  runTask(message.task).then(
    (ok) => parentPort!.postMessage({ id: message.id, ok }),
    (error: unknown) => parentPort!.postMessage({ id: message.id, failure: failureOf(error) })
  )
})
