/**
 * The embedded database's thread: PGlite (with pgvector) opened on the data directory and served on a unix
 * socket, so that its queries never run on the service's thread and a long one cannot hold up other requests.
 * It loads PGlite as soon as it starts and waits for its first message, an OpenRequest (src/adapters/
 * databaseThread.ts): a new database (no directory yet, or an empty one) is a copy of the `template` directory
 * (src/adapters/pgliteTemplate.ts) when that exists, else initialised by PGlite; `settings` are server options
 * (PostgreSQL's `-c`). Answers {ready: true, templateFailed?} once serving (`templateFailed`: why the template could
 * not be used, the database was then initialised without it), or {failed, message} (`failed` says whether opening
 * or serving failed). The message "close" stops serving and closes the database, then {closed}.
 */
import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Fs from "node:fs"
import { parentPort } from "node:worker_threads"
import { errorText } from "../errorText.ts"
import { shrinkHeapSoon } from "../heap.ts"
import type { OpenRequest } from "./databaseThread.ts"

/** Copies the template beside the data directory, then renames it into place: a start killed meanwhile left no half database. */
const copyTemplate = (template: string, dataDir: string) => {
  const staging = `${dataDir}.copying`
  Fs.rmSync(staging, { recursive: true, force: true })
  Fs.cpSync(template, staging, { recursive: true })
  Fs.rmSync(dataDir, { recursive: true, force: true })
  Fs.renameSync(staging, dataDir)
}

const create = ({ dataDir, settings, sharedBuffersMb }: OpenRequest) =>
  PGlite.create({
    dataDir,
    extensions: { vector },
    startParams: [
      ...PGlite.defaultStartParams,
      ...Object.entries({ ...settings, shared_buffers: `${sharedBuffersMb}MB` }).flatMap(([name, value]) => [
        "-c",
        `${name}=${value}`
      ])
    ]
  })

/** Opens the database; a new one as a copy of the template if there is one, else (or if that fails) as PGlite makes it. */
const open = async (request: OpenRequest): Promise<{ readonly db: PGlite; readonly templateFailed?: string }> => {
  const { dataDir, template } = request
  const isNew = !Fs.existsSync(dataDir) || Fs.readdirSync(dataDir).length === 0
  if (isNew && template !== undefined && Fs.existsSync(template)) {
    try {
      copyTemplate(template, dataDir)
      return { db: await create(request) }
    } catch (error) {
      // What the copy left is no database: start again from an empty directory.
      Fs.rmSync(dataDir, { recursive: true, force: true })
      return { db: await create(request), templateFailed: errorText(error) }
    }
  }
  return { db: await create(request) }
}

const serve = async (request: OpenRequest) => {
  let step: "open" | "serve" = "open"
  try {
    const { db, templateFailed } = await open(request)
    step = "serve"
    Fs.rmSync(request.socketPath, { force: true })
    const server = new PGLiteSocketServer({ db, path: request.socketPath })
    await server.start()
    Fs.chmodSync(request.socketPath, 0o600)
    parentPort!.on("message", (message: unknown) => {
      if (message !== "close") return
      void server.stop().catch(() => undefined)
        .then(() => db.close().catch(() => undefined))
        .then(() => parentPort!.postMessage({ closed: true }))
    })
    parentPort!.postMessage({ ready: true, templateFailed })
    shrinkHeapSoon()
  } catch (error) {
    parentPort!.postMessage({ failed: step, message: errorText(error) })
  }
}

parentPort!.once("message", (request: OpenRequest) => void serve(request))
