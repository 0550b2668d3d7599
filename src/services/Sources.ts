import { Context, Data, Effect, Layer, Option, Schema, SchemaIssue } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import * as Path from "node:path"
import { EngramConfig } from "../config.ts"
import { folderProblem } from "../connectors/folder.ts"
import { cursorTimeFormat, PageCursor, takePage, TimeKey } from "../domain/Page.ts"
import { type ConnectorKind, connectorConfigs, SourceId, SourceOut } from "../domain/Source.ts"
import type { UserId } from "../domain/User.ts"
import { Lifecycle } from "../stores/Lifecycle.ts"
import { searchable } from "../stores/Searchable.ts"
import { ownedSources } from "../stores/SourceAccess.ts"

export interface Issue {
  readonly path: string
  readonly message: string
}

export type SourcesError =
  | { readonly _tag: "SourceNotFound" }
  | { readonly _tag: "InvalidConfig"; readonly issues: ReadonlyArray<Issue> }
  | { readonly _tag: "InvalidCursor" }

export class SourcesFailure extends Data.TaggedError("SourcesFailure")<{ readonly reason: SourcesError }> {}

const fail = (reason: SourcesError) => Effect.fail(new SourcesFailure({ reason }))

export const sourceNotFound = fail({ _tag: "SourceNotFound" })

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const SourceRow = Schema.Struct({
  id: SourceId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  connector_kind: Schema.Literals(["file_upload", "web", "folder"]),
  config: Schema.Record(Schema.String, Schema.Unknown),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  last_synced_at: Schema.NullOr(Schema.Date),
  document_count: Schema.Int,
  queued_count: Schema.Int,
  processing_count: Schema.Int,
  paused_count: Schema.Int,
  ready_count: Schema.Int,
  failed_count: Schema.Int,
  chunk_count: Schema.Int,
  event_count: Schema.Int,
  busy: Schema.Boolean,
  position: Schema.String
})
type SourceRow = typeof SourceRow.Type

const sourcesCursor = PageCursor("sources", TimeKey)

const toSourceOut = (row: SourceRow) =>
  new SourceOut({
    id: row.id,
    name: row.name,
    description: row.description,
    connector_kind: row.connector_kind,
    config: row.config,
    status: row.busy ? "processing" : row.failed_count > 0 ? "degraded" : "ready",
    document_count: row.document_count,
    documents: {
      queued: row.queued_count,
      processing: row.processing_count,
      paused: row.paused_count,
      ready: row.ready_count,
      failed: row.failed_count
    },
    chunk_count: row.chunk_count,
    event_count: row.event_count,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    last_synced_at: row.last_synced_at?.toISOString() ?? null
  })

/** A self-contained JSON Schema of a config; unknown fields are rejected, so it says so. */
const configJsonSchema = (schema: Schema.Top): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(schema)
  const ref = (document.schema as { $ref?: string }).$ref?.replace("#/$defs/", "")
  const definitions = (document as { definitions?: Record<string, Record<string, unknown>> }).definitions ?? {}
  const root = ref === undefined ? document.schema as Record<string, unknown> : definitions[ref]!
  const { [ref ?? ""]: _, ...others } = definitions
  return {
    ...root,
    additionalProperties: false,
    ...(Object.keys(others).length > 0 ? { $defs: others } : {})
  }
}

export interface ConnectorInfo {
  readonly kind: ConnectorKind
  readonly description: string
  readonly available: boolean
  readonly config_schema: unknown
}

export class Sources extends Context.Service<Sources, {
  readonly connectors: ReadonlyArray<ConnectorInfo>
  readonly create: (owner: UserId, input: {
    readonly name: string
    readonly description?: string | null | undefined
    readonly connector_kind: ConnectorKind
    readonly config: unknown
  }) => Effect.Effect<SourceOut, SourcesFailure>
  readonly list: (owner: UserId, page: { readonly limit: number; readonly cursor?: string | undefined }) => Effect.Effect<
    { readonly items: ReadonlyArray<SourceOut>; readonly next_cursor: string | null },
    SourcesFailure
  >
  readonly get: (owner: UserId, id: string) => Effect.Effect<SourceOut, SourcesFailure>
  readonly update: (owner: UserId, id: string, patch: {
    readonly name?: string | undefined
    readonly description?: string | null | undefined
    readonly config?: unknown
  }) => Effect.Effect<SourceOut, SourcesFailure>
  readonly remove: (owner: UserId, id: string) => Effect.Effect<
    { readonly documents: number; readonly chunks: number; readonly jobs: number },
    SourcesFailure
  >
  /** The source's kind and config when `owner` owns it. */
  readonly owned: (owner: UserId, id: string) => Effect.Effect<
    { readonly id: string; readonly connector_kind: ConnectorKind; readonly config: Record<string, unknown> },
    SourcesFailure
  >
}>()("engram/Sources") {
  static readonly layer = Layer.effect(
    Sources,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* EngramConfig
      const lifecycle = yield* Lifecycle
      const roots = settings.folderRoots.map((root) => Path.resolve(root))

      const connectors: ReadonlyArray<ConnectorInfo> = [
        {
          kind: "file_upload",
          description: "Documents arrive by upload (txt, md, html, pdf, docx, json, csv) or text/message ingestion.",
          available: true,
          config_schema: configJsonSchema(connectorConfigs.file_upload)
        },
        {
          kind: "web",
          description: "Fetches the configured pages (and same-site links up to crawl_depth) on sync, keeping each " +
            "page's main text; changed pages are re-ingested, vanished ones removed.",
          available: true,
          config_schema: configJsonSchema(connectorConfigs.web)
        },
        {
          kind: "folder",
          description: "Scans a server-side directory on sync for supported files; the directory must be inside " +
            "a root the operator allows with ENGRAM_FOLDER_ROOTS.",
          available: roots.length > 0,
          config_schema: configJsonSchema(connectorConfigs.folder)
        }
      ]

      const validateConfig = Effect.fn("Sources.validateConfig")(function*(kind: ConnectorKind, config: unknown) {
        const decoded = yield* Schema.decodeUnknownEffect(connectorConfigs[kind])(config, {
          onExcessProperty: "error",
          errors: "all"
        }).pipe(
          Effect.catchTag("SchemaError", (error) =>
            fail({
              _tag: "InvalidConfig",
              issues: formatIssues(error.issue).issues.map((issue) => ({
                path: ["body", "config", ...(issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p))]
                  .join("."),
                message: issue.message
              }))
            }))
        )
        if (kind === "folder") {
          const path = (decoded as typeof connectorConfigs.folder.Type).path
          const problem = roots.length === 0
            ? "folder sources are disabled: the operator has not set ENGRAM_FOLDER_ROOTS"
            : !Path.isAbsolute(path)
            ? "must be an absolute path"
            : yield* Effect.promise(() => folderProblem(path, roots))
          if (problem !== undefined) {
            return yield* fail({ _tag: "InvalidConfig", issues: [{ path: "body.config.path", message: problem }] })
          }
        }
        return decoded as Record<string, unknown>
      })

      const select = (where: Statement.Fragment) =>
        sql`
          SELECT s.*, counts.*,
            EXISTS (SELECT 1 FROM jobs j WHERE j.source_id = s.id AND j.status IN ('queued', 'running')) AS busy,
            to_char(s.created_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position
          FROM sources s, LATERAL (
            SELECT count(*)::int AS document_count,
              count(*) FILTER (WHERE d.status = 'queued')::int AS queued_count,
              count(*) FILTER (WHERE d.status = 'processing')::int AS processing_count,
              count(*) FILTER (WHERE d.status = 'paused')::int AS paused_count,
              count(*) FILTER (WHERE d.status = 'ready')::int AS ready_count,
              count(*) FILTER (WHERE d.status = 'failed')::int AS failed_count,
              -- Each document's counts (migration 0019): the chunks of its active version; the events of its
              -- counted version, visible while it is the active one and the document is ready.
              coalesce(sum(d.chunk_count), 0)::int AS chunk_count,
              coalesce(sum(d.event_count) FILTER (WHERE ${searchable(sql, "d", "d.graph_version")}), 0)::int
                AS event_count
            FROM documents d WHERE d.source_id = s.id
          ) counts
          WHERE ${where}`

      const decodeRows = (rows: ReadonlyArray<unknown>) =>
        Schema.decodeUnknownEffect(Schema.Array(SourceRow))(rows).pipe(Effect.orDie)

      const get = Effect.fn("Sources.get")(function*(owner: UserId, id: string) {
        const rows = yield* select(sql`s.id = ${id} AND s.owner_id = ${owner}`).pipe(Effect.orDie)
        const [row] = yield* decodeRows(rows)
        if (row === undefined) return yield* sourceNotFound
        return toSourceOut(row)
      })

      const owned = Effect.fn("Sources.owned")(function*(owner: UserId, id: string) {
        yield* ownedSources(sql, owner, [id]).pipe(Effect.catchTag("SourceNotOwned", () => sourceNotFound))
        const rows = yield* sql<{ id: string; connector_kind: ConnectorKind; config: Record<string, unknown> }>`
          SELECT id, connector_kind, config FROM sources WHERE id = ${id}`.pipe(Effect.orDie)
        return rows[0] ?? (yield* sourceNotFound)
      })

      const create = Effect.fn("Sources.create")(function*(owner: UserId, input: {
        readonly name: string
        readonly description?: string | null | undefined
        readonly connector_kind: ConnectorKind
        readonly config: unknown
      }) {
        const config = yield* validateConfig(input.connector_kind, input.config)
        const [row] = yield* sql<{ id: string }>`
          INSERT INTO sources (owner_id, name, description, connector_kind, config)
          VALUES (${owner}, ${input.name}, ${input.description ?? null}, ${input.connector_kind},
            ${JSON.stringify(config)}::jsonb)
          RETURNING id`.pipe(Effect.orDie)
        return yield* get(owner, row!.id)
      })

      const list = Effect.fn("Sources.list")(function*(owner: UserId, page: {
        readonly limit: number
        readonly cursor?: string | undefined
      }) {
        const after = page.cursor === undefined ? undefined : sourcesCursor.decode(page.cursor)
        if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
        const rows = yield* select(
          after === undefined
            ? sql`s.owner_id = ${owner} ORDER BY s.created_at DESC, s.id DESC LIMIT ${page.limit + 1}`
            : sql`s.owner_id = ${owner} AND (s.created_at, s.id) < (${after.value.at}::timestamptz, ${after.value.id})
                ORDER BY s.created_at DESC, s.id DESC LIMIT ${page.limit + 1}`
        ).pipe(Effect.orDie)
        const taken = takePage(yield* decodeRows(rows), page.limit, (last) =>
          sourcesCursor.encode({ at: last.position, id: last.id }))
        return { items: taken.rows.map(toSourceOut), next_cursor: taken.next_cursor }
      })

      const update = Effect.fn("Sources.update")(function*(owner: UserId, id: string, patch: {
        readonly name?: string | undefined
        readonly description?: string | null | undefined
        readonly config?: unknown
      }) {
        const current = yield* owned(owner, id)
        const config = patch.config === undefined
          ? Option.none<Record<string, unknown>>()
          : Option.some(yield* validateConfig(current.connector_kind, patch.config))
        yield* sql`
          UPDATE sources SET
            name = ${patch.name ?? sql`name`},
            description = ${patch.description === undefined ? sql`description` : patch.description},
            config = ${Option.match(config, { onNone: () => sql`config`, onSome: (c) => sql`${JSON.stringify(c)}::jsonb` })},
            updated_at = now()
          WHERE id = ${id}`.pipe(Effect.orDie)
        return yield* get(owner, id)
      })

      const remove = Effect.fn("Sources.remove")(function*(owner: UserId, id: string) {
        yield* owned(owner, id)
        return yield* lifecycle.removeSource(id)
      })

      return Sources.of({ connectors, create, list, get, update, remove, owned })
    })
  )
}
