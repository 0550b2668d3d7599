/**
 * The embedded database's own thread: PGlite (with pgvector) opened on the data directory and served on a unix
 * socket, so that its queries never run on the service's thread and a long one cannot hold up other requests.
 * In: workerData {dataDir, socketPath}. Out: {ready: true} once serving, or {failed, message} (`failed` says
 * whether opening or serving failed). The message "close" stops serving and closes the database, then {closed}.
 */
import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Fs from "node:fs"
import { parentPort, workerData } from "node:worker_threads"
import { errorText } from "../errorText.ts"

const { dataDir, socketPath } = workerData as { readonly dataDir: string; readonly socketPath: string }

let step: "open" | "serve" = "open"
try {
  const db = await PGlite.create({ dataDir, extensions: { vector } })
  step = "serve"
  Fs.rmSync(socketPath, { force: true })
  const server = new PGLiteSocketServer({ db, path: socketPath })
  await server.start()
  Fs.chmodSync(socketPath, 0o600)
  parentPort!.on("message", (message: unknown) => {
    if (message !== "close") return
    void server.stop().catch(() => undefined)
      .then(() => db.close().catch(() => undefined))
      .then(() => parentPort!.postMessage({ closed: true }))
  })
  parentPort!.postMessage({ ready: true })
} catch (error) {
  parentPort!.postMessage({ failed: step, message: errorText(error) })
}
