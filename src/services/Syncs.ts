import { Context, Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import { EngramConfig } from "../config.ts"
import { scanFolder } from "../connectors/folder.ts"
import type { Harvest } from "../connectors/Item.ts"
import { crawlWeb } from "../connectors/web.ts"
import type { JobOut } from "../domain/Job.ts"
import type { FolderConfig, WebConfig } from "../domain/Source.ts"
import type { UserId } from "../domain/User.ts"
import { Documents } from "./Documents.ts"
import { type JobRow, Jobs, toJobOut } from "../stores/Jobs.ts"
import { Lifecycle } from "../stores/Lifecycle.ts"
import { Sources, type SourcesFailure } from "./Sources.ts"

/** A sync could not run at all (its folder became unreadable); pages or files it skipped are in its result. */
export class SyncFailure extends Data.TaggedError("SyncFailure")<{ readonly code: string; readonly message: string }> {}

/** Synchronization of a source with its connector. */
export class Syncs extends Context.Service<Syncs, {
  /** file_upload: resumes paused documents at once; web and folder: queues a sync job. */
  readonly start: (owner: UserId, sourceId: string) => Effect.Effect<JobOut, SourcesFailure>
  /** Runs a queued web or folder sync: new or changed items are ingested, vanished ones removed. */
  readonly run: (job: JobRow) => Effect.Effect<"done" | "cancelled", SyncFailure>
}>()("engram/Syncs") {
  static readonly layer = Layer.effect(
    Syncs,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* EngramConfig
      const sources = yield* Sources
      const documents = yield* Documents
      const jobs = yield* Jobs
      const lifecycle = yield* Lifecycle

      const resumePending = (owner: UserId, sourceId: string) =>
        lifecycle.resumeSource(owner, sourceId).pipe(
          Effect.tap(() => sql`UPDATE sources SET last_synced_at = now() WHERE id = ${sourceId}`.pipe(Effect.orDie))
        )

      const start = Effect.fn("Syncs.start")(function*(owner: UserId, sourceId: string) {
        const source = yield* sources.owned(owner, sourceId)
        const jobId = source.connector_kind === "file_upload"
          ? yield* resumePending(owner, sourceId)
          : (yield* jobs.enqueue({ ownerId: owner, kind: "sync", sourceId })).id
        yield* jobs.wake
        const job = yield* jobs.find(jobId)
        if (job._tag === "None") return yield* Effect.die(new Error("the sync job vanished"))
        return toJobOut(job.value)
      })

      const harvest = (kind: string, config: Record<string, unknown>): Effect.Effect<Harvest, SyncFailure> => {
        if (kind === "folder") {
          const folder = config as typeof FolderConfig.Type
          return scanFolder({
            directory: Path.resolve(folder.path),
            recursive: folder.recursive ?? true,
            roots: settings.folderRoots,
            maxBytes: settings.maxUploadBytes
          }).pipe(Effect.mapError((message) => new SyncFailure({ code: "folder_unreadable", message })))
        }
        const web = config as typeof WebConfig.Type
        return crawlWeb({
          urls: web.urls,
          crawlDepth: web.crawl_depth ?? 0,
          maxPages: web.max_pages ?? 100,
          allowPrivate: settings.webAllowPrivate,
          timeoutSeconds: settings.webTimeoutSeconds,
          maxPageBytes: settings.webMaxPageBytes
        })
      }

      const run = Effect.fn("Syncs.run")(function*(job: JobRow) {
        const [source] = yield* sql<{ connector_kind: string; config: Record<string, unknown>; owner_id: string }>`
          SELECT connector_kind, config, owner_id FROM sources WHERE id = ${job.source_id}`.pipe(Effect.orDie)
        if (source === undefined) return "cancelled" as const
        yield* jobs.progress(job.id, { stage: "fetch" })
        const found = yield* harvest(source.connector_kind, source.config)
        yield* jobs.progress(job.id, { stage: "ingest", done: 0, total: found.items.length })
        const counts = { added: 0, updated: 0, unchanged: 0, duplicate: 0 }
        let done = 0
        for (const item of found.items) {
          const outcome = yield* documents.upsertItem(source.owner_id, job.source_id!, { ...item, kind: "file" })
          counts[outcome] += 1
          yield* jobs.progress(job.id, { done: ++done })
          if (outcome === "added" || outcome === "updated") yield* jobs.wake
        }
        const removed = yield* documents.removeMissing(job.source_id!, [
          ...found.items.map((item) => item.key),
          ...found.skipped.map((item) => item.key)
        ])
        yield* jobs.record(job.id, {
          added: counts.added,
          updated: counts.updated,
          unchanged: counts.unchanged,
          duplicates: counts.duplicate,
          removed,
          skipped: found.skipped
        })
        yield* sql`UPDATE sources SET last_synced_at = now() WHERE id = ${job.source_id}`.pipe(Effect.orDie)
        return "done" as const
      })

      return Syncs.of({ start, run })
    })
  )
}
