/**
 * The embedded database's own thread: PGlite (with pgvector) opened on the data directory and served on a unix
 * socket, so that its queries never run on the service's thread and a long one cannot hold up other requests.
 * In: workerData {dataDir, socketPath, template, sharedBuffersMb, settings}: a new database (no directory yet, or an
 * empty one) is a copy of the `template` directory (src/adapters/pgliteTemplate.ts) when that exists, else initialised
 * by PGlite; `settings` are server options (PostgreSQL's `-c`). Out: {ready: true, templateFailed?} once serving
 * (`templateFailed`: why the template could not be used, the database was then initialised without it), or
 * {failed, message} (`failed` says whether opening or serving failed). The message "close" stops serving and closes
 * the database, then {closed}.
 */
import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Fs from "node:fs"
import { parentPort, workerData } from "node:worker_threads"
import { errorText } from "../errorText.ts"
import { shrinkHeapSoon } from "../heap.ts"

const { dataDir, settings, sharedBuffersMb, socketPath, template } = workerData as {
  readonly dataDir: string
  readonly socketPath: string
  readonly template: string | undefined
  /** PostgreSQL's buffer pool, all of it resident in the WebAssembly memory from the start. */
  readonly sharedBuffersMb: number
  /** More server settings (name → value), the defaults of its one session. */
  readonly settings: Readonly<Record<string, string>>
}

const isNew = !Fs.existsSync(dataDir) || Fs.readdirSync(dataDir).length === 0

/** Copies the template beside the data directory, then renames it into place: a start killed meanwhile left no half database. */
const copyTemplate = (template: string) => {
  const staging = `${dataDir}.copying`
  Fs.rmSync(staging, { recursive: true, force: true })
  Fs.cpSync(template, staging, { recursive: true })
  Fs.rmSync(dataDir, { recursive: true, force: true })
  Fs.renameSync(staging, dataDir)
}

const create = () =>
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
const open = async (): Promise<{ readonly db: PGlite; readonly templateFailed?: string }> => {
  if (isNew && template !== undefined && Fs.existsSync(template)) {
    try {
      copyTemplate(template)
      return { db: await create() }
    } catch (error) {
      // What the copy left is no database: start again from an empty directory.
      Fs.rmSync(dataDir, { recursive: true, force: true })
      return { db: await create(), templateFailed: errorText(error) }
    }
  }
  return { db: await create() }
}

let step: "open" | "serve" = "open"
try {
  const { db, templateFailed } = await open()
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
  parentPort!.postMessage({ ready: true, templateFailed })
  shrinkHeapSoon()
} catch (error) {
  parentPort!.postMessage({ failed: step, message: errorText(error) })
}
