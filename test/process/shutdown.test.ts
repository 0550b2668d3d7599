import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { startChatServer } from "../support/chatServer.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { exitCode, listeningUrl, spawnEngram } from "../support/process.ts"
import { defaultSettings, scratchDatabase, scratchDir, withServer } from "../support/server.ts"

const text = "# Plan\n\n" + Array.from({ length: 30 }, (_, i) => `The river engine ledger number ${i} turns.`).join(" ") +
  "\n\n## Risks\n\n" + Array.from({ length: 30 }, (_, i) => `The quartz lantern signal number ${i} fades.`).join(" ")

interface JobState {
  readonly status: string
  readonly lease_owner: string | null
  readonly lease_expires_at: Date | null
  readonly attempts: number
  readonly completed_stage: string | null
  readonly document_status: string
}

/** The document's job and status as stored, read with the service stopped (no workers in the reading process). */
const storedJob = (dataDir: string, databaseUrl: string | undefined, documentId: string) =>
  withServer({ ...defaultSettings(dataDir, databaseUrl), workerConcurrency: 0 }, ({ sql }) =>
    sql<JobState>`
      SELECT j.status, j.lease_owner, j.lease_expires_at, j.attempts, j.completed_stage, d.status AS document_status
      FROM jobs j JOIN documents d ON d.job_id = j.id WHERE d.id = ${documentId}`.pipe(
      Effect.orDie,
      Effect.map((rows) => rows[0]!)
    ))

/** Polls `check` every 100 ms until it holds, at most `ms`. */
const eventually = (what: string, check: () => Promise<boolean>, ms = 60_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      if (await check()) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`timed out waiting until ${what}`)
  })

const documentState = (url: string, token: string, sourceId: string, documentId: string) =>
  fetch(`${url}/api/v1/sources/${sourceId}/documents/${documentId}`, { headers: { authorization: `Bearer ${token}` } })
    .then((response) => response.json() as Promise<{ status: string; stage: string | null }>)

for (const engine of ["pglite", "postgres"] as const) {
  describe(`SIGTERM during an ingest (${engine})`, () => {
    it.live("the job in progress is handed back (queued, lease cleared), the process exits 0, a restart finishes it", () =>
      Effect.gen(function*() {
        const dataDir = yield* scratchDir
        const databaseUrl = engine === "postgres" ? (yield* scratchDatabase).url : undefined
        const env = {
          ENGRAM_DATA_DIR: dataDir,
          ENGRAM_HOST: "127.0.0.1",
          ENGRAM_PORT: "0",
          ENGRAM_CHUNK_TOKENS: "64",
          ENGRAM_WORKER_CONCURRENCY: "1",
          // A lease far longer than the test: the job can only move on because it was handed back.
          ENGRAM_JOB_LEASE_SECONDS: "600",
          ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl })
        }
        const first = yield* spawnEngram({ ...env, ENGRAM_TEST_HOLD_AFTER: "enter:embed" })
        const firstUrl = yield* listeningUrl(first)
        const token = yield* login(firstUrl, "Stopper")
        const sourceId = yield* createSource(firstUrl, token)
        const accepted = yield* ingestText(firstUrl, token, sourceId, "Plan", text)
        assert.strictEqual(accepted.status, 202, accepted.text)
        const documentId = accepted.body.id as string
        yield* eventually("the worker holds the job in its embed stage", () =>
          documentState(firstUrl, token, sourceId, documentId).then((d) => d.status === "processing" && d.stage === "embed"))

        first.child.kill("SIGTERM")
        assert.strictEqual(yield* exitCode(first, 30_000), 0, first.output())
        assert.include(first.output(), "engram stopping")

        const stored = yield* storedJob(dataDir, databaseUrl, documentId)
        assert.strictEqual(stored.status, "queued", "handed back to the queue")
        assert.isNull(stored.lease_owner, "lease released")
        assert.isNull(stored.lease_expires_at, "lease released")
        assert.strictEqual(stored.attempts, 0, "a hand-back is no failed attempt")
        assert.strictEqual(stored.completed_stage, "extract", "the finished stages are kept")
        assert.strictEqual(stored.document_status, "queued")

        const second = yield* spawnEngram(env)
        const url = yield* listeningUrl(second)
        const done = yield* waitForDocument(url, token, sourceId, documentId)
        assert.strictEqual(done.status, "ready")
        const job = yield* request(url, `/api/v1/jobs/${done.job_id}`, { token })
        assert.strictEqual(job.body.status, "succeeded")
        assert.strictEqual(job.body.attempts, 0)
        second.child.kill("SIGTERM")
        assert.strictEqual(yield* exitCode(second, 30_000), 0, second.output())
      }).pipe(Effect.scoped), 180_000)
  })
}

describe("SIGTERM hands a job to another process at once (postgres)", () => {
  it.live("a second process finishes the held job long before its 600 s lease would lapse", () =>
    Effect.gen(function*() {
      const { url: databaseUrl } = yield* scratchDatabase
      const env = {
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_CHUNK_TOKENS: "64",
        ENGRAM_WORKER_CONCURRENCY: "1",
        ENGRAM_JOB_LEASE_SECONDS: "600",
        ENGRAM_JWT_SECRET: randomBytes(32).toString("hex"),
        DATABASE_URL: databaseUrl
      }
      const first = yield* spawnEngram({ ...env, ENGRAM_DATA_DIR: yield* scratchDir, ENGRAM_TEST_HOLD_AFTER: "enter:embed" })
      const firstUrl = yield* listeningUrl(first)
      const token = yield* login(firstUrl, "Handover")
      const sourceId = yield* createSource(firstUrl, token)
      const accepted = yield* ingestText(firstUrl, token, sourceId, "Plan", text)
      const documentId = accepted.body.id as string
      yield* eventually("the first process holds the job in its embed stage", () =>
        documentState(firstUrl, token, sourceId, documentId).then((d) => d.status === "processing" && d.stage === "embed"))

      // Started only now, so the job is certainly the first process's, under a lease that has not lapsed.
      const second = yield* spawnEngram({ ...env, ENGRAM_DATA_DIR: yield* scratchDir })
      const url = yield* listeningUrl(second)
      first.child.kill("SIGTERM")
      assert.strictEqual(yield* exitCode(first, 30_000), 0, first.output())
      const done = yield* waitForDocument(url, token, sourceId, documentId)
      assert.strictEqual(done.status, "ready")
      const job = yield* request(url, `/api/v1/jobs/${done.job_id}`, { token })
      assert.strictEqual(job.body.status, "succeeded")
      assert.strictEqual(job.body.attempts, 0, "taken over as handed back, not as a lapsed lease")
    }).pipe(Effect.scoped), 180_000)
})

interface SseEvent {
  readonly event: string
  readonly data: any
}

/** Reads a text/event-stream response to its end, calling `onEvent` for each event as it arrives. */
const readEvents = async (response: Response, onEvent: (event: SseEvent) => void) => {
  const events: Array<SseEvent> = []
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return events
    buffer += decoder.decode(value, { stream: true })
    let boundary: number
    while ((boundary = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, boundary)
      buffer = buffer.slice(boundary + 2)
      const event = { event: block.match(/^event: (.*)$/m)?.[1] ?? "message", data: JSON.parse(block.match(/^data: (.*)$/m)?.[1] ?? "null") }
      events.push(event)
      onEvent(event)
    }
  }
}

/** A process whose agent answers through a stand-in model that stops mid-answer until `release` is called. */
const answeringEngram = (shutdownTimeoutSeconds: number) =>
  Effect.gen(function*() {
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    const chat = yield* Effect.acquireRelease(
      Effect.promise(() =>
        startChatServer({
          reply: () => Array.from({ length: 20 }, (_, i) => `word${i}`).join(" "),
          holdAfter: { pieces: 3, until: released }
        })
      ),
      (chat) => Effect.promise(() => (release(), chat.close()))
    )
    const engram = yield* spawnEngram({
      ENGRAM_DATA_DIR: yield* scratchDir,
      ENGRAM_HOST: "127.0.0.1",
      ENGRAM_PORT: "0",
      ENGRAM_LLM_BASE_URL: chat.url,
      ENGRAM_LLM_MODEL: "stand-in-chat",
      ENGRAM_LLM_MAX_RETRIES: "0",
      ENGRAM_SHUTDOWN_TIMEOUT_SECONDS: String(shutdownTimeoutSeconds)
    })
    const url = yield* listeningUrl(engram)
    const token = yield* login(url, "Listener")
    const sourceId = yield* createSource(url, token)
    const accepted = yield* ingestText(url, token, sourceId, "ducks", "Mallards feed at the water surface in ponds.")
    yield* waitForDocument(url, token, sourceId, accepted.body.id)
    const agent = yield* request(url, "/api/v1/agents", {
      token,
      json: { name: "Naturalist", instructions: "Answer briefly.", source_ids: [sourceId] }
    })
    assert.strictEqual(agent.status, 201, agent.text)
    const response = yield* Effect.promise(() =>
      fetch(`${url}/api/v1/agents/${agent.body.id}/ask`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ question: "Where do mallards feed?", stream: true })
      })
    )
    assert.strictEqual(response.status, 200)
    return { engram, url, response, release }
  })

const refusesConnections = (url: string) =>
  fetch(`${url}/api/v1/system/health`, { signal: AbortSignal.timeout(2000) }).then(() => false, () => true)

describe("SIGTERM during a streaming answer (pglite)", () => {
  it.live("new connections are refused, the stream in flight finishes with done (completed), the process exits 0", () =>
    Effect.gen(function*() {
      const { engram, url, response, release } = yield* answeringEngram(20)
      let refused: Promise<boolean> | undefined
      const events = yield* Effect.promise(() =>
        readEvents(response, (event) => {
          if (event.event !== "delta" || refused !== undefined) return
          engram.child.kill("SIGTERM")
          // The answer is held until the port refuses connections, so it finishes during the shutdown.
          refused = Effect.runPromise(eventually("the port refuses connections", () => refusesConnections(url), 15_000))
            .then(() => true, () => false)
            .finally(release)
        })
      )
      assert.isTrue(yield* Effect.promise(() => refused ?? Promise.resolve(false)), "new connections were refused")
      const last = events[events.length - 1]!
      assert.strictEqual(last.event, "done", "the stream says how it ended")
      assert.strictEqual(last.data.status, "completed", "the answer was allowed to finish")
      assert.include(last.data.answer, "word19")
      assert.strictEqual(yield* exitCode(engram, 30_000), 0, engram.output())
    }).pipe(Effect.scoped), 180_000)

  it.live("a stream still running when the shutdown timeout nears ends with done (cancelled), the process exits 0", () =>
    Effect.gen(function*() {
      const { engram, response } = yield* answeringEngram(2)
      let signalled = false
      const events = yield* Effect.promise(() =>
        readEvents(response, (event) => {
          if (event.event !== "delta" || signalled) return
          signalled = true
          engram.child.kill("SIGTERM")
        })
      )
      const last = events[events.length - 1]!
      assert.strictEqual(last.event, "done", "the stream says how it ended")
      assert.strictEqual(last.data.status, "cancelled")
      assert.strictEqual(yield* exitCode(engram, 30_000), 0, engram.output())
    }).pipe(Effect.scoped), 180_000)
})
