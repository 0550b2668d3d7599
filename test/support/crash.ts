import { Effect, Exit } from "effect"
import { login, request } from "./http.ts"
import { createSource, ingestText, upload, waitForDocument } from "./ingest.ts"
import { spawnEngram, exitCode, listeningUrl } from "./process.ts"
import { defaultSettings, type Engine, scratchDatabase, scratchDir, withServer } from "./server.ts"

/**
 * Every transition a document's ingestion commits, in order (entering a stage also records the one before it;
 * activation records the last); ENGRAM_TEST_CRASH_AFTER names one of them.
 */
export const ingestionTransitions = [
  "queue",
  "enter:parse",
  "enter:chunk",
  "enter:extract",
  "enter:embed",
  "activate"
] as const

export interface CrashOutcome {
  readonly transition: string
  /** The process died by SIGKILL from the hook (else the transition was never reached). */
  readonly killed: boolean
  readonly documentStatus: string | null
  readonly jobStatus: string | null
  readonly jobFinished: boolean
  readonly progress: { readonly done: number; readonly total: number } | null
  readonly attempts: number | null
  readonly chunkCount: number
  /** Chunk ordinals of the active version are 0..n-1 with no repeat, and no other version is left. */
  readonly chunksExact: boolean
  /** BM25 statistics count the document's chunks once: it became searchable exactly once. */
  readonly readyOnce: boolean
  /** Unfinished jobs of the document once it is ready or failed: 0 unless a job is stuck. */
  readonly stuckJobs: number
}

/** Document and job agree: ready with its job succeeded and complete, chunks exact, counted once, nothing stuck. */
export const consistent = (outcome: CrashOutcome) =>
  outcome.documentStatus === "ready" && outcome.jobStatus === "succeeded" && outcome.jobFinished &&
  outcome.progress !== null && outcome.progress.total > 0 && outcome.progress.done === outcome.progress.total &&
  outcome.chunkCount > 0 && outcome.chunksExact && outcome.readyOnce && outcome.stuckJobs === 0

const text = "# Plan\n\n" + Array.from({ length: 30 }, (_, i) => `The river engine ledger number ${i} turns.`).join(" ") +
  "\n\n## Risks\n\n" + Array.from({ length: 30 }, (_, i) => `The quartz lantern signal number ${i} fades.`).join(" ")

/**
 * Starts Engram with ENGRAM_TEST_CRASH_AFTER=transition, ingests one document so the process kills itself (-9)
 * right after that transition commits, restarts it without the hook, waits for the document to finish, and
 * reads what the document and its job ended as, through the API and then the database.
 */
export const crashAt = (engine: Engine, transition: string) =>
  Effect.gen(function*() {
    const dataDir = yield* scratchDir
    const databaseUrl = engine === "postgres" ? (yield* scratchDatabase).url : undefined
    const env = {
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_HOST: "127.0.0.1",
      ENGRAM_PORT: "0",
      ENGRAM_JOB_LEASE_SECONDS: "2",
      ENGRAM_CHUNK_TOKENS: "64",
      ENGRAM_WORKER_CONCURRENCY: "1",
      ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl })
    }
    const first = yield* spawnEngram({ ...env, ENGRAM_TEST_CRASH_AFTER: transition })
    const firstUrl = yield* listeningUrl(first, 90_000)
    const token = yield* login(firstUrl, "Crashy")
    const sourceId = yield* createSource(firstUrl, token)
    // The "queue" hook kills the process before it answers: the request fails, the document must still exist.
    yield* Effect.exit(ingestText(firstUrl, token, sourceId, "Plan", text))
    yield* exitCode(first, 60_000)
    const killed = first.child.signalCode === "SIGKILL"
    if (!killed) first.child.kill("SIGKILL")
    yield* exitCode(first)

    const second = yield* spawnEngram(env)
    const url = yield* listeningUrl(second, 90_000)
    const listed = yield* request(url, `/api/v1/sources/${sourceId}/documents`, { token })
    const found = listed.body.items[0] as { id: string } | undefined
    const document = found === undefined
      ? undefined
      : yield* waitForDocument(url, token, sourceId, found.id).pipe(Effect.exit, Effect.map(Exit.getSuccess))
    const done = document === undefined || document._tag === "None" ? undefined : document.value
    const job = done === undefined || done.job_id === null
      ? undefined
      : (yield* request(url, `/api/v1/jobs/${done.job_id}`, { token })).body
    const output = done === undefined
      ? undefined
      : (yield* request(url, `/api/v1/sources/${sourceId}/documents/${done.id}/parse-output`, { token })).body
    second.child.kill("SIGTERM")
    yield* exitCode(second)

    const ordinals: Array<number> = output?.chunks.map((c: { ordinal: number }) => c.ordinal) ?? []
    const stored = yield* withServer(
      { ...defaultSettings(dataDir, databaseUrl), workerConcurrency: 0 },
      ({ sql }) =>
        Effect.gen(function*() {
          if (done === undefined) return { chunks: 0, counted: 0, stuck: 0 }
          const [chunks] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM chunks WHERE document_id = ${done.id}`
          const [counted] = yield* sql<{ n: number }>`
            SELECT coalesce(sum(chunk_count), 0)::int AS n FROM lexical_stats WHERE source_id = ${sourceId}`
          const [stuck] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM jobs WHERE document_id = ${done.id} AND status IN ('queued', 'running', 'paused')`
          return { chunks: chunks!.n, counted: counted!.n, stuck: stuck!.n }
        }).pipe(Effect.orDie)
    )
    return {
      transition,
      killed,
      documentStatus: done?.status ?? null,
      jobStatus: job?.status ?? null,
      jobFinished: typeof job?.finished_at === "string",
      progress: job?.progress ?? null,
      attempts: job?.attempts ?? null,
      chunkCount: done?.chunk_count ?? 0,
      chunksExact: ordinals.length === done?.chunk_count && ordinals.every((o, i) => o === i) &&
        stored.chunks === ordinals.length,
      readyOnce: stored.counted === ordinals.length,
      stuckJobs: stored.stuck
    } satisfies CrashOutcome
  }).pipe(Effect.scoped)

/** Transitions a user or a failure triggers, each with what document and job must end as after the restart. */
export const actionTransitions = {
  pause: { document: "ready", job: "succeeded" },
  resume: { document: "ready", job: "succeeded" },
  reprocess: { document: "ready", job: "succeeded" },
  fail: { document: "failed", job: "failed" },
  remove: { document: "deleted", job: "cancelled" }
} as const

export interface ActionCrashOutcome {
  readonly transition: keyof typeof actionTransitions
  readonly killed: boolean
  /** Document and job status right after the restart, before anything else is asked of the service. */
  readonly afterRestart: { readonly document: string; readonly job: string | null }
  readonly documentStatus: string
  readonly jobStatus: string | null
  readonly jobFinished: boolean
  readonly chunksExact: boolean
  readonly readyOnce: boolean
  readonly stuckJobs: number
}

/**
 * Like crashAt, for the transitions of user actions and failures: pause and resume (of a queued document),
 * reprocess (of a ready one), remove, and fail (an upload that can never parse). After the restart the document
 * and its job must agree at once, and, the paused document resumed, end as `actionTransitions` says.
 */
export const crashAtAction = (engine: Engine, transition: keyof typeof actionTransitions) =>
  Effect.gen(function*() {
    const dataDir = yield* scratchDir
    const databaseUrl = engine === "postgres" ? (yield* scratchDatabase).url : undefined
    const env = {
      ENGRAM_DATA_DIR: dataDir,
      ENGRAM_HOST: "127.0.0.1",
      ENGRAM_PORT: "0",
      ENGRAM_JOB_LEASE_SECONDS: "2",
      ENGRAM_CHUNK_TOKENS: "64",
      ENGRAM_WORKER_CONCURRENCY: "1",
      ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl })
    }
    // Pause and resume act on a queued document: without workers it stays queued until the restart.
    const idle = transition === "pause" || transition === "resume" || transition === "remove"
    const first = yield* spawnEngram({
      ...env,
      ENGRAM_TEST_CRASH_AFTER: transition,
      ...(idle ? { ENGRAM_WORKER_CONCURRENCY: "0" } : {})
    })
    const firstUrl = yield* listeningUrl(first, 90_000)
    const token = yield* login(firstUrl, "Crashy")
    const sourceId = yield* createSource(firstUrl, token)
    const accepted = transition === "fail"
      ? yield* upload(firstUrl, token, sourceId, [{ name: "broken.pdf", bytes: new TextEncoder().encode("%PDF-1.7 nothing") }])
        .pipe(Effect.map((reply) => reply.body[0] ?? reply.body.documents?.[0]))
      : (yield* ingestText(firstUrl, token, sourceId, "Plan", text)).body
    const documentId = accepted.id as string
    const base = `/api/v1/sources/${sourceId}/documents/${documentId}`
    const act = (action: string) => Effect.exit(request(firstUrl, `${base}/${action}`, { method: "POST", token }))
    if (transition === "pause") yield* act("pause")
    if (transition === "resume") yield* Effect.andThen(act("pause"), act("resume"))
    if (transition === "reprocess") {
      yield* waitForDocument(firstUrl, token, sourceId, documentId)
      yield* act("reprocess")
    }
    if (transition === "remove") yield* Effect.exit(request(firstUrl, base, { method: "DELETE", token }))
    yield* exitCode(first, 60_000)
    const killed = first.child.signalCode === "SIGKILL"
    if (!killed) first.child.kill("SIGKILL")
    yield* exitCode(first)

    const second = yield* spawnEngram(env)
    const url = yield* listeningUrl(second, 90_000)
    const state = Effect.gen(function*() {
      const document = yield* request(url, base, { token })
      const jobId = document.status === 200 ? document.body.job_id : accepted.job_id
      const job = jobId === null ? undefined : (yield* request(url, `/api/v1/jobs/${jobId}`, { token })).body
      return {
        document: document.status === 404 ? "deleted" : document.body.status as string,
        job: job?.status ?? null as string | null,
        jobFinished: typeof job?.finished_at === "string"
      }
    })
    const afterRestart = yield* state
    if (afterRestart.document === "paused") yield* request(url, `${base}/resume`, { method: "POST", token })
    if (afterRestart.document !== "deleted") yield* waitForDocument(url, token, sourceId, documentId)
    // A finished document's job is settled in the same commit, except a worker's last write of a cancelled run.
    let final = yield* state
    for (let i = 0; i < 100 && ["queued", "running", "paused"].includes(final.job ?? ""); i++) {
      yield* Effect.sleep("100 millis")
      final = yield* state
    }
    const output = final.document === "ready" ? (yield* request(url, `${base}/parse-output`, { token })).body : undefined
    second.child.kill("SIGTERM")
    yield* exitCode(second)

    const ordinals: Array<number> = output?.chunks.map((c: { ordinal: number }) => c.ordinal) ?? []
    const stored = yield* withServer(
      { ...defaultSettings(dataDir, databaseUrl), workerConcurrency: 0 },
      ({ sql }) =>
        Effect.gen(function*() {
          const [chunks] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM chunks WHERE document_id = ${documentId}`
          const [counted] = yield* sql<{ n: number }>`
            SELECT coalesce(sum(chunk_count), 0)::int AS n FROM lexical_stats WHERE source_id = ${sourceId}`
          const [stuck] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM jobs WHERE document_id = ${documentId} AND status IN ('queued', 'running', 'paused')`
          return { chunks: chunks!.n, counted: counted!.n, stuck: stuck!.n }
        }).pipe(Effect.orDie)
    )
    return {
      transition,
      killed,
      afterRestart: { document: afterRestart.document, job: afterRestart.job },
      documentStatus: final.document,
      jobStatus: final.job,
      jobFinished: final.jobFinished,
      chunksExact: ordinals.every((o, i) => o === i) && stored.chunks === ordinals.length,
      readyOnce: stored.counted === ordinals.length,
      stuckJobs: stored.stuck
    } satisfies ActionCrashOutcome
  }).pipe(Effect.scoped)

/** The job statuses that agree with each document status (a running job may not have seen a pause yet). */
export const agreeing: Record<string, ReadonlyArray<string>> = {
  queued: ["queued", "running"],
  processing: ["running", "queued"],
  paused: ["paused", "running"],
  ready: ["succeeded"],
  failed: ["failed"],
  deleted: ["cancelled"]
}

/** Agreeing at restart, and ending as the action's transition says, with nothing duplicated or stuck. */
export const actionConsistent = (outcome: ActionCrashOutcome) => {
  const expected = actionTransitions[outcome.transition]
  return (agreeing[outcome.afterRestart.document] ?? []).includes(outcome.afterRestart.job ?? "") &&
    outcome.documentStatus === expected.document && outcome.jobStatus === expected.job && outcome.jobFinished &&
    outcome.stuckJobs === 0 && outcome.chunksExact && outcome.readyOnce
}
