import { Context, Effect, Layer, Option, Queue, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { JobKind, JobOut, JobStatus } from "../domain/Job.ts"
import { currentTraceParent } from "../observability/Tracing.ts"

export const JobRow = Schema.Struct({
  id: Schema.String,
  owner_id: Schema.NullOr(Schema.String),
  kind: JobKind,
  source_id: Schema.NullOr(Schema.String),
  document_id: Schema.NullOr(Schema.String),
  document_version: Schema.NullOr(Schema.Int),
  status: JobStatus,
  stage: Schema.NullOr(Schema.String),
  completed_stage: Schema.NullOr(Schema.String),
  progress_done: Schema.Int,
  progress_total: Schema.Int,
  attempts: Schema.Int,
  lease_owner: Schema.NullOr(Schema.String),
  error_code: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  error_stage: Schema.NullOr(Schema.String),
  result: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)),
  trace_parent: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  started_at: Schema.NullOr(Schema.Date),
  finished_at: Schema.NullOr(Schema.Date)
})
export type JobRow = typeof JobRow.Type

/**
 * Takes the next job for `worker`, fair between owners: the owner with the fewest live jobs goes first, then the
 * oldest job (a job taken back from a lapsed lease, its worker dead, counts as a failed attempt; a handed-back one
 * does not). Bounded by the number of owners with queued jobs, never by the queue's length: the owners are found by
 * stepping through the queued-jobs index one owner at a time, and each owner's next job is that index's first entry
 * for them (migration 0020). Locked candidates are skipped, so workers claiming at once take different jobs.
 */
export const claimStatement = (sql: SqlClient.SqlClient, worker: string, leaseSeconds: number) =>
  sql`
    UPDATE jobs SET
      status = 'running',
      lease_owner = ${worker},
      lease_expires_at = now() + make_interval(secs => ${leaseSeconds}),
      attempts = attempts + CASE WHEN status = 'running' THEN 1 ELSE 0 END,
      started_at = coalesce(started_at, now()),
      updated_at = now()
    WHERE id = (
      WITH RECURSIVE owners AS (
        (SELECT coalesce(owner_id, '') AS owner FROM jobs WHERE status = 'queued' ORDER BY 1 LIMIT 1)
        UNION ALL
        SELECT (
          SELECT coalesce(j.owner_id, '') FROM jobs j
          WHERE j.status = 'queued' AND coalesce(j.owner_id, '') > o.owner
          ORDER BY 1 LIMIT 1
        ) FROM owners o WHERE o.owner IS NOT NULL
      ), queued AS (
        SELECT next.* FROM owners o CROSS JOIN LATERAL (
          SELECT j.id, j.owner_id, j.run_after, j.created_at FROM jobs j
          WHERE j.status = 'queued' AND coalesce(j.owner_id, '') = o.owner AND j.run_after <= now()
          ORDER BY j.run_after, j.created_at, j.id
          LIMIT 1
          FOR UPDATE SKIP LOCKED
        ) next
        WHERE o.owner IS NOT NULL
      ), lapsed AS (
        SELECT id, owner_id, run_after, created_at FROM jobs
        WHERE status = 'running' AND lease_expires_at < now()
        FOR UPDATE SKIP LOCKED
      ), busy AS (
        SELECT coalesce(owner_id, '') AS owner, count(*) AS running FROM jobs
        WHERE status = 'running' AND lease_expires_at >= now()
        GROUP BY 1
      )
      SELECT c.id FROM (SELECT * FROM queued UNION ALL SELECT * FROM lapsed) c
      LEFT JOIN busy b ON b.owner = coalesce(c.owner_id, '')
      ORDER BY coalesce(b.running, 0), c.run_after, c.created_at, c.id
      LIMIT 1
    )
    RETURNING *`

export interface JobFailure {
  readonly code: string
  readonly message: string
  readonly stage: string | null
}

const iso = (date: Date | null) => (date === null ? null : date.toISOString())

export const toJobOut = (row: JobRow) =>
  new JobOut({
    id: row.id,
    kind: row.kind,
    source_id: row.source_id,
    document_id: row.document_id,
    status: row.status,
    stage: row.stage,
    progress: { done: row.progress_done, total: row.progress_total },
    attempts: row.attempts,
    error: row.error_code === null
      ? null
      : { code: row.error_code, message: row.error_message ?? "", stage: row.error_stage },
    result: row.result,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at)
  })

/**
 * The job-row store. Status changes are the Lifecycle's transitions; this service inserts, claims and renews.
 * Durable jobs: rows claimed with FOR UPDATE SKIP LOCKED under a lease the worker renews. A job whose lease
 * lapses (the process died) is claimed again; its stages are idempotent, so nothing is duplicated.
 */
export class Jobs extends Context.Service<Jobs, {
  readonly enqueue: (input: {
    readonly ownerId: string | null
    readonly kind: typeof JobKind.Type
    readonly sourceId?: string | null
    readonly documentId?: string | null
    readonly documentVersion?: number | null
  }) => Effect.Effect<JobRow>
  readonly claim: (worker: string, leaseSeconds: number) => Effect.Effect<Option.Option<JobRow>>
  /** Extends the lease; false when the job is no longer this worker's (cancelled, paused, or taken over). */
  readonly renew: (jobId: string, worker: string, leaseSeconds: number) => Effect.Effect<boolean>
  /** Progress of a running sync or reindex job (a document job's progress moves with its Lifecycle transitions). */
  readonly progress: (jobId: string, update: {
    readonly stage?: string | null
    readonly done?: number
    readonly total?: number
  }) => Effect.Effect<void>
  /** Merges `entries` into the job's result, key by key (a stage adds what it read without rewriting the rest). */
  readonly record: (jobId: string, entries: Record<string, unknown>) => Effect.Effect<void>
  readonly find: (jobId: string) => Effect.Effect<Option.Option<JobRow>>
  readonly findForOwner: (jobId: string, ownerId: string) => Effect.Effect<Option.Option<JobRow>>
  /** Wakes idle workers in this process; others poll. */
  readonly wake: Effect.Effect<void>
  readonly wakeups: Queue.Dequeue<void>
}>()("engram/Jobs") {
  static readonly layer = Layer.effect(
    Jobs,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const wakeups = yield* Queue.sliding<void>(1)

      const insert = SqlSchema.findOne({
        Request: Schema.Struct({
          owner_id: Schema.NullOr(Schema.String),
          kind: JobKind,
          source_id: Schema.NullOr(Schema.String),
          document_id: Schema.NullOr(Schema.String),
          document_version: Schema.NullOr(Schema.Int),
          trace_parent: Schema.NullOr(Schema.String)
        }),
        Result: JobRow,
        execute: (row) => sql`INSERT INTO jobs ${sql.insert({ ...row, status: "queued" })} RETURNING *`
      })

      const claimOne = SqlSchema.findOneOption({
        Request: Schema.Struct({ worker: Schema.String, lease: Schema.Int }),
        Result: JobRow,
        execute: ({ worker, lease }) => claimStatement(sql, worker, lease)
      })

      const byId = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: JobRow,
        execute: (id) => sql`SELECT * FROM jobs WHERE id = ${id}`
      })

      const byIdForOwner = SqlSchema.findOneOption({
        Request: Schema.Struct({ id: Schema.String, owner: Schema.String }),
        Result: JobRow,
        execute: ({ id, owner }) => sql`SELECT * FROM jobs WHERE id = ${id} AND owner_id = ${owner}`
      })

      const wake = Queue.offer(wakeups, undefined).pipe(Effect.asVoid)

      return Jobs.of({
        enqueue: Effect.fn("Jobs.enqueue")(function*(input) {
          return yield* insert({
            owner_id: input.ownerId,
            kind: input.kind,
            source_id: input.sourceId ?? null,
            document_id: input.documentId ?? null,
            document_version: input.documentVersion ?? null,
            trace_parent: yield* currentTraceParent
          }).pipe(Effect.orDie)
        }),
        claim: Effect.fn("Jobs.claim")((worker, leaseSeconds) =>
          claimOne({ worker, lease: leaseSeconds }).pipe(Effect.orDie)
        ),
        renew: Effect.fn("Jobs.renew")((jobId, worker, leaseSeconds) =>
          sql<{ id: string }>`
            UPDATE jobs SET lease_expires_at = now() + make_interval(secs => ${leaseSeconds}), updated_at = now()
            WHERE id = ${jobId} AND lease_owner = ${worker} AND status = 'running'
            RETURNING id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)
        ),
        progress: Effect.fn("Jobs.progress")(function*(jobId, update) {
          yield* sql`
            UPDATE jobs SET
              stage = ${update.stage === undefined ? sql`stage` : update.stage},
              progress_done = ${update.done === undefined ? sql`progress_done` : update.done},
              progress_total = ${update.total === undefined ? sql`progress_total` : update.total},
              updated_at = now()
            WHERE id = ${jobId}`.pipe(Effect.orDie)
        }),
        record: Effect.fn("Jobs.record")(function*(jobId, entries) {
          yield* sql`
            UPDATE jobs SET result = coalesce(result, '{}'::jsonb) || ${JSON.stringify(entries)}::jsonb, updated_at = now()
            WHERE id = ${jobId}`.pipe(Effect.orDie)
        }),
        find: (jobId) => byId(jobId).pipe(Effect.orDie),
        findForOwner: (jobId, ownerId) => byIdForOwner({ id: jobId, owner: ownerId }).pipe(Effect.orDie),
        wake,
        wakeups
      })
    })
  )
}
