import { Schema } from "effect"
import { characters, isStorableJson, Text, trimmedTextOf } from "./Text.ts"

export const SourceId = Schema.String.pipe(Schema.brand("SourceId"))
export type SourceId = typeof SourceId.Type

export const ConnectorKind = Schema.Literals(["file_upload", "web", "folder"])
export type ConnectorKind = typeof ConnectorKind.Type

const HttpUrl = Text.check(
  characters(1, 2048),
  Schema.makeFilter((s: string) => {
    try {
      const url = new URL(s)
      return url.protocol === "http:" || url.protocol === "https:"
    } catch {
      return false
    }
  }, { message: "must be an http:// or https:// URL" })
)

export const FileUploadConfig = Schema.Record(
  Schema.String,
  Schema.Never.annotate({ message: "unknown setting: file_upload sources take no config (send {})" })
).annotate({
  identifier: "FileUploadConfig",
  description: "No settings: documents arrive by upload or text ingestion."
})

export const WebConfig = Schema.Struct({
  urls: Schema.Array(HttpUrl).check(Schema.isBetweenLength(1, 100)).annotate({
    description: "Pages to fetch, 1 to 100"
  }),
  crawl_depth: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))).annotate({
    description: "Follow same-site links this many hops from each URL (0 to 3, default 0)"
  }),
  max_pages: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))).annotate({
    description: "Stop after this many pages per sync (1 to 1000, default 100)"
  })
}).annotate({
  identifier: "WebConfig",
  description: "Fetches pages (timeout and size limit) and keeps their main text.",
  messageUnexpectedKey: "unknown setting: web sources take urls, crawl_depth and max_pages"
})

export const FolderConfig = Schema.Struct({
  path: Text.check(characters(1, 4096)).annotate({
    description: "An absolute directory inside one of the roots the operator allows with ENGRAM_FOLDER_ROOTS"
  }),
  recursive: Schema.optionalKey(Schema.Boolean).annotate({ description: "Include subdirectories (default true)" })
}).annotate({
  identifier: "FolderConfig",
  description: "Scans a server-side directory for supported files.",
  messageUnexpectedKey: "unknown setting: folder sources take path and recursive"
})

export const connectorConfigs = {
  file_upload: FileUploadConfig,
  web: WebConfig,
  folder: FolderConfig
} as const

export const SourceStatus = Schema.Literals(["ready", "processing", "degraded"]).annotate({
  description: "processing while any of its documents or a sync is queued or running; otherwise degraded when " +
    "any document failed (the others are searchable; `documents.failed` counts them, list them with " +
    "?status=failed), else ready"
})
export type SourceStatus = typeof SourceStatus.Type

export const SourceDocumentCounts = Schema.Struct({
  queued: Schema.Int,
  processing: Schema.Int,
  paused: Schema.Int,
  ready: Schema.Int,
  failed: Schema.Int
}).annotate({
  identifier: "SourceDocumentCounts",
  description: "The source's documents by status; they add up to document_count"
})
export type SourceDocumentCounts = typeof SourceDocumentCounts.Type

export class SourceOut extends Schema.Class<SourceOut>("SourceOut")({
  id: SourceId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  connector_kind: ConnectorKind,
  config: Schema.Record(Schema.String, Schema.Unknown),
  status: SourceStatus,
  document_count: Schema.Int,
  documents: SourceDocumentCounts,
  chunk_count: Schema.Int.annotate({ description: "Chunks of the documents' current versions" }),
  event_count: Schema.Int,
  created_at: Schema.String,
  updated_at: Schema.String,
  last_synced_at: Schema.NullOr(Schema.String)
}) {}

export const SourceName = trimmedTextOf(1, 200)

export const SourceDescription = Text.check(characters(0, 2000))

/** A connector config as sent; checked against its connector's schema by the Sources service. */
export const ConnectorConfigInput = Schema.Record(Schema.String, Schema.Unknown).check(isStorableJson)
