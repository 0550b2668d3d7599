import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { createHash } from "node:crypto"
import { ChunkMessage, ChunkOut } from "../domain/Chunk.ts"
import { DocumentId, DocumentOut, type DocumentStatus, DocumentStatus as Status, type MessageItem, Stage } from "../domain/Document.ts"
import { instantOf } from "../domain/Instant.ts"
import { CursorTime, cursorTimeFormat, PageCursor, takePage, TimeKey } from "../domain/Page.ts"
import { SourceId } from "../domain/Source.ts"
import type { UserId } from "../domain/User.ts"
import type { Block } from "../ingest/Parsed.ts"
import { detectFormat, type Format, mimeTypes } from "../ingest/parse/formats.ts"
import { Jobs } from "../stores/Jobs.ts"
import { allowedFrom, type DocumentContent, Lifecycle } from "../stores/Lifecycle.ts"
import { Sources, type SourcesFailure } from "./Sources.ts"

export type DocumentsError =
  | { readonly _tag: "DocumentNotFound" }
  | { readonly _tag: "ActionNotAllowed"; readonly message: string }
  | { readonly _tag: "UnsupportedType"; readonly message: string }
  | { readonly _tag: "InvalidCursor" }

export class DocumentsFailure extends Data.TaggedError("DocumentsFailure")<{ readonly reason: DocumentsError }> {}

const fail = (reason: DocumentsError) => Effect.fail(new DocumentsFailure({ reason }))

const DocumentRow = Schema.Struct({
  id: DocumentId,
  source_id: SourceId,
  title: Schema.String,
  kind: Schema.Literals(["text", "messages", "file"]),
  format: Schema.String,
  mime_type: Schema.String,
  size_bytes: Schema.Int,
  content_hash: Schema.String,
  status: Status,
  stage: Schema.NullOr(Stage),
  error_code: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  error_stage: Schema.NullOr(Schema.String),
  job_id: Schema.NullOr(Schema.String),
  active_version: Schema.NullOr(Schema.Int),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  ready_at: Schema.NullOr(Schema.Date),
  document_date: Schema.NullOr(Schema.Date),
  chunk_count: Schema.Int,
  position: Schema.String
})
type DocumentRow = typeof DocumentRow.Type

const documentsCursor = PageCursor("documents", TimeKey)

/** Source chunks are in document order (oldest first), then by position in the document. */
const chunksCursor = PageCursor(
  "chunks",
  Schema.Struct({ at: CursorTime, document_id: Schema.String, ordinal: Schema.Int })
)

const toDocumentOut = (row: DocumentRow, duplicate = false) =>
  new DocumentOut({
    id: row.id,
    source_id: row.source_id,
    title: row.title,
    kind: row.kind,
    mime_type: row.mime_type,
    size_bytes: row.size_bytes,
    content_hash: row.content_hash,
    status: row.status,
    stage: row.stage,
    error: row.error_code === null
      ? null
      : { code: row.error_code, message: row.error_message ?? "", stage: row.error_stage },
    chunk_count: row.chunk_count,
    searchable: row.status === "ready",
    duplicate,
    job_id: row.job_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ready_at: row.ready_at?.toISOString() ?? null,
    date: row.document_date?.toISOString() ?? null
  })

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

export interface NewDocument {
  readonly title: string
  readonly kind: "text" | "messages" | "file"
  readonly format: Format
  readonly bytes: Uint8Array
  /** The document's own date (ISO-8601), which anchors relative times in its text. */
  readonly date?: string | undefined
}

export interface UploadedFile {
  readonly name: string
  readonly bytes: Uint8Array
}

const ChunkRow = Schema.Struct({
  id: Schema.String,
  document_id: Schema.String,
  source_id: Schema.String,
  ordinal: Schema.Int,
  text: Schema.String,
  token_count: Schema.Int,
  section_path: Schema.Array(Schema.String),
  char_start: Schema.Int,
  char_end: Schema.Int,
  speaker: Schema.NullOr(Schema.String),
  spoken_at: Schema.NullOr(Schema.Date),
  spoken_until: Schema.NullOr(Schema.Date),
  messages: Schema.Array(ChunkMessage),
  /** The document's creation time, the first sort value of source chunks. */
  position: Schema.String
})

const toChunkOut = ({ position: _, ...row }: typeof ChunkRow.Type) =>
  new ChunkOut({
    ...row,
    spoken_at: row.spoken_at?.toISOString() ?? null,
    spoken_until: row.spoken_until?.toISOString() ?? null
  })

export const decodeChunks = Schema.decodeUnknownEffect(Schema.Array(ChunkRow))

/** An action refused from the document's status (see Lifecycle's allowedFrom) is a 409 that says why. */
const whyNot = (action: keyof typeof allowedFrom, status: DocumentStatus) => {
  switch (action) {
    case "pause":
      return status === "paused"
        ? "The document is already paused"
        : `Only queued or processing documents can be paused; this one is ${status}`
    case "resume":
      return `Only paused documents can be resumed; this one is ${status}`
    case "reprocess":
      return `Only ready or failed documents can be reprocessed; this one is ${status} (pause or wait for it first)`
  }
}

export class Documents extends Context.Service<Documents, {
  readonly add: (owner: UserId, sourceId: string, document: NewDocument) => Effect.Effect<
    DocumentOut,
    DocumentsFailure | SourcesFailure
  >
  readonly addMessages: (
    owner: UserId,
    sourceId: string,
    title: string,
    messages: ReadonlyArray<MessageItem>
  ) => Effect.Effect<DocumentOut, DocumentsFailure | SourcesFailure>
  /** Checks every file's type first: one unsupported file rejects the whole upload and stores nothing. */
  readonly upload: (owner: UserId, sourceId: string, files: ReadonlyArray<UploadedFile>, date?: string) => Effect.Effect<
    ReadonlyArray<DocumentOut>,
    DocumentsFailure | SourcesFailure
  >
  readonly list: (owner: UserId, sourceId: string, options: {
    readonly status?: DocumentStatus | undefined
    readonly limit: number
    readonly cursor?: string | undefined
  }) => Effect.Effect<
    { readonly items: ReadonlyArray<DocumentOut>; readonly next_cursor: string | null },
    DocumentsFailure | SourcesFailure
  >
  readonly get: (owner: UserId, sourceId: string, documentId: string) => Effect.Effect<
    DocumentOut,
    DocumentsFailure | SourcesFailure
  >
  readonly parsed: (owner: UserId, sourceId: string, documentId: string) => Effect.Effect<
    {
      readonly document: DocumentOut
      readonly parser: string | null
      readonly text: string
      readonly blocks: ReadonlyArray<Block>
      readonly chunks: ReadonlyArray<ChunkOut>
    },
    DocumentsFailure | SourcesFailure
  >
  readonly act: (
    owner: UserId,
    sourceId: string,
    documentId: string,
    action: "pause" | "resume" | "reprocess"
  ) => Effect.Effect<DocumentOut, DocumentsFailure | SourcesFailure>
  readonly remove: (owner: UserId, sourceId: string, documentId: string) => Effect.Effect<
    { readonly chunks: number },
    DocumentsFailure | SourcesFailure
  >
  /**
   * A connector's item by its key (a path or URL): new content is added, changed content replaces the
   * original and is reprocessed, unchanged content is left alone.
   */
  readonly upsertItem: (ownerId: string, sourceId: string, item: NewDocument & { readonly key: string }) => Effect.Effect<
    "added" | "updated" | "unchanged" | "duplicate"
  >
  /** Deletes the connector documents of the source whose key is not in `keys` (their item vanished). */
  readonly removeMissing: (sourceId: string, keys: ReadonlyArray<string>) => Effect.Effect<number>
  readonly chunks: (owner: UserId, sourceId: string, page: { readonly limit: number; readonly cursor?: string | undefined }) =>
    Effect.Effect<
      { readonly items: ReadonlyArray<ChunkOut>; readonly next_cursor: string | null },
      DocumentsFailure | SourcesFailure
    >
}>()("engram/Documents") {
  static readonly layer = Layer.effect(
    Documents,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const sources = yield* Sources
      const jobs = yield* Jobs
      const lifecycle = yield* Lifecycle

      const selectDocuments = (where: Statement.Fragment) =>
        sql`
          SELECT d.*,
            to_char(d.created_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position
          FROM documents d WHERE ${where}`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(DocumentRow))),
          Effect.orDie
        )

      const find = (sourceId: string, documentId: string) =>
        selectDocuments(sql`d.id = ${documentId} AND d.source_id = ${sourceId}`).pipe(
          Effect.flatMap((rows) => rows[0] === undefined ? fail({ _tag: "DocumentNotFound" }) : Effect.succeed(rows[0]))
        )

      const get = Effect.fn("Documents.get")(function*(owner: UserId, sourceId: string, documentId: string) {
        yield* sources.owned(owner, sourceId)
        return toDocumentOut(yield* find(sourceId, documentId))
      })

      const contentOf = (document: NewDocument): DocumentContent => ({
        title: document.title,
        kind: document.kind,
        format: document.format,
        mimeType: mimeTypes[document.format],
        bytes: document.bytes,
        contentHash: sha256(document.bytes),
        // A connector's date outside what the API accepts (a page's "0000-01-01") is no date.
        date: instantOf(document.date)
      })

      /** The document queued with its job, or the existing document with the same bytes. */
      const store = (sourceId: string, ownerId: string, document: NewDocument, key: string | null = null) =>
        Effect.gen(function*() {
          const content = contentOf(document)
          const queued = yield* lifecycle.queue({ ownerId, sourceId, content, externalKey: key })
          const [row] = yield* Option.match(queued, {
            onNone: () => selectDocuments(sql`d.source_id = ${sourceId} AND d.content_hash = ${content.contentHash}`),
            onSome: (id) => selectDocuments(sql`d.id = ${id}`)
          })
          return { row: row!, duplicate: Option.isNone(queued) }
        })

      const add = Effect.fn("Documents.add")(function*(owner: UserId, sourceId: string, document: NewDocument) {
        yield* sources.owned(owner, sourceId)
        const { row, duplicate } = yield* store(sourceId, owner, document)
        if (!duplicate) yield* jobs.wake
        return toDocumentOut(row, duplicate)
      })

      const addMessages = (owner: UserId, sourceId: string, title: string, messages: ReadonlyArray<MessageItem>) =>
        add(owner, sourceId, {
          title,
          kind: "messages",
          format: "messages",
          bytes: new TextEncoder().encode(JSON.stringify(messages))
        })

      const upload = Effect.fn("Documents.upload")(function*(
        owner: UserId,
        sourceId: string,
        files: ReadonlyArray<UploadedFile>,
        date?: string
      ) {
        yield* sources.owned(owner, sourceId)
        const typed: Array<NewDocument> = []
        for (const file of files) {
          const detected = detectFormat(file.name, file.bytes)
          if ("unsupported" in detected) return yield* fail({ _tag: "UnsupportedType", message: detected.unsupported })
          typed.push({ title: file.name, kind: "file", format: detected.format, bytes: file.bytes, date })
        }
        const stored = yield* Effect.forEach(typed, (document) => store(sourceId, owner, document))
        yield* jobs.wake
        return stored.map(({ row, duplicate }) => toDocumentOut(row, duplicate))
      })

      const list = Effect.fn("Documents.list")(function*(owner: UserId, sourceId: string, options: {
        readonly status?: DocumentStatus | undefined
        readonly limit: number
        readonly cursor?: string | undefined
      }) {
        yield* sources.owned(owner, sourceId)
        const after = options.cursor === undefined ? undefined : documentsCursor.decode(options.cursor)
        if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
        const rows = yield* selectDocuments(sql`d.source_id = ${sourceId}
          ${options.status === undefined ? sql`` : sql`AND d.status = ${options.status}`}
          ${
          after === undefined
            ? sql``
            : sql`AND (d.created_at, d.id) < (${after.value.at}::timestamptz, ${after.value.id})`
        }
          ORDER BY d.created_at DESC, d.id DESC LIMIT ${options.limit + 1}`)
        const taken = takePage(rows, options.limit, (last) => documentsCursor.encode({ at: last.position, id: last.id }))
        return { items: taken.rows.map((row) => toDocumentOut(row)), next_cursor: taken.next_cursor }
      })

      const chunksOf = (where: Statement.Fragment) =>
        sql`
          SELECT c.id, c.document_id, c.source_id, c.ordinal, c.text, c.token_count, c.section_path,
            c.char_start, c.char_end, c.speaker, c.spoken_at, c.spoken_until, c.messages,
            to_char(d.created_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position
          FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version
          WHERE ${where}`.pipe(Effect.flatMap(decodeChunks), Effect.orDie)

      const parsed = Effect.fn("Documents.parsed")(function*(owner: UserId, sourceId: string, documentId: string) {
        yield* sources.owned(owner, sourceId)
        const row = yield* find(sourceId, documentId)
        const [parse] = yield* sql<{ parser: string; text: string; blocks: ReadonlyArray<Block> }>`
          SELECT parser, text, blocks FROM document_parses
          WHERE document_id = ${documentId}
          ORDER BY (version = ${row.active_version ?? -1}) DESC, version DESC
          LIMIT 1`.pipe(Effect.orDie)
        const chunks = yield* chunksOf(sql`c.document_id = ${documentId} ORDER BY c.ordinal`)
        return {
          document: toDocumentOut(row),
          parser: parse?.parser ?? null,
          text: parse?.text ?? "",
          blocks: parse?.blocks ?? [],
          chunks: chunks.map(toChunkOut)
        }
      })

      const act = Effect.fn("Documents.act")(function*(
        owner: UserId,
        sourceId: string,
        documentId: string,
        action: "pause" | "resume" | "reprocess"
      ) {
        yield* sources.owned(owner, sourceId)
        const changed = action === "pause"
          ? yield* lifecycle.pause(sourceId, documentId)
          : action === "resume"
          ? yield* lifecycle.resume(sourceId, documentId)
          : yield* lifecycle.reprocess(owner, sourceId, documentId)
        if (changed._tag === "missing") return yield* fail({ _tag: "DocumentNotFound" })
        if (changed._tag === "refused") {
          return yield* fail({ _tag: "ActionNotAllowed", message: whyNot(action, changed.status) })
        }
        if (action !== "pause") yield* jobs.wake
        return toDocumentOut(yield* find(sourceId, documentId))
      })

      const remove = Effect.fn("Documents.remove")(function*(owner: UserId, sourceId: string, documentId: string) {
        yield* sources.owned(owner, sourceId)
        const removed = yield* lifecycle.remove(sourceId, [documentId])
        if (removed.documents === 0) return yield* fail({ _tag: "DocumentNotFound" })
        return { chunks: removed.chunks }
      })

      const chunks = Effect.fn("Documents.chunks")(function*(owner: UserId, sourceId: string, page: {
        readonly limit: number
        readonly cursor?: string | undefined
      }) {
        yield* sources.owned(owner, sourceId)
        const after = page.cursor === undefined ? undefined : chunksCursor.decode(page.cursor)
        if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
        const rows = yield* chunksOf(sql`c.source_id = ${sourceId}
          ${
          after === undefined
            ? sql``
            : sql`AND (d.created_at, c.document_id, c.ordinal)
                > (${after.value.at}::timestamptz, ${after.value.document_id}, ${after.value.ordinal})`
        }
          ORDER BY d.created_at, c.document_id, c.ordinal LIMIT ${page.limit + 1}`)
        const taken = takePage(rows, page.limit, (last) =>
          chunksCursor.encode({ at: last.position, document_id: last.document_id, ordinal: last.ordinal }))
        return { items: taken.rows.map(toChunkOut), next_cursor: taken.next_cursor }
      })

      const upsertItem = Effect.fn("Documents.upsertItem")(function*(
        ownerId: string,
        sourceId: string,
        item: NewDocument & { readonly key: string }
      ) {
        const hash = sha256(item.bytes)
        const [existing] = yield* sql<{ id: string; content_hash: string; status: DocumentStatus }>`
          SELECT id, content_hash, status FROM documents WHERE source_id = ${sourceId} AND external_key = ${item.key}`
          .pipe(Effect.orDie)
        if (existing === undefined) {
          const { duplicate } = yield* store(sourceId, ownerId, item, item.key)
          return duplicate ? "duplicate" as const : "added" as const
        }
        if (existing.content_hash === hash) return "unchanged" as const
        return yield* lifecycle.replace(ownerId, sourceId, existing.id, contentOf(item))
      })

      const removeMissing = Effect.fn("Documents.removeMissing")(function*(sourceId: string, keys: ReadonlyArray<string>) {
        const gone = yield* sql<{ id: string; external_key: string; status: DocumentStatus }>`
          SELECT id, external_key, status FROM documents WHERE source_id = ${sourceId} AND external_key IS NOT NULL`
          .pipe(Effect.orDie)
        const keep = new Set(keys)
        const vanished = gone.filter((row) => !keep.has(row.external_key))
        const ids = vanished.map((row) => row.id)
        if (ids.length === 0) return 0
        yield* lifecycle.remove(sourceId, ids)
        return ids.length
      })

      return Documents.of({
        add,
        addMessages,
        upload,
        list,
        get,
        parsed,
        act,
        remove,
        upsertItem,
        removeMissing,
        chunks
      })
    })
  )
}
