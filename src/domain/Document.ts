import { Schema } from "effect"
import { readInstant } from "./Instant.ts"
import { SourceId } from "./Source.ts"
import { characters, Text, trimmedTextOf } from "./Text.ts"

export const DocumentId = Schema.String.pipe(Schema.brand("DocumentId"))
export type DocumentId = typeof DocumentId.Type

export const DocumentKind = Schema.Literals(["text", "messages", "file"])

export const DocumentStatus = Schema.Literals(["queued", "processing", "paused", "ready", "failed"]).annotate({
  description: "queued → processing → ready | failed; queued/processing → paused → queued (resume); " +
    "ready/failed → queued (reprocess)"
})
export type DocumentStatus = typeof DocumentStatus.Type

export const Stage = Schema.Literals(["parse", "chunk", "extract", "embed", "index"])
export type Stage = typeof Stage.Type
export const stages: ReadonlyArray<Stage> = ["parse", "chunk", "extract", "embed", "index"]

export const ProcessingError = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  stage: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ProcessingError" })

export class DocumentOut extends Schema.Class<DocumentOut>("DocumentOut")({
  id: DocumentId,
  source_id: SourceId,
  title: Schema.String,
  kind: DocumentKind,
  mime_type: Schema.String,
  size_bytes: Schema.Int,
  content_hash: Schema.String.annotate({ description: "sha256 of the original content, hex" }),
  status: DocumentStatus,
  stage: Schema.NullOr(Stage).annotate({ description: "The stage running or next to run; null when ready" }),
  error: Schema.NullOr(ProcessingError),
  chunk_count: Schema.Int.annotate({ description: "Chunks of the searchable version" }),
  searchable: Schema.Boolean.annotate({
    description: "Search returns it: true exactly when status is ready (every stage of its current version finished)"
  }),
  duplicate: Schema.Boolean.annotate({
    description: "true when this request's content was already in the source: the existing document is returned"
  }),
  job_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  ready_at: Schema.NullOr(Schema.String),
  date: Schema.NullOr(Schema.String).annotate({ description: "The document's own date, as given at ingestion" })
}) {}

/**
 * An ISO-8601 date ("2024-05-01", midnight UTC) or date-time ("2024-05-01T10:00:00Z"; without an offset, UTC) of a
 * real day in the years 1 to 9999 (`readInstant`).
 */
export const IsoDateTime = Text.check(Schema.makeFilter((s: string) => readInstant(s) !== undefined, {
  message: "must be an ISO-8601 date-time such as 2024-05-01T10:00:00Z, of a real day in the years 0001 to 9999"
}))

/**
 * Who wrote a message: a name on one line. A line break in it reads as another speaker's line in the conversation's
 * text ("Mallory\nAlice: …" lost its event), and a blank one names nobody.
 */
export const SpeakerName = Text.check(
  characters(1, 200),
  Schema.makeFilter((s: string) =>
    s.trim() === ""
      ? "must not be blank"
      : /[\p{Cc}\u2028\u2029]/u.test(s)
      ? "must be one line, without control characters"
      : true
  )
)

export const MessageItem = Schema.Struct({
  speaker: Schema.optionalKey(SpeakerName).annotate({
    description: "Who wrote it, e.g. a person's name"
  }),
  role: Schema.optionalKey(Schema.Literals(["user", "assistant", "system", "tool"])).annotate({
    description: "Chat role, used as the speaker when speaker is absent"
  }),
  content: Text.check(characters(1, 100_000)),
  timestamp: Schema.optionalKey(IsoDateTime).annotate({
    description: "When it was written (ISO-8601); anchors relative times in it"
  })
}).annotate({ identifier: "MessageItem" })
export type MessageItem = typeof MessageItem.Type

export const IngestRequest = Schema.Struct({
  title: trimmedTextOf(1, 500),
  text: Schema.optionalKey(Text.check(Schema.isMinCodePoints(1, { message: "must not be empty" }))),
  messages: Schema.optionalKey(Schema.Array(MessageItem).check(Schema.isBetweenLength(1, 10_000))),
  date: Schema.optionalKey(IsoDateTime).annotate({
    description: "The document's own date (when it was published, written or held; ISO-8601). Relative times in " +
      "its text (\"last Tuesday\", \"two years later\") are resolved against it; without it only message " +
      "timestamps and explicit dates anchor times."
  })
}).check(
  Schema.makeFilter((request) => (request.text === undefined) !== (request.messages === undefined), {
    message: "send exactly one of text or messages"
  })
).annotate({ identifier: "IngestRequest" })
