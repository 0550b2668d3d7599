import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Multipart } from "effect/http"
import { ChunkOut } from "../domain/Chunk.ts"
import { DocumentOut, DocumentStatus, IngestRequest, IsoDateTime } from "../domain/Document.ts"
import { Page, PageQuery } from "../domain/Page.ts"
import { IdText } from "../domain/Text.ts"
import { BadRequest, Conflict, NotFound, UnsupportedMediaType } from "./Errors.ts"
import { Authentication } from "./Security.ts"
import { SourceParams } from "./Sources.ts"

const DocumentParams = { ...SourceParams, document_id: IdText }

export const UploadRequest = Schema.Struct({
  files: Schema.optionalKey(Multipart.FilesSchema),
  file: Schema.optionalKey(Multipart.FilesSchema),
  date: Schema.optionalKey(IsoDateTime).annotate({
    description: "The files' own date (ISO-8601), which anchors relative times in their text (\"last Tuesday\"); " +
      "without it they stay undated"
  })
}).pipe(HttpApiSchema.asMultipart()).annotate({
  description: "multipart/form-data with one or more parts named files (or file), and optionally a field date"
})

export const Preview = Schema.Struct({
  document: DocumentOut,
  text: Schema.String.annotate({ description: "The first 2,000 characters of the extracted text" }),
  truncated: Schema.Boolean,
  text_length: Schema.Int,
  block_count: Schema.Int,
  parser: Schema.NullOr(Schema.String)
}).annotate({ identifier: "DocumentPreview" })

export const ParseBlock = Schema.Struct({
  kind: Schema.String,
  text: Schema.String,
  start: Schema.Int,
  end: Schema.Int,
  section_path: Schema.Array(Schema.String),
  level: Schema.optionalKey(Schema.Int),
  speaker: Schema.optionalKey(Schema.String),
  timestamp: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ParseBlock" })

export const ParseOutput = Schema.Struct({
  document: DocumentOut,
  parser: Schema.NullOr(Schema.String),
  text: Schema.String,
  blocks: Schema.Array(ParseBlock),
  chunks: Schema.Array(ChunkOut)
}).annotate({ identifier: "ParseOutput" })

export const DeletedDocument = Schema.Struct({
  id: Schema.String,
  removed: Schema.Struct({ chunks: Schema.Int })
}).annotate({ identifier: "DeletedDocument" })

const states = "States: queued → processing (stages parse, chunk, embed, index) → ready | failed. " +
  "pause: queued/processing → paused (a running stage finishes first); resume: paused → queued, continuing " +
  "after the last finished stage; reprocess: ready/failed → queued, building a new version that replaces the " +
  "previous one atomically. Search returns only ready documents. Any other transition is 409 action_not_allowed."

const documentAction = <const Name extends string>(name: Name, summary: string) =>
  HttpApiEndpoint.post(name, `/:document_id/${name}`, {
    params: DocumentParams,
    success: DocumentOut,
    error: [NotFound, Conflict]
  }).annotateMerge(OpenApi.annotations({ summary, description: states }))

export class DocumentsApi extends HttpApiGroup.make("documents")
  .add(
    HttpApiEndpoint.post("ingest", "/ingest", {
      params: SourceParams,
      payload: IngestRequest,
      success: [
        DocumentOut.pipe(HttpApiSchema.status(202)),
        DocumentOut.pipe(HttpApiSchema.status(200))
      ],
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Add text or a conversation",
      description: "Send title and exactly one of text or messages. A message is {speaker?, role?, content, " +
        "timestamp?}: speaker is who wrote it (role is used when it is absent), timestamp an ISO-8601 date-time; a " +
        "message without one was sent when the message before it was, and before the first timestamp on the " +
        "document's date. Each message keeps its speaker and time in the chunks, search results and citations " +
        "(messages), and its relative times (\"yesterday\") count from its own time. " +
        "202 with the queued document (its job_id tracks processing). Content already in the source (same sha256) " +
        "is not added again: 200 with the existing document and duplicate: true."
    })),
    HttpApiEndpoint.post("upload", "/upload", {
      params: SourceParams,
      payload: UploadRequest,
      success: Schema.Struct({ documents: Schema.Array(DocumentOut) }).pipe(HttpApiSchema.status(202)),
      error: [NotFound, UnsupportedMediaType]
    }).annotateMerge(OpenApi.annotations({
      summary: "Upload files",
      description: "multipart/form-data, one or more parts named files: .txt, .md, .html, .pdf, .docx, .json, " +
        ".csv. The type comes from the file name and must match the content (415 unsupported_file_type " +
        "otherwise, and nothing is stored). Bodies over ENGRAM_MAX_UPLOAD_BYTES (default 50 MiB) are 413 before " +
        "anything is stored. Original bytes are kept for reprocessing. Duplicates come back with duplicate: true. " +
        "An optional text field date (ISO-8601) is the files' own date: it anchors relative times in their text."
    })),
    HttpApiEndpoint.get("list", "/", {
      params: SourceParams,
      query: { ...PageQuery, status: Schema.optionalKey(DocumentStatus) },
      success: Page(DocumentOut),
      error: [NotFound, BadRequest]
    }).annotateMerge(OpenApi.annotations({ summary: "The source's documents, newest first", description: states })),
    HttpApiEndpoint.get("get", "/:document_id", { params: DocumentParams, success: DocumentOut, error: NotFound })
      .annotateMerge(OpenApi.annotations({ summary: "A document and its processing state", description: states })),
    HttpApiEndpoint.get("preview", "/:document_id/preview", { params: DocumentParams, success: Preview, error: NotFound })
      .annotateMerge(OpenApi.annotations({ summary: "The start of the extracted text" })),
    HttpApiEndpoint.get("parseOutput", "/:document_id/parse-output", {
      params: DocumentParams,
      success: ParseOutput,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "The parser's blocks and the chunks made from them",
      description: "blocks carry character offsets into text and their section path."
    })),
    documentAction("pause", "Pause processing"),
    documentAction("resume", "Resume processing"),
    documentAction("reprocess", "Process again from the original"),
    HttpApiEndpoint.delete("remove", "/:document_id", { params: DocumentParams, success: DeletedDocument, error: NotFound })
      .annotateMerge(OpenApi.annotations({
        summary: "Delete a document",
        description: "Removes its original, chunks, vectors and derived rows, in any state; its job is cancelled and " +
          "no longer names it. Copies go too, in the same transaction: its hits leave saved explorations, and " +
          "answers citing it are replaced by a notice with those citations removed."
      }))
  )
  .middleware(Authentication)
  .prefix("/sources/:source_id/documents")
  .annotateMerge(OpenApi.annotations({ title: "Documents", description: "Adding documents and following their processing" }))
{}
