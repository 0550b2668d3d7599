import { Cause, Config, Context, Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { EngramConfig } from "../config.ts"
import { Erasure } from "./Erasure.ts"
import type { DocumentStatus, Stage } from "../domain/Document.ts"
import { Graph } from "./Graph.ts"
import { type JobFailure, type JobRow, Jobs } from "./Jobs.ts"
import { LexicalIndex } from "./LexicalIndex.ts"
import { markUniverseChanged } from "./Universe.ts"
import { withGenericPlans } from "./writeTransaction.ts"

export { searchable } from "./Searchable.ts"

/** How a job's run ended without failing: finished, handed back because its document was paused, or superseded. */
export type Outcome = "done" | "paused" | "cancelled"

/** A run that failed; permanent failures (content that will never parse) are not retried. */
export interface RunFailure extends JobFailure {
  readonly permanent: boolean
}

/** The columns of a document as it arrives; its state is the lifecycle's. */
export interface DocumentContent {
  readonly title: string
  readonly kind: "text" | "messages" | "file"
  readonly format: string
  readonly mimeType: string
  readonly bytes: Uint8Array
  readonly contentHash: string
  readonly date: Date | null
}

/** An action on a document: done, no such document, or not allowed from the document's current status. */
export type ActionResult =
  | { readonly _tag: "done" }
  | { readonly _tag: "missing" }
  | { readonly _tag: "refused"; readonly status: DocumentStatus }

/** The statuses each user action is allowed from. */
export const allowedFrom: Record<"pause" | "resume" | "reprocess", ReadonlyArray<DocumentStatus>> = {
  pause: ["queued", "processing"],
  resume: ["paused"],
  reprocess: ["ready", "failed"]
}

/**
 * Chunk-steps after each stage: every chunk is extracted, embedded and indexed, so a document job's progress
 * total is 3 × its chunks (known once chunked) and done reaches total when the document becomes ready.
 */
const stepsAfter: Record<Stage, number> = { parse: 0, chunk: 0, extract: 1, embed: 2, index: 3 }
export const stepsPerChunk = 3

/** A stage a worker has just finished; `chunks` once the chunk stage knows how many. */
export interface FinishedStage {
  readonly stage: Stage
  readonly chunks?: number | undefined
}

const done: ActionResult = { _tag: "done" }
const missing: ActionResult = { _tag: "missing" }

/**
 * The one owner of document and job state. Every change of a document's status (queued, processing, paused,
 * ready, failed, removed) and of a job's status is one of these transitions, each one transaction that also
 * keeps the job, the lexical statistics and the graph counts in step, so a crash between any two leaves a
 * document and its job in agreeing states.
 *
 * Test hook: ENGRAM_TEST_CRASH_AFTER=<transition> (queue, enter:<stage>, activate, pause, resume,
 * retry, fail, remove) makes the process SIGKILL itself right after that transition commits. Only the crash
 * tests and scripts/reliability-crash.ts set it. ENGRAM_TEST_HOLD_AFTER=<transition> instead holds the fiber there
 * until it is interrupted (the shutdown tests stop a process with a job certainly in progress).
 */
export class Lifecycle extends Context.Service<Lifecycle, {
  /** A new document, its original bytes and its ingest job; None when the source already holds the same bytes. */
  readonly queue: (input: {
    readonly ownerId: string
    readonly sourceId: string
    readonly content: DocumentContent
    readonly externalKey: string | null
  }) => Effect.Effect<Option.Option<string>>
  readonly pause: (sourceId: string, documentId: string) => Effect.Effect<ActionResult>
  readonly resume: (sourceId: string, documentId: string) => Effect.Effect<ActionResult>
  /** Resumes every paused document of the source; answers the (finished) sync job that records it. */
  readonly resumeSource: (ownerId: string, sourceId: string) => Effect.Effect<string>
  /** A new version of a ready or failed document, built by a reprocess job. */
  readonly reprocess: (ownerId: string, sourceId: string, documentId: string) => Effect.Effect<ActionResult>
  /** A connector found changed content: it replaces the original and is reprocessed, whatever the state. */
  readonly replace: (ownerId: string, sourceId: string, documentId: string, content: DocumentContent) => Effect.Effect<
    "updated" | "duplicate"
  >
  /** Deletes the source's documents among `documentIds`, cancelling their jobs; answers what went. */
  readonly remove: (sourceId: string, documentIds: ReadonlyArray<string>) => Effect.Effect<{
    readonly documents: number
    readonly chunks: number
  }>
  /** Deletes a source with its documents and jobs (cascades) and every copy of its text elsewhere; answers what went. */
  readonly removeSource: (sourceId: string) => Effect.Effect<{
    readonly documents: number
    readonly chunks: number
    readonly jobs: number
  }>
  /**
   * A worker starts `stage`, having finished `finished` (the stage before it in this run; `chunks` once the chunk
   * stage knows how many): one commit for both. An outcome when the job must stop instead (paused, superseded,
   * already done); the finished stage is recorded either way, so a resumed job does not redo it.
   */
  readonly enter: (job: JobRow, stage: Stage, finished?: FinishedStage) => Effect.Effect<Outcome | undefined>
  /** The job's version becomes the searchable one, the previous is dropped, and the job succeeds: one commit. */
  readonly activate: (job: JobRow) => Effect.Effect<Outcome>
  /** Writes how a claimed job's run ended: succeeded, handed back, retried later, failed or cancelled. */
  readonly settle: (job: JobRow, exit: Exit.Exit<Outcome, RunFailure>) => Effect.Effect<void>
  /** Start-up repair of rows an older release left disagreeing (a ready document whose job never finished). */
  readonly reconcile: Effect.Effect<number>
}>()("engram/Lifecycle") {
  static readonly layer = Layer.effect(
    Lifecycle,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* EngramConfig
      const jobs = yield* Jobs
      const lexical = yield* LexicalIndex
      const graph = yield* Graph
      const erasure = yield* Erasure
      const crashAfter = yield* Config.option(Config.String("ENGRAM_TEST_CRASH_AFTER"))
      const holdAfter = yield* Config.option(Config.String("ENGRAM_TEST_HOLD_AFTER"))

      /** The test hooks: dies like kill -9, or waits until interrupted, right after the named transition committed. */
      const committed = (transition: string) =>
        Option.isSome(crashAfter) && crashAfter.value === transition
          ? Effect.sync(() => process.kill(process.pid, "SIGKILL"))
          : Option.isSome(holdAfter) && holdAfter.value === transition
          ? Effect.never
          : Effect.void

      /**
       * One commit. Transactions take the rows they share in one order, so that two of them wait for each other
       * instead of deadlocking: document rows, the source's graph turn (Graph), entity rows (in id order), the
       * source's term rows (in term order), its lexical totals, its universe mark. The later in that order, the more
       * of the source's documents share the row: taken last, it is held only until the commit.
       */
      const transition = <A>(name: string, body: Effect.Effect<A, unknown>) =>
        withGenericPlans(sql, body).pipe(Effect.orDie, Effect.tap(() => committed(name)))

      /** The one way a document's unfinished jobs are cancelled: queued, paused or running, lease cleared. */
      const cancelJobs = (documentIds: ReadonlyArray<string>) =>
        sql`
          UPDATE jobs SET status = 'cancelled', stage = NULL, lease_owner = NULL, lease_expires_at = NULL,
            finished_at = now(), updated_at = now()
          WHERE document_id IN ${sql.in(documentIds)} AND status IN ('queued', 'running', 'paused')`

      /** A version number no derived row or job of the document uses yet. */
      const nextVersion = (documentId: string) =>
        sql<{ next: number }>`
          SELECT coalesce(max(version), 0) + 1 AS next FROM (
            SELECT version FROM chunks WHERE document_id = ${documentId}
            UNION ALL SELECT version FROM document_parses WHERE document_id = ${documentId}
            UNION ALL SELECT coalesce(document_version, 0) FROM jobs WHERE document_id = ${documentId}
            UNION ALL SELECT coalesce(active_version, 0) FROM documents WHERE id = ${documentId}
          ) v`.pipe(Effect.map((rows) => rows[0]!.next))

      const lockDocument = (sourceId: string, documentId: string) =>
        sql<{ status: DocumentStatus; job_id: string | null }>`
          SELECT status, job_id FROM documents WHERE id = ${documentId} AND source_id = ${sourceId} FOR UPDATE`
          .pipe(Effect.map((rows) => rows[0]))

      /** Takes the document out of search (if it was in) and queues a reprocess job building a new version. */
      const requeue = (ownerId: string, sourceId: string, documentId: string, status: DocumentStatus) =>
        Effect.gen(function*() {
          yield* cancelJobs([documentId])
          if (status === "ready") {
            yield* lexical.count(documentId, -1)
            yield* markUniverseChanged(sql, sourceId)
          }
          const job = yield* jobs.enqueue({
            ownerId,
            kind: "reprocess",
            sourceId,
            documentId,
            documentVersion: yield* nextVersion(documentId)
          })
          yield* sql`
            UPDATE documents SET status = 'queued', stage = 'parse', job_id = ${job.id},
              error_code = NULL, error_message = NULL, error_stage = NULL, updated_at = now()
            WHERE id = ${documentId}`
        })

      const queue = Effect.fn("Lifecycle.queue")(function*(input: {
        readonly ownerId: string
        readonly sourceId: string
        readonly content: DocumentContent
        readonly externalKey: string | null
      }) {
        const { content, sourceId } = input
        return yield* transition(
          "queue",
          Effect.gen(function*() {
            const [inserted] = yield* sql<{ id: string }>`
              INSERT INTO documents
                (source_id, title, kind, format, mime_type, size_bytes, content_hash, external_key, status, stage,
                  document_date)
              VALUES (${sourceId}, ${content.title}, ${content.kind}, ${content.format}, ${content.mimeType},
                ${content.bytes.length}, ${content.contentHash}, ${input.externalKey}, 'queued', 'parse', ${content.date})
              ON CONFLICT (source_id, content_hash) DO NOTHING
              RETURNING id`
            if (inserted === undefined) return Option.none<string>()
            yield* sql`INSERT INTO document_originals (document_id, content) VALUES (${inserted.id}, ${content.bytes})`
            const job = yield* jobs.enqueue({
              ownerId: input.ownerId,
              kind: "ingest",
              sourceId,
              documentId: inserted.id,
              documentVersion: 1
            })
            yield* sql`UPDATE documents SET job_id = ${job.id} WHERE id = ${inserted.id}`
            return Option.some(inserted.id)
          })
        )
      })

      /** A user action: locks the document, checks the status it is allowed from, then applies `change`. */
      const act = (
        name: keyof typeof allowedFrom,
        sourceId: string,
        documentId: string,
        change: (current: { readonly status: DocumentStatus; readonly job_id: string | null }) => Effect.Effect<
          unknown,
          unknown
        >
      ) =>
        transition(
          name,
          Effect.gen(function*() {
            const current = yield* lockDocument(sourceId, documentId)
            if (current === undefined) return missing
            if (!allowedFrom[name].includes(current.status)) {
              return { _tag: "refused", status: current.status } satisfies ActionResult
            }
            yield* change(current)
            return done
          })
        )

      // A running job is left running: its worker sees the pause when it enters the next stage and hands it back.
      const pause = Effect.fn("Lifecycle.pause")((sourceId: string, documentId: string) =>
        act("pause", sourceId, documentId, (current) =>
          Effect.gen(function*() {
            yield* sql`UPDATE documents SET status = 'paused', updated_at = now() WHERE id = ${documentId}`
            if (current.job_id !== null) {
              yield* sql`UPDATE jobs SET status = 'paused', updated_at = now()
                WHERE id = ${current.job_id} AND status = 'queued'`
            }
          })))

      const resumeJobs = (jobIds: ReadonlyArray<string>) =>
        jobIds.length === 0 ? Effect.void : sql`
          UPDATE jobs SET status = 'queued', run_after = now(), updated_at = now()
          WHERE id IN ${sql.in(jobIds)} AND status = 'paused'`.pipe(Effect.asVoid)

      // A job still running (its worker has not reached the next stage) simply carries on.
      const resume = Effect.fn("Lifecycle.resume")((sourceId: string, documentId: string) =>
        act("resume", sourceId, documentId, (current) =>
          Effect.gen(function*() {
            yield* sql`UPDATE documents SET status = 'queued', updated_at = now() WHERE id = ${documentId}`
            yield* resumeJobs(current.job_id === null ? [] : [current.job_id])
          })))

      const resumeSource = Effect.fn("Lifecycle.resumeSource")((ownerId: string, sourceId: string) =>
        transition(
          "resume",
          Effect.gen(function*() {
            const resumed = yield* sql<{ job_id: string | null }>`
              UPDATE documents SET status = 'queued', updated_at = now()
              WHERE source_id = ${sourceId} AND status = 'paused'
              RETURNING job_id`
            yield* resumeJobs(resumed.flatMap((row) => (row.job_id === null ? [] : [row.job_id])))
            const job = yield* jobs.enqueue({ ownerId, kind: "sync", sourceId })
            yield* sql`
              UPDATE jobs SET status = 'succeeded', progress_done = ${resumed.length},
                progress_total = ${resumed.length}, result = ${JSON.stringify({ resumed: resumed.length })}::jsonb,
                started_at = now(), finished_at = now(), updated_at = now()
              WHERE id = ${job.id}`
            return job.id
          })
        ))

      const reprocess = Effect.fn("Lifecycle.reprocess")((ownerId: string, sourceId: string, documentId: string) =>
        act("reprocess", sourceId, documentId, (current) => requeue(ownerId, sourceId, documentId, current.status)))

      const replace = Effect.fn("Lifecycle.replace")(
        (ownerId: string, sourceId: string, documentId: string, content: DocumentContent) =>
          transition(
            "reprocess",
            Effect.gen(function*() {
              const current = yield* lockDocument(sourceId, documentId)
              const clash = yield* sql`
                SELECT 1 FROM documents WHERE source_id = ${sourceId} AND content_hash = ${content.contentHash}`
              if (current === undefined || clash.length > 0) return "duplicate" as const
              yield* requeue(ownerId, sourceId, documentId, current.status)
              yield* sql`UPDATE document_originals SET content = ${content.bytes} WHERE document_id = ${documentId}`
              yield* sql`
                UPDATE documents SET title = ${content.title}, format = ${content.format},
                  mime_type = ${content.mimeType}, size_bytes = ${content.bytes.length},
                  content_hash = ${content.contentHash}, document_date = ${content.date}
                WHERE id = ${documentId}`
              return "updated" as const
            })
          )
      )

      const remove = Effect.fn("Lifecycle.remove")((sourceId: string, documentIds: ReadonlyArray<string>) =>
        documentIds.length === 0 ? Effect.succeed({ documents: 0, chunks: 0 }) : transition(
          "remove",
          Effect.gen(function*() {
            const rows = yield* sql<{ id: string; status: DocumentStatus; chunks: number }>`
              SELECT d.id, d.status, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)::int AS chunks
              FROM documents d WHERE d.source_id = ${sourceId} AND d.id IN ${sql.in(documentIds)}
              ORDER BY d.id FOR UPDATE`
            if (rows.length === 0) return { documents: 0, chunks: 0 }
            const ids = rows.map((row) => row.id)
            yield* cancelJobs(ids)
            yield* graph.removeDocuments(ids)
            for (const row of rows) if (row.status === "ready") yield* lexical.count(row.id, -1)
            yield* markUniverseChanged(sql, sourceId)
            yield* erasure.forgetDocuments(ids)
            yield* sql`DELETE FROM documents WHERE id IN ${sql.in(ids)}`
            return { documents: rows.length, chunks: rows.reduce((sum, row) => sum + row.chunks, 0) }
          })
        ))

      // A worker still running one of its jobs finds its document gone when it settles, and cancels the job.
      const removeSource = Effect.fn("Lifecycle.removeSource")((sourceId: string) =>
        transition(
          "remove",
          Effect.gen(function*() {
            const [counts] = yield* sql<{ documents: number; chunks: number; jobs: number }>`
              SELECT
                (SELECT count(*) FROM documents WHERE source_id = ${sourceId})::int AS documents,
                (SELECT count(*) FROM chunks WHERE source_id = ${sourceId})::int AS chunks,
                (SELECT count(*) FROM jobs WHERE source_id = ${sourceId})::int AS jobs`
            yield* erasure.forgetSource(sourceId)
            yield* sql`DELETE FROM sources WHERE id = ${sourceId}`
            return counts!
          })
        ))

      /** Why a job may not go on with its document: superseded or gone, paused, or already activated. */
      const stopReason = (
        job: JobRow,
        document: { readonly status: DocumentStatus; readonly job_id: string | null } | undefined
      ): Outcome | undefined => {
        if (document === undefined || document.job_id !== job.id || document.status === "failed") return "cancelled"
        if (document.status === "ready") return "done"
        if (document.status === "paused") return "paused"
        return undefined
      }

      const lockForJob = (job: JobRow) =>
        sql<{ status: DocumentStatus; job_id: string | null; source_id: string }>`
          SELECT status, job_id, source_id FROM documents WHERE id = ${job.document_id} FOR UPDATE`.pipe(
          Effect.map((rows) => rows[0])
        )

      const enter = Effect.fn("Lifecycle.enter")((job: JobRow, stage: Stage, finished?: FinishedStage) =>
        transition(
          `enter:${stage}`,
          Effect.gen(function*() {
            const document = yield* lockForJob(job)
            if (finished !== undefined) {
              const { chunks } = finished
              yield* sql`
                UPDATE jobs SET completed_stage = ${finished.stage},
                  progress_total = ${chunks === undefined ? sql`progress_total` : chunks * stepsPerChunk},
                  progress_done = ${
                chunks === undefined ? sql`(progress_total / ${stepsPerChunk}) * ${stepsAfter[finished.stage]}` : 0
              },
                  updated_at = now()
                WHERE id = ${job.id}`
            }
            const stop = stopReason(job, document)
            if (stop !== undefined) return stop
            yield* sql`UPDATE documents SET status = 'processing', stage = ${stage}, updated_at = now()
              WHERE id = ${job.document_id}`
            yield* sql`UPDATE jobs SET stage = ${stage}, updated_at = now() WHERE id = ${job.id}`
            return undefined
          })
        ))

      const activate = Effect.fn("Lifecycle.activate")((job: JobRow) =>
        transition(
          "activate",
          Effect.gen(function*() {
            const documentId = job.document_id!
            const version = job.document_version ?? 1
            const document = yield* lockForJob(job)
            const stop = stopReason(job, document)
            if (stop !== undefined) return stop
            yield* sql`
              UPDATE documents SET active_version = ${version}, status = 'ready', stage = NULL, ready_at = now(),
                chunk_count = (SELECT count(*) FROM chunks WHERE document_id = ${documentId} AND version = ${version}),
                error_code = NULL, error_message = NULL, error_stage = NULL, updated_at = now()
              WHERE id = ${documentId}`
            yield* sql`DELETE FROM chunks WHERE document_id = ${documentId} AND version <> ${version}`
            yield* sql`DELETE FROM document_parses WHERE document_id = ${documentId} AND version <> ${version}`
            // The rows every document of the source writes come last (see transition).
            yield* graph.activate(documentId, version)
            yield* lexical.count(documentId, 1)
            yield* markUniverseChanged(sql, document.source_id)
            yield* sql`
              UPDATE jobs SET status = 'succeeded', stage = NULL, completed_stage = 'index',
                progress_done = progress_total, error_code = NULL, error_message = NULL, error_stage = NULL,
                lease_owner = NULL, lease_expires_at = NULL, finished_at = now(), updated_at = now()
              WHERE id = ${job.id}`
            return "done" as const
          })
        ))

      /** Only the worker still holding the job may write how its run ended. */
      const held = (job: JobRow) => sql`id = ${job.id} AND status = 'running' AND lease_owner = ${job.lease_owner}`

      const finish = (job: JobRow, status: "succeeded" | "cancelled") =>
        sql`
          UPDATE jobs SET status = ${status}, stage = NULL,
            progress_done = CASE WHEN ${status} = 'succeeded' THEN progress_total ELSE progress_done END,
            error_code = CASE WHEN ${status} = 'succeeded' THEN NULL ELSE error_code END,
            error_message = CASE WHEN ${status} = 'succeeded' THEN NULL ELSE error_message END,
            error_stage = CASE WHEN ${status} = 'succeeded' THEN NULL ELSE error_stage END,
            lease_owner = NULL, lease_expires_at = NULL, finished_at = now(), updated_at = now()
          WHERE ${held(job)}`

      // Handed back for a pause (if the document was resumed meanwhile the job goes straight back to the queue), or
      // by a worker that stops: queued with its lease cleared, so another worker takes it at once.
      const handBack = (job: JobRow, status: "queued" | "paused") =>
        sql.withTransaction(Effect.gen(function*() {
          const updated = yield* sql<{ status: string }>`
            UPDATE jobs SET
              status = CASE WHEN ${status} = 'paused'
                AND EXISTS (SELECT 1 FROM documents d WHERE d.job_id = jobs.id AND d.status = 'paused')
                THEN 'paused' ELSE 'queued' END,
              lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
            WHERE ${held(job)}
            RETURNING status`
          if (updated[0]?.status === "queued" && job.document_id !== null) {
            yield* sql`UPDATE documents SET status = 'queued', updated_at = now()
              WHERE id = ${job.document_id} AND job_id = ${job.id} AND status = 'processing'`
          }
        }))

      const retry = (job: JobRow, delaySeconds: number, error: RunFailure) =>
        transition(
          "retry",
          Effect.gen(function*() {
            const updated = yield* sql`
              UPDATE jobs SET status = 'queued', attempts = attempts + 1,
                run_after = now() + make_interval(secs => ${delaySeconds}),
                error_code = ${error.code}, error_message = ${error.message}, error_stage = ${error.stage},
                lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
              WHERE ${held(job)}
              RETURNING id`
            if (updated.length > 0 && job.document_id !== null) {
              yield* sql`UPDATE documents SET status = 'queued', updated_at = now()
                WHERE id = ${job.document_id} AND job_id = ${job.id} AND status = 'processing'`
            }
          })
        )

      const fail = (job: JobRow, error: RunFailure) =>
        transition(
          "fail",
          Effect.gen(function*() {
            const updated = yield* sql`
              UPDATE jobs SET status = 'failed', attempts = attempts + 1,
                error_code = ${error.code}, error_message = ${error.message}, error_stage = ${error.stage},
                lease_owner = NULL, lease_expires_at = NULL, finished_at = now(), updated_at = now()
              WHERE ${held(job)}
              RETURNING id`
            if (updated.length > 0 && job.document_id !== null) {
              yield* sql`
                UPDATE documents SET status = 'failed', stage = NULL, error_code = ${error.code},
                  error_message = ${error.message}, error_stage = ${error.stage}, updated_at = now()
                WHERE id = ${job.document_id} AND job_id = ${job.id}`
            }
          })
        )

      const settle = Effect.fn("Lifecycle.settle")(function*(job: JobRow, exit: Exit.Exit<Outcome, RunFailure>) {
        if (Exit.isSuccess(exit)) {
          if (exit.value === "paused") return yield* handBack(job, "paused").pipe(Effect.orDie)
          return yield* finish(job, exit.value === "done" ? "succeeded" : "cancelled").pipe(Effect.orDie)
        }
        if (Cause.hasInterruptsOnly(exit.cause)) return yield* handBack(job, "queued").pipe(Effect.orDie)
        const failure = Cause.findErrorOption(exit.cause)
        if (Option.isNone(failure)) yield* Effect.logError("job failed unexpectedly", exit.cause)
        const error: RunFailure = Option.getOrElse(failure, () => ({
          code: "internal_error",
          message: "An internal error interrupted processing; it is in the server log",
          stage: job.stage,
          permanent: false
        }))
        const stillExists = job.document_id === null ||
          (yield* sql`SELECT 1 FROM documents WHERE id = ${job.document_id}`.pipe(Effect.orDie)).length > 0
        if (!stillExists) return yield* finish(job, "cancelled").pipe(Effect.orDie)
        const failures = job.attempts + 1
        if (!error.permanent && failures < settings.jobMaxAttempts) {
          const delay = Math.min(2 ** failures, 300)
          yield* Effect.logWarning("job will be retried").pipe(
            Effect.annotateLogs({ job_id: job.id, failures, retry_in_s: delay, code: error.code })
          )
          return yield* retry(job, delay, error)
        }
        const final = error.permanent ? error : { ...error, message: `${error.message} (gave up after ${failures} attempts)` }
        yield* fail(job, final)
        yield* Effect.logWarning("job failed").pipe(Effect.annotateLogs({
          job_id: job.id,
          document_id: job.document_id,
          source_id: job.source_id,
          stage: final.stage,
          code: final.code,
          attempts: failures
        }))
      })

      const reconcile = sql.withTransaction(Effect.gen(function*() {
        const finished = yield* sql`
          UPDATE jobs SET status = 'succeeded', stage = NULL, completed_stage = 'index', progress_done = progress_total,
            lease_owner = NULL, lease_expires_at = NULL, finished_at = coalesce(finished_at, now()), updated_at = now()
          WHERE status IN ('queued', 'running', 'paused')
            AND EXISTS (SELECT 1 FROM documents d WHERE d.job_id = jobs.id AND d.status = 'ready')
          RETURNING id`
        return finished.length
      })).pipe(Effect.orDie, Effect.withSpan("Lifecycle.reconcile"))

      return Lifecycle.of({
        queue,
        pause,
        resume,
        resumeSource,
        reprocess,
        replace,
        remove,
        removeSource,
        enter,
        activate,
        settle,
        reconcile
      })
    })
  ).pipe(Layer.provide(Erasure.layer))
}
