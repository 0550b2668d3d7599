import { Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { JobOut } from "../domain/Job.ts"
import type { UserId } from "../domain/User.ts"
import { Jobs, toJobOut } from "./Jobs.ts"
import { Sources, type SourcesFailure } from "./Sources.ts"

export class SyncNotImplemented extends Data.TaggedError("SyncNotImplemented")<{ readonly message: string }> {}

/** Synchronization of a source with its connector. */
export class Syncs extends Context.Service<Syncs, {
  readonly start: (owner: UserId, sourceId: string) => Effect.Effect<JobOut, SourcesFailure | SyncNotImplemented>
}>()("engram/Syncs") {
  static readonly layer = Layer.effect(
    Syncs,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sources = yield* Sources
      const jobs = yield* Jobs

      /** file_upload has nothing to fetch: a sync resumes the source's paused documents. */
      const resumePending = (owner: UserId, sourceId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const resumed = yield* sql<{ job_id: string | null }>`
            UPDATE documents SET status = 'queued', updated_at = now()
            WHERE source_id = ${sourceId} AND status = 'paused'
            RETURNING job_id`
          const jobIds = resumed.flatMap((row) => (row.job_id === null ? [] : [row.job_id]))
          if (jobIds.length > 0) {
            yield* sql`UPDATE jobs SET status = 'queued', run_after = now(), updated_at = now()
              WHERE id IN ${sql.in(jobIds)} AND status = 'paused'`
          }
          const job = yield* jobs.enqueue({ ownerId: owner, kind: "sync", sourceId })
          yield* jobs.progress(job.id, { done: resumed.length, total: resumed.length })
          yield* jobs.finish(job.id, "succeeded")
          yield* sql`UPDATE sources SET last_synced_at = now() WHERE id = ${sourceId}`
          return job.id
        })).pipe(Effect.orDie)

      const start = Effect.fn("Syncs.start")(function*(owner: UserId, sourceId: string) {
        const source = yield* sources.owned(owner, sourceId)
        if (source.connector_kind !== "file_upload") {
          return yield* new SyncNotImplemented({
            message: `Syncing ${source.connector_kind} sources is not available in this release yet`
          })
        }
        const jobId = yield* resumePending(owner, sourceId)
        yield* jobs.wake
        const job = yield* jobs.find(jobId)
        return toJobOut(job.pipe((o) => (o._tag === "Some" ? o.value : undefined))!)
      })

      return Syncs.of({ start })
    })
  )
}
