import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { scratchDatabase, scratchDir } from "../support/server.ts"
import { login, request } from "../support/http.ts"
import { createSource, upload, waitForDocument } from "../support/ingest.ts"
import { type Engram, exitCode, freePort, listeningUrl, occupiedPort, spawnEngram } from "../support/process.ts"

const noStackTrace = /\n\s+at .+:\d+:\d+/

interface Probe {
  readonly path: string
  /** An HTTP status, "refused" (the port is not open yet) or what else happened (a timeout means it hung). */
  readonly outcome: number | "refused" | string
  readonly code?: string
}

// Generous: while the embedded database opens, the event loop can be busy for many seconds on a loaded machine;
// a late answer is an answer, a hang is not (before the start-up gate, such probes never got one).
const probeTimeoutMs = 90_000

/** One GET on a new connection (as orchestrators probe: no connection reuse), bounded by a generous timeout. */
const probe = (base: string, path: string) =>
  new Promise<Probe>((resolve) => {
    const request = Http.get(base + path, { agent: false, timeout: probeTimeoutMs }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => {
        let code: string | undefined
        try {
          code = (JSON.parse(text) as { error?: { code?: string } }).error?.code
        } catch {
          code = undefined
        }
        resolve({ path, outcome: response.statusCode ?? 0, code })
      })
    })
    request.on("timeout", () => request.destroy(new Error(`no answer within ${probeTimeoutMs} ms`)))
    request.on("error", (error: NodeJS.ErrnoException) =>
      resolve({ path, outcome: error.code === "ECONNREFUSED" ? "refused" : `${error.code ?? ""} ${error.message}` }))
  })

/**
 * Probes health, ready and an ordinary route every 50 ms from spawn until ready answers 200 (or the process
 * exits, or 120 s pass), without waiting for one round before starting the next; returns every outcome.
 */
const probeUntilReady = (engram: Engram, base: string) =>
  Effect.promise(async () => {
    const paths = ["/api/v1/system/health", "/api/v1/system/ready", "/api/v1/sources"]
    const probes: Array<Promise<Probe>> = []
    let ready = false
    const deadline = Date.now() + 120_000
    while (!ready && engram.child.exitCode === null && Date.now() < deadline) {
      for (const path of paths) {
        probes.push(probe(base, path).then((result) => {
          if (result.path === "/api/v1/system/ready" && result.outcome === 200) ready = true
          return result
        }))
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return Promise.all(probes)
  })

// Each test starts real processes; on a loaded machine one start-up can take a minute. Bounds, not timings.
describe("the engram process", { timeout: 300_000 }, () => {
  it.live("a bad setting stops start-up with a message naming the variable and what is allowed", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Record<string, string>, RegExp]> = [
        [{ ENGRAM_PORT: "eighty" }, /ENGRAM_PORT must be an integer from 0 to 65535/],
        [{ ENGRAM_ALLOW_REGISTRATION: "maybe" }, /ENGRAM_ALLOW_REGISTRATION must be one of true, false/],
        [{ ENGRAM_CORS_ORIGINS: "*,https://a.example.com" }, /ENGRAM_CORS_ORIGINS must be \* alone/],
        [{ ENGRAM_LOG_LEVEL: "loud" }, /ENGRAM_LOG_LEVEL must be one of trace/],
        [{ ENGRAM_JWT_SECRET: "short" }, /ENGRAM_JWT_SECRET must be at least 32 characters/],
        [{ DATABASE_URL: "mysql://localhost/db" }, /DATABASE_URL must be a postgres:\/\//]
      ]
      const dataDir = yield* scratchDir
      for (const [env, message] of cases) {
        const engram = yield* spawnEngram({ ENGRAM_DATA_DIR: dataDir, ...env })
        assert.strictEqual(yield* exitCode(engram), 1, JSON.stringify(env))
        assert.match(engram.output(), message)
        assert.notMatch(engram.output(), noStackTrace)
      }
    }).pipe(Effect.scoped))

  it.live("from spawn to ready every probe is answered: health 200, ready 503 not_ready, other routes 503 starting", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: String(port)
      })
      const probes = yield* probeUntilReady(engram, `http://127.0.0.1:${port}`)
      const unanswered = probes.filter((p) => typeof p.outcome === "string" && p.outcome !== "refused")
      assert.deepStrictEqual(unanswered, [], "every connection gets an answer")
      const answered = probes.filter((p) => typeof p.outcome === "number")
      assert.isTrue(answered.some((p) => p.path.endsWith("/ready") && p.outcome === 200), engram.output())
      for (const p of answered) {
        if (p.path.endsWith("/health")) assert.strictEqual(p.outcome, 200)
        if (p.path.endsWith("/ready") && p.outcome !== 200) assert.deepStrictEqual([p.outcome, p.code], [503, "not_ready"])
        if (p.path.endsWith("/sources") && p.outcome !== 401) assert.deepStrictEqual([p.outcome, p.code], [503, "starting"])
      }
    }).pipe(Effect.scoped))

  it.live("a port in use stops start-up naming the address and the settings to change", () =>
    Effect.gen(function*() {
      const port = yield* occupiedPort
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: String(port)
      })
      assert.strictEqual(yield* exitCode(engram), 1)
      const output = engram.output()
      assert.include(output, `engram: Cannot listen on 127.0.0.1:${port}: the address is already in use`)
      assert.include(output, "ENGRAM_PORT")
      assert.include(output, "ENGRAM_HOST")
      assert.notMatch(output, noStackTrace)
    }).pipe(Effect.scoped))

  it.live("a data directory that cannot be created stops start-up naming it and ENGRAM_DATA_DIR", () =>
    Effect.gen(function*() {
      const blocker = Path.join(yield* scratchDir, "a-file")
      Fs.writeFileSync(blocker, "")
      // Under a file, and under /proc (where Node's recursive mkdir never returns).
      for (const dataDir of [Path.join(blocker, "data"), `/proc/engram-${process.pid}-${Date.now()}/data`]) {
        const engram = yield* spawnEngram({ ENGRAM_DATA_DIR: dataDir, ENGRAM_HOST: "127.0.0.1", ENGRAM_PORT: "0" })
        assert.strictEqual(yield* exitCode(engram), 1)
        const output = engram.output()
        assert.include(output, `engram: Cannot create the data directory ${dataDir}`)
        assert.include(output, "Set ENGRAM_DATA_DIR to a directory")
        assert.notMatch(output, noStackTrace)
      }
    }).pipe(Effect.scoped))

  it.live("an unreachable DATABASE_URL stops start-up naming the server (never the password) and what to check", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        DATABASE_URL: `postgres://engram:hunter2-secret@127.0.0.1:${port}/engram`
      })
      assert.strictEqual(yield* exitCode(engram), 1)
      const output = engram.output()
      assert.include(output, `engram: Cannot connect to the PostgreSQL server in DATABASE_URL (127.0.0.1:${port}`)
      assert.include(output, "Check that PostgreSQL runs")
      assert.notInclude(output, "hunter2-secret")
      assert.notMatch(output, noStackTrace)
    }).pipe(Effect.scoped))

  it.live("with name-only login the default host is 127.0.0.1; exposing it on 0.0.0.0 logs a warning", () =>
    Effect.gen(function*() {
      const address = (engram: Engram) =>
        Effect.map(listeningUrl(engram), () => engram.output().match(/"address":"(http:\/\/[^"]+)"/)![1]!)
      const exposure = /name-only login \(ENGRAM_LOCAL_LOGIN=true\) is exposed on 0\.0\.0\.0/
      const local = yield* spawnEngram({ ENGRAM_DATA_DIR: yield* scratchDir, ENGRAM_PORT: "0" })
      assert.match(yield* address(local), /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.notMatch(local.output(), exposure)
      const exposed = yield* spawnEngram({ ENGRAM_DATA_DIR: yield* scratchDir, ENGRAM_HOST: "0.0.0.0", ENGRAM_PORT: "0" })
      assert.match(yield* address(exposed), /^http:\/\/0\.0\.0\.0:\d+$/)
      const warning = exposed.output().split("\n").find((line) => exposure.test(line))
      assert.isDefined(warning, exposed.output())
      assert.strictEqual(JSON.parse(warning!).level, "WARN")
    }).pipe(Effect.scoped))

  it.live("an unknown ENGRAM_* setting is named in a warning with the setting it probably meant", () =>
    Effect.gen(function*() {
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_PROT: "9000",
        ENGRAM_WORKER_CONCURENCY: "4",
        ENGRAM_TEST_DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres"
      })
      yield* listeningUrl(engram)
      const warnings = engram.output().split("\n").filter((line) => line.includes("is not an Engram setting"))
        .map((line) => JSON.parse(line) as { level: string; message: string })
      assert.deepStrictEqual(warnings.map((w) => w.level), ["WARN", "WARN"])
      const text = warnings.map((w) => w.message).join("\n")
      assert.include(text, "ENGRAM_PROT is not an Engram setting and is ignored: did you mean ENGRAM_PORT?")
      assert.include(text, "ENGRAM_WORKER_CONCURENCY is not an Engram setting and is ignored: did you mean ENGRAM_WORKER_CONCURRENCY?")
      assert.notInclude(engram.output(), "ENGRAM_DATA_DIR is not")
      assert.notInclude(engram.output(), "ENGRAM_TEST_DATABASE_URL is not", "the test suite's variables are no settings")
    }).pipe(Effect.scoped))

  it.live("a second process on a data directory in use fails fast and the first keeps serving", () =>
    Effect.gen(function*() {
      const dataDir = yield* scratchDir
      const first = yield* spawnEngram({ ENGRAM_DATA_DIR: dataDir, ENGRAM_HOST: "127.0.0.1", ENGRAM_PORT: "0" })
      const url = yield* listeningUrl(first)
      const second = yield* spawnEngram({ ENGRAM_DATA_DIR: dataDir, ENGRAM_HOST: "127.0.0.1", ENGRAM_PORT: "0" })
      assert.strictEqual(yield* exitCode(second), 1)
      assert.match(second.output(), /is in use by another Engram process \(pid \d+\)/)
      const token = yield* login(url, "Still Here")
      assert.strictEqual((yield* request(url, "/api/v1/auth/me", { token })).status, 200)
    }).pipe(Effect.scoped))

  it.live("a PostgreSQL without pgvector stops start-up with how to install it", () =>
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(Effect.promise(() => PGlite.create()), (db) => Effect.promise(() => db.close()))
      const server = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0 })
          await server.start()
          return server
        }),
        (server) => Effect.promise(() => server.stop())
      )
      const address = server.getServerConn()
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        DATABASE_URL: `postgres://postgres@${address}/postgres`
      })
      assert.strictEqual(yield* exitCode(engram), 1)
      assert.match(engram.output(), /does not have the pgvector extension/)
      assert.match(engram.output(), /setup-postgres-pgvector\.sh/)
    }).pipe(Effect.scoped))

  it.live("logs are JSON lines with the request id, and never contain secrets or tokens", () =>
    Effect.gen(function*() {
      const database = yield* scratchDatabase
      const jwtSecret = "jwt-secret-that-must-never-be-logged-0123456789"
      const dbPassword = "db-password-never-logged"
      const url = new URL(database.url)
      url.password = dbPassword
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_JWT_SECRET: jwtSecret,
        DATABASE_URL: url.toString(),
        ENGRAM_LOG_LEVEL: "debug"
      })
      const base = yield* listeningUrl(engram)
      const token = yield* login(base, "Log Watcher")
      const me = yield* request(base, "/api/v1/auth/me", { token, headers: { "x-request-id": "watch-me-1" } })
      assert.strictEqual(me.status, 200)
      yield* request(base, "/api/v1/auth/me", { token: token + "tampered" })
      engram.child.kill("SIGTERM")
      yield* exitCode(engram)
      const output = engram.output()
      for (const secret of [jwtSecret, dbPassword, token]) assert.notInclude(output, secret)
      const lines = output.trim().split("\n").map((line) => JSON.parse(line))
      const access = lines.find((line) => line.annotations?.request_id === "watch-me-1")
      assert.isDefined(access)
      assert.strictEqual(access.annotations.path, "/api/v1/auth/me")
      assert.strictEqual(access.annotations.status, 200)
    }).pipe(Effect.scoped))

  it.live("a document that fails writes a log line naming the document, its stage and the error code", () =>
    Effect.gen(function*() {
      const engram = yield* spawnEngram({
        ENGRAM_DATA_DIR: yield* scratchDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_LOG_LEVEL: "info"
      })
      const base = yield* listeningUrl(engram)
      const token = yield* login(base, "Failure Watcher")
      const sourceId = yield* createSource(base, token)
      const uploaded = yield* upload(base, token, sourceId, ["libreoffice-writer-password.pdf"])
      assert.strictEqual(uploaded.status, 202, uploaded.text)
      const documentId = uploaded.body.documents[0].id
      const failed = yield* waitForDocument(base, token, sourceId, documentId)
      assert.strictEqual(failed.status, "failed")
      engram.child.kill("SIGTERM")
      yield* exitCode(engram)
      const lines = engram.output().trim().split("\n").map((line) => JSON.parse(line))
      const logged = lines.find((line) => line.message === "job failed" || line.message?.[0] === "job failed")
      assert.isDefined(logged, engram.output())
      assert.strictEqual(logged.annotations.document_id, documentId)
      assert.strictEqual(logged.annotations.source_id, sourceId)
      assert.strictEqual(logged.annotations.stage, failed.error.stage)
      assert.strictEqual(logged.annotations.code, failed.error.code)
    }).pipe(Effect.scoped))

  it.live("after kill -9 a restart on the same data directory takes over the lock and keeps every user", () =>
    Effect.gen(function*() {
      const env = { ENGRAM_DATA_DIR: yield* scratchDir, ENGRAM_HOST: "127.0.0.1", ENGRAM_PORT: "0" }
      const first = yield* spawnEngram(env)
      const id = (yield* request(yield* listeningUrl(first), "/api/v1/auth/login", { json: { name: "Crash Test" } }))
        .body.user.id
      first.child.kill("SIGKILL")
      yield* exitCode(first)
      const second = yield* spawnEngram(env)
      const again = yield* request(yield* listeningUrl(second), "/api/v1/auth/login", { json: { name: "crash test" } })
      assert.strictEqual(again.body.user.id, id)
    }).pipe(Effect.scoped))

  it.live("SIGTERM shuts down cleanly: exit code 0 and the data directory unlocked", () =>
    Effect.gen(function*() {
      const dataDir = yield* scratchDir
      const engram = yield* spawnEngram({ ENGRAM_DATA_DIR: dataDir, ENGRAM_HOST: "127.0.0.1", ENGRAM_PORT: "0" })
      yield* listeningUrl(engram)
      engram.child.kill("SIGTERM")
      assert.strictEqual(yield* exitCode(engram), 0)
      assert.isFalse(Fs.existsSync(Path.join(dataDir, "engram.lock")))
    }).pipe(Effect.scoped))

  it.live("processes starting together on one PostgreSQL database apply each migration once", () =>
    Effect.gen(function*() {
      const database = yield* scratchDatabase
      const engrams = yield* Effect.forEach([1, 2, 3], () =>
        Effect.flatMap(scratchDir, (dir) =>
          spawnEngram({ ENGRAM_DATA_DIR: dir, ENGRAM_HOST: "127.0.0.1", ENGRAM_PORT: "0", DATABASE_URL: database.url })))
      const urls = yield* Effect.forEach(engrams, (engram) => listeningUrl(engram), { concurrency: "unbounded" })
      for (const url of urls) assert.strictEqual((yield* request(url, "/api/v1/system/ready")).status, 200)
      const ids = yield* Effect.forEach(urls, (url) =>
        Effect.map(request(url, "/api/v1/auth/login", { json: { name: "Shared" } }), (reply) => reply.body.user.id))
      assert.strictEqual(new Set(ids).size, 1)
    }).pipe(Effect.scoped))
})
