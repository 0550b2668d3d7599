import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { discardEarly, openDatabase, startEarly } from "../../src/adapters/databaseThread.ts"
import { templatePath } from "../../src/adapters/pgliteTemplate.ts"
import { scratchDir, withServer, freshSettings } from "../support/server.ts"

/** The cluster's identity, set once by initdb: equal in two databases only if one is a copy of the other's origin. */
const systemIdentifier = Effect.gen(function*() {
  const settings = yield* freshSettings("pglite")
  return yield* withServer(settings, ({ sql }) =>
    Effect.gen(function*() {
      const [{ id }] = yield* sql<{ id: string }>`SELECT system_identifier::text AS id FROM pg_control_system()`
      const [{ latest }] = yield* sql<{ latest: number }>`SELECT max(migration_id) AS latest FROM engram_migrations`
      return { id, latest }
    }))
})

/** Opens the embedded database's thread on `dataDir` with `template`; its answer and thread id, then it is closed. */
const openWithTemplate = (dataDir: string, template: string) =>
  Effect.promise(async () => {
    const socketPath = Path.join(Path.dirname(dataDir), "s.sock")
    const { worker, answer } = await openDatabase({ dataDir, socketPath, template, sharedBuffersMb: 32, settings: {} })
    const threadId = worker.threadId
    await new Promise((closed) => {
      worker.once("message", closed)
      worker.postMessage("close")
    })
    await worker.terminate()
    return { answer, threadId }
  })

describe("new embedded databases", { timeout: 180_000 }, () => {
  it.live("start as copies of the installation's template, migrated", () =>
    Effect.gen(function*() {
      assert.isTrue(Fs.existsSync(templatePath()), "the test suite's global set-up makes the template")
      const first = yield* systemIdentifier
      const second = yield* systemIdentifier
      // initdb run in each directory would give each its own identifier.
      assert.strictEqual(first.id, second.id)
      assert.strictEqual(first.latest, second.latest)
    }).pipe(Effect.scoped))

  it.live("a template that cannot be used is reported and the database is made without it", () =>
    Effect.gen(function*() {
      const dir = yield* scratchDir
      const broken = Path.join(dir, "broken-template")
      Fs.mkdirSync(broken)
      Fs.writeFileSync(Path.join(broken, "PG_VERSION"), "9\n")
      const dataDir = Path.join(dir, "pglite")
      const { answer: message } = yield* openWithTemplate(dataDir, broken)
      assert.isTrue("ready" in message && message.ready, JSON.stringify(message))
      assert.isString("ready" in message ? message.templateFailed : undefined)
      // The database PGlite made in its place is whole: reopening it needs no template.
      assert.notStrictEqual(Fs.readFileSync(Path.join(dataDir, "PG_VERSION"), "utf8").trim(), "9")
      const { answer: reopened } = yield* openWithTemplate(dataDir, broken)
      assert.deepStrictEqual(reopened, { ready: true, templateFailed: undefined })
    }).pipe(Effect.scoped))

  it.live("a thread started before the settings are known opens the database it is then told to", () =>
    Effect.gen(function*() {
      const dir = yield* scratchDir
      const unwanted = startEarly()
      discardEarly()
      const early = startEarly()
      assert.notStrictEqual(early, unwanted, "a discarded thread is not handed out")
      assert.strictEqual(startEarly(), early, "one early thread at a time")
      yield* Effect.sleep("300 millis")
      const dataDir = Path.join(dir, "pglite")
      assert.isFalse(Fs.existsSync(dataDir), "it opens nothing before it is told where")
      const { answer, threadId } = yield* openWithTemplate(dataDir, templatePath())
      assert.strictEqual(threadId, early)
      assert.deepStrictEqual(answer, { ready: true, templateFailed: undefined })
      assert.isTrue(Fs.existsSync(Path.join(dataDir, "PG_VERSION")))
    }).pipe(Effect.scoped))
})
