/** A worker script for thread-pool tests: answers each task with the id of the thread that ran it. */
import { parentPort, threadId } from "node:worker_threads"

parentPort!.on("message", ({ id }: { id: number }) => parentPort!.postMessage({ id, ok: threadId }))
