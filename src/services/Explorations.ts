import { Clock, Context, Data, DateTime, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type {
  ExplorationCreate,
  ExplorationOut,
  ExplorationReplay,
  ExplorationSummary
} from "../domain/Exploration.ts"
import { instantOf } from "../domain/Instant.ts"
import { TimeKey, cursorTimeFormat, PageCursor, takePage } from "../domain/Page.ts"
import type { SearchResult, Strategy } from "../domain/Search.ts"
import type { UserId } from "../domain/User.ts"
import type { Issue } from "./Sources.ts"
import { Erasure } from "../stores/Erasure.ts"
import { searchable } from "../stores/Searchable.ts"
import { ownedSources } from "../stores/SourceAccess.ts"
import { Retriever, type RetrieverError } from "./Retriever.ts"

export type ExplorationsError =
  | { readonly _tag: "ExplorationNotFound" }
  | { readonly _tag: "SourceNotFound"; readonly sourceId: string }
  | { readonly _tag: "NodeNotFound"; readonly nodeId: string }
  | { readonly _tag: "InvalidCursor" }
  | { readonly _tag: "InvalidQuery"; readonly issues: ReadonlyArray<Issue> }
  | { readonly _tag: "SearchUnavailable"; readonly reason: RetrieverError }

export class ExplorationsFailure extends Data.TaggedError("ExplorationsFailure")<{
  readonly reason: ExplorationsError
}> {}

const fail = (reason: ExplorationsError) => Effect.fail(new ExplorationsFailure({ reason }))

type Hit = typeof SearchResult.Type

interface ExplorationRow {
  readonly id: string
  readonly title: string
  readonly kind: "search" | "universe"
  readonly query: string | null
  readonly strategy: Strategy | null
  readonly top_k: number | null
  readonly source_ids: ReadonlyArray<string>
  readonly seed_node_ids: ReadonlyArray<string>
  readonly expanded_node_ids: ReadonlyArray<string>
  readonly filters: ExplorationSummary["filters"]
  readonly time_from: Date | null
  readonly time_to: Date | null
  readonly hit_count: number
  readonly saved_hit_count: number
  readonly created_at: Date
  readonly updated_at: Date
  readonly position: string
  readonly results?: ReadonlyArray<Hit>
}

const explorationsCursor = PageCursor("explorations", TimeKey)

const summaryOf = (row: ExplorationRow): ExplorationSummary => ({
  id: row.id,
  title: row.title,
  kind: row.kind,
  query: row.query,
  strategy: row.strategy,
  top_k: row.top_k,
  source_ids: row.source_ids,
  seed_node_ids: row.seed_node_ids,
  expanded_node_ids: row.expanded_node_ids,
  filters: row.filters,
  window: { from: row.time_from?.toISOString() ?? null, to: row.time_to?.toISOString() ?? null },
  hit_count: row.hit_count,
  erased_hits: Math.max(0, row.saved_hit_count - row.hit_count),
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

const nodeParts = (nodeId: string) => {
  const at = nodeId.indexOf(":")
  return { type: nodeId.slice(0, at), id: nodeId.slice(at + 1) }
}

/** Search hits replay at this many when the exploration did not record its top_k. */
const defaultTopK = 10

/**
 * Saved explorations: what POST /search stores with save_exploration and what a universe view saves here, read,
 * renamed, deleted, and replayed against the current data. Erasure keeps them free of deleted documents.
 */
export class Explorations extends Context.Service<Explorations, {
  readonly create: (owner: UserId, input: ExplorationCreate) => Effect.Effect<ExplorationOut, ExplorationsFailure>
  readonly list: (owner: UserId, options: { readonly limit: number; readonly cursor?: string | undefined }) =>
    Effect.Effect<{ readonly items: ReadonlyArray<ExplorationSummary>; readonly next_cursor: string | null }, ExplorationsFailure>
  readonly get: (owner: UserId, id: string) => Effect.Effect<ExplorationOut, ExplorationsFailure>
  readonly rename: (owner: UserId, id: string, title: string) => Effect.Effect<ExplorationOut, ExplorationsFailure>
  readonly remove: (owner: UserId, id: string) => Effect.Effect<void, ExplorationsFailure>
  readonly replay: (owner: UserId, id: string) => Effect.Effect<ExplorationReplay, ExplorationsFailure>
}>()("engram/Explorations") {
  static readonly layer = Layer.effect(
    Explorations,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const erasure = yield* Erasure
      const retriever = yield* Retriever

      const columns = sql`x.id, coalesce(x.title, x.query, '') AS title, x.kind, x.query, x.strategy, x.top_k,
        x.source_ids, x.seed_node_ids, x.expanded_node_ids, x.filters, x.time_from, x.time_to,
        jsonb_array_length(x.results) AS hit_count, x.saved_hit_count, x.created_at, x.updated_at,
        to_char(x.created_at AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS position`

      const find = (owner: UserId, id: string) =>
        sql<ExplorationRow>`SELECT ${columns}, x.results FROM explorations x WHERE x.id = ${id} AND x.owner_id = ${owner}`
          .pipe(
            Effect.orDie,
            Effect.flatMap(([row]) => row === undefined ? fail({ _tag: "ExplorationNotFound" }) : Effect.succeed(row))
          )

      const get = Effect.fn("Explorations.get")(function*(owner: UserId, id: string) {
        const row = yield* find(owner, id)
        return { ...summaryOf(row), results: row.results ?? [] } satisfies ExplorationOut
      })

      const searchFailure = (failure: { readonly reason: RetrieverError }) =>
        failure.reason._tag === "SourceNotFound"
          ? fail({ _tag: "SourceNotFound", sourceId: failure.reason.sourceId })
          : fail({ _tag: "SearchUnavailable", reason: failure.reason })

      /**
       * Which of the nodes still exist for the owner among the sources: entities, events of searchable documents,
       * documents. Community ids are not checked.
       */
      const existingNodes = Effect.fnUntraced(function*(
        sourceIds: ReadonlyArray<string>,
        nodeIds: ReadonlyArray<string>
      ) {
        const byType = (type: string) => nodeIds.map(nodeParts).filter((part) => part.type === type).map((p) => p.id)
        const entities = byType("entity")
        const events = byType("event")
        const documents = byType("document")
        const found = new Set<string>()
        if (sourceIds.length === 0) return found
        if (entities.length > 0) {
          for (const row of yield* sql<{ id: string }>`
            SELECT id FROM entities WHERE id = ANY(${entities}::text[]) AND source_id = ANY(${sourceIds}::text[])`) {
            found.add(`entity:${row.id}`)
          }
        }
        if (events.length > 0) {
          for (const row of yield* sql<{ id: string }>`
            SELECT ev.id FROM events ev JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
            WHERE ev.id = ANY(${events}::text[]) AND ev.source_id = ANY(${sourceIds}::text[])`) {
            found.add(`event:${row.id}`)
          }
        }
        if (documents.length > 0) {
          for (const row of yield* sql<{ id: string }>`
            SELECT id FROM documents WHERE id = ANY(${documents}::text[]) AND source_id = ANY(${sourceIds}::text[])`) {
            found.add(`document:${row.id}`)
          }
        }
        return found
      }, Effect.orDie)

      const create = Effect.fn("Explorations.create")(function*(owner: UserId, input: ExplorationCreate) {
        const from = instantOf(input.window?.from)
        const to = instantOf(input.window?.to)
        if (from !== null && to !== null && from >= to) {
          return yield* fail({ _tag: "InvalidQuery", issues: [{ path: "body.window.to", message: "must be after from" }] })
        }
        if (input.query === undefined && (input.strategy !== undefined || input.top_k !== undefined)) {
          return yield* fail({
            _tag: "InvalidQuery",
            issues: [{ path: input.strategy !== undefined ? "body.strategy" : "body.top_k", message: "needs a query" }]
          })
        }
        const sourceIds = yield* ownedSources(sql, owner, input.source_ids).pipe(
          Effect.catchTag("SourceNotOwned", ({ sourceId }) => fail({ _tag: "SourceNotFound", sourceId }))
        )
        const seeds = [...new Set(input.seed_node_ids ?? [])]
        const expanded = [...new Set(input.expanded_node_ids ?? [])]
        const nodes = [...new Set([...seeds, ...expanded])]
        const found = yield* existingNodes(sourceIds, nodes)
        const missing = nodes.find((node) => nodeParts(node).type !== "community" && !found.has(node))
        if (missing !== undefined) return yield* fail({ _tag: "NodeNotFound", nodeId: missing })

        const strategy = input.query === undefined ? null : input.strategy ?? "multi"
        const topK = input.query === undefined ? null : input.top_k ?? defaultTopK
        const hits = input.query === undefined || strategy === null || topK === null
          ? []
          : (yield* retriever.search({
            owner,
            query: input.query,
            strategy,
            topK,
            sourceIds,
            saveExploration: false
          }).pipe(Effect.catch(searchFailure))).results
        const id = yield* sql.withTransaction(Effect.gen(function*() {
          // What was deleted since it was retrieved must not come back through the saved exploration.
          const stored = yield* erasure.storableExploration({ sourceIds, hits })
          if (sourceIds.length > 0 && stored.sourceIds.length === 0) {
            return yield* fail({ _tag: "SourceNotFound", sourceId: sourceIds[0]! })
          }
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO explorations (owner_id, title, kind, query, strategy, top_k, source_ids, results,
              saved_hit_count, seed_node_ids, expanded_node_ids, filters, time_from, time_to)
            VALUES (${owner}, ${input.title}, 'universe', ${input.query ?? null}, ${strategy}, ${topK},
              ${JSON.stringify(stored.sourceIds)}::jsonb, ${JSON.stringify(stored.hits)}::jsonb, ${stored.hits.length},
              ${JSON.stringify(seeds)}::jsonb, ${JSON.stringify(expanded)}::jsonb,
              ${JSON.stringify(input.filters ?? {})}::jsonb, ${from}, ${to})
            RETURNING id`.pipe(Effect.orDie)
          return row!.id
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return yield* get(owner, id)
      })

      const list = Effect.fn("Explorations.list")(function*(
        owner: UserId,
        options: { readonly limit: number; readonly cursor?: string | undefined }
      ) {
        const after = options.cursor === undefined ? undefined : explorationsCursor.decode(options.cursor)
        if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
        const key = after?.value
        const rows = yield* sql<ExplorationRow>`
          SELECT ${columns} FROM explorations x
          WHERE x.owner_id = ${owner}
            ${
          key === undefined
            ? sql``
            : sql`AND (x.created_at < ${key.at}::timestamptz OR (x.created_at = ${key.at}::timestamptz AND x.id < ${key.id}))`
        }
          ORDER BY x.created_at DESC, x.id DESC LIMIT ${options.limit + 1}`.pipe(Effect.orDie)
        const page = takePage(rows, options.limit, (last) => explorationsCursor.encode({ at: last.position, id: last.id }))
        return { items: page.rows.map(summaryOf), next_cursor: page.next_cursor }
      })

      const rename = Effect.fn("Explorations.rename")(function*(owner: UserId, id: string, title: string) {
        const updated = yield* sql<{ id: string }>`
          UPDATE explorations SET title = ${title}, updated_at = now()
          WHERE id = ${id} AND owner_id = ${owner} RETURNING id`.pipe(Effect.orDie)
        if (updated.length === 0) return yield* fail({ _tag: "ExplorationNotFound" })
        return yield* get(owner, id)
      })

      const remove = Effect.fn("Explorations.remove")(function*(owner: UserId, id: string) {
        const deleted = yield* sql<{ id: string }>`
          DELETE FROM explorations WHERE id = ${id} AND owner_id = ${owner} RETURNING id`.pipe(Effect.orDie)
        if (deleted.length === 0) return yield* fail({ _tag: "ExplorationNotFound" })
      })

      const replay = Effect.fn("Explorations.replay")(function*(owner: UserId, id: string) {
        const row = yield* find(owner, id)
        const saved = row.results ?? []
        // Sources never change owner, and Erasure drops deleted ones from source_ids: what is left is still owned.
        const sourceIds = row.source_ids.length === 0
          ? []
          : (yield* sql<{ id: string }>`
              SELECT id FROM sources WHERE owner_id = ${owner} AND id = ANY(${row.source_ids}::text[])`.pipe(Effect.orDie))
            .map((source) => source.id)
        const ordered = row.source_ids.filter((sourceId) => sourceIds.includes(sourceId))
        const topK = row.top_k ?? Math.min(50, Math.max(defaultTopK, saved.length))
        const notices: Array<string> = []
        let results: ReadonlyArray<Hit> = []
        if (row.query !== null) {
          const search = yield* retriever.search({
            owner,
            query: row.query,
            strategy: row.strategy ?? "multi",
            topK,
            sourceIds: ordered,
            saveExploration: false
          }).pipe(Effect.catch(searchFailure))
          results = search.results
          notices.push(...search.notices)
        }
        const now = new Set(results.map((hit) => hit.chunk_id))
        const before = new Set(saved.map((hit) => hit.chunk_id))
        const missing = saved.filter((hit) => !now.has(hit.chunk_id))
        const stillThere = missing.length === 0 ? new Set<string>() : new Set(
          (yield* sql<{ id: string }>`
            SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
            WHERE c.id = ANY(${missing.map((hit) => hit.chunk_id)}::text[])`.pipe(Effect.orDie)).map((c) => c.id)
        )
        const nodes = [...new Set([...row.seed_node_ids, ...row.expanded_node_ids])]
        const found = yield* existingNodes(ordered, nodes)
        const replayedAt = DateTime.formatIso(DateTime.makeUnsafe(yield* Clock.currentTimeMillis))
        return {
          exploration_id: row.id,
          replayed_at: replayedAt,
          query: row.query,
          strategy: row.strategy,
          top_k: row.query === null ? null : topK,
          searched_source_ids: ordered,
          notices,
          results,
          new_hits: results.filter((hit) => !before.has(hit.chunk_id)),
          vanished_hits: missing.map((hit) => ({
            hit,
            reason: stillThere.has(hit.chunk_id) ? "outranked" as const : "gone" as const
          })),
          kept_hits: saved.length - missing.length,
          erased_hits: Math.max(0, row.saved_hit_count - row.hit_count),
          nodes: {
            present: nodes.filter((node) => found.has(node)),
            vanished: nodes.filter((node) => nodeParts(node).type !== "community" && !found.has(node)),
            unchecked: nodes.filter((node) => nodeParts(node).type === "community")
          }
        } satisfies ExplorationReplay
      })

      return Explorations.of({ create, list, get, rename, remove, replay })
    })
  ).pipe(Layer.provide(Erasure.layer))
}
