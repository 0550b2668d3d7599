/**
 * The worker thread of the universe recompute (src/background/Universe.ts): computes one source's map at a time,
 * loading only the map code. Messages in: {id, task} with a map task; out: {id, ok} or {id, failure}.
 */
import { parentPort } from "node:worker_threads"
import type { IngestTask } from "../ingest/tasks.ts"
import { computeMap } from "./universeMap.ts"

parentPort!.on("message", (message: { readonly id: number; readonly task: IngestTask }) => {
  try {
    if (message.task.kind !== "map") throw new Error(`this thread only computes maps, not ${message.task.kind}`)
    parentPort!.postMessage({ id: message.id, ok: computeMap(message.task.input) })
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error)
    parentPort!.postMessage({ id: message.id, failure: { code: "map_failed", message: text, permanent: false } })
  }
})
