import { Schema } from "effect"
import { ProcessingError } from "./Document.ts"

export const JobKind = Schema.Literals(["ingest", "reprocess", "sync", "reindex"])
export type JobKind = typeof JobKind.Type

export const JobStatus = Schema.Literals(["queued", "running", "paused", "succeeded", "failed", "cancelled"])
export type JobStatus = typeof JobStatus.Type

export class JobOut extends Schema.Class<JobOut>("JobOut")({
  id: Schema.String,
  kind: JobKind,
  source_id: Schema.NullOr(Schema.String),
  document_id: Schema.NullOr(Schema.String),
  status: JobStatus,
  stage: Schema.NullOr(Schema.String),
  progress: Schema.Struct({ done: Schema.Int, total: Schema.Int }),
  attempts: Schema.Int,
  error: Schema.NullOr(ProcessingError),
  result: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)).annotate({
    description: "What a finished sync did: added, updated, unchanged, duplicates, removed, skipped [{key, reason}]"
  }),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
}) {}
