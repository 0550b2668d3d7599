import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ChunkOut } from "../domain/Chunk.ts"
import { JobOut } from "../domain/Job.ts"
import { Page, PageQuery } from "../domain/Page.ts"
import { ConnectorConfigInput, ConnectorKind, SourceDescription, SourceName, SourceOut } from "../domain/Source.ts"
import { IdText } from "../domain/Text.ts"
import { BadRequest, NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

export const SourceParams = { source_id: IdText }

export const ConnectorInfo = Schema.Struct({
  kind: ConnectorKind,
  description: Schema.String,
  available: Schema.Boolean.annotate({ description: "false when the operator has not enabled it on this server" }),
  config_schema: Schema.Unknown.annotate({ description: "JSON Schema of the connector's config" })
}).annotate({ identifier: "ConnectorInfo" })

export const CreateSourceRequest = Schema.Struct({
  name: SourceName,
  description: Schema.optionalKey(Schema.NullOr(SourceDescription)),
  connector_kind: ConnectorKind,
  config: ConnectorConfigInput.annotate({
    description: "Validated against the connector's config schema (GET /sources/connectors); {} for file_upload"
  })
}).annotate({ identifier: "CreateSourceRequest" })

export const UpdateSourceRequest = Schema.Struct({
  name: Schema.optionalKey(SourceName),
  description: Schema.optionalKey(Schema.NullOr(SourceDescription)),
  config: Schema.optionalKey(ConnectorConfigInput)
}).annotate({ identifier: "UpdateSourceRequest" })

export const DeletedSource = Schema.Struct({
  id: Schema.String,
  removed: Schema.Struct({ documents: Schema.Int, chunks: Schema.Int, jobs: Schema.Int })
}).annotate({ identifier: "DeletedSource" })

const authenticated = (summary: string, description?: string) =>
  OpenApi.annotations(description === undefined ? { summary } : { summary, description })

export class SourcesApi extends HttpApiGroup.make("sources")
  .add(
    HttpApiEndpoint.get("connectors", "/connectors", {
      success: Schema.Struct({ connectors: Schema.Array(ConnectorInfo) })
    }).annotateMerge(authenticated("Connector kinds and their config schemas")),
    HttpApiEndpoint.post("create", "/", {
      payload: CreateSourceRequest,
      success: SourceOut.pipe(HttpApiSchema.status(201))
    }).annotateMerge(authenticated(
      "Create a source",
      "name (1–200 characters, trimmed) and connector_kind are required; description is optional; config must " +
        "match the connector's schema (422 naming the field otherwise)."
    )),
    HttpApiEndpoint.get("list", "/", {
      query: PageQuery,
      success: Page(SourceOut),
      error: BadRequest
    }).annotateMerge(authenticated("The caller's sources, newest first")),
    HttpApiEndpoint.get("get", "/:source_id", { params: SourceParams, success: SourceOut, error: NotFound })
      .annotateMerge(authenticated("A source with its exact counts")),
    HttpApiEndpoint.patch("update", "/:source_id", {
      params: SourceParams,
      payload: UpdateSourceRequest,
      success: SourceOut,
      error: NotFound
    }).annotateMerge(authenticated(
      "Change a source's name, description or config",
      "connector_kind cannot change. description: null clears it."
    )),
    HttpApiEndpoint.delete("remove", "/:source_id", { params: SourceParams, success: DeletedSource, error: NotFound })
      .annotateMerge(authenticated(
        "Delete a source",
        "Removes every document, original file, chunk, vector, job and derived row of the source, and says how many. " +
          "Copies go too, in the same transaction: its hits leave saved explorations (an exploration of this source " +
          "alone is deleted), answers citing its documents (and partial answers of cancelled or failed runs that " +
          "searched it) are replaced by a notice with those citations removed, and run traces no longer list it."
      )),
    HttpApiEndpoint.post("sync", "/:source_id/sync", {
      params: SourceParams,
      success: JobOut.pipe(HttpApiSchema.status(202)),
      error: NotFound
    }).annotateMerge(authenticated(
      "Synchronize a source",
      "file_upload: resumes its paused documents (a job that is already finished). web and folder: a queued job " +
        "fetches the pages or scans the folder; new or changed items (by sha256) are ingested, unchanged ones left " +
        "alone, vanished ones removed; its result counts them and lists skipped items with the reason."
    )),
    HttpApiEndpoint.get("chunks", "/:source_id/chunks", {
      params: SourceParams,
      query: PageQuery,
      success: Page(ChunkOut),
      error: [NotFound, BadRequest]
    }).annotateMerge(authenticated(
      "The source's chunks",
      "Chunks of each document's searchable version, by document (oldest first) and position."
    ))
  )
  .middleware(Authentication)
  .prefix("/sources")
  .annotateMerge(OpenApi.annotations({ title: "Sources", description: "Collections of knowledge and their connectors" }))
{}
