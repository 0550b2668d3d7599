import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { EntityKind, EventTime, ParticipantRole } from "../domain/Graph.ts"
import { instantOf } from "../domain/Instant.ts"
import { PageCursor } from "../domain/Page.ts"
import type {
  ExpandItem,
  ExpandOut,
  ExpandRequest,
  NeighbourKind,
  NodeDetail,
  NodeRef,
  NodeType,
  UniverseManifest
} from "../domain/Universe.ts"
import type { UserId } from "../domain/User.ts"
import { eventTime, excerptAround, surfacePattern } from "../stores/Graph.ts"
import { searchable } from "../stores/Searchable.ts"
import { quotedChunks } from "../stores/Universe.ts"
import { ownedSources, sourceIdList } from "../stores/SourceAccess.ts"
import type { Issue } from "./Sources.ts"

export type UniverseError =
  | { readonly _tag: "SourceNotFound"; readonly sourceId: string }
  | { readonly _tag: "NodeNotFound" }
  | { readonly _tag: "InvalidCursor" }
  | { readonly _tag: "InvalidQuery"; readonly issues: ReadonlyArray<Issue> }

export class UniverseFailure extends Data.TaggedError("UniverseFailure")<{ readonly reason: UniverseError }> {}

const fail = (reason: UniverseError) => Effect.fail(new UniverseFailure({ reason }))

const maxSources = 256
const maxEdges = 5000
const detailMembers = 20

type Position = { readonly x: number; readonly y: number }

/** A node as the request names it. */
type Parsed =
  | { readonly type: "community"; readonly sourceId: string; readonly community: number }
  | { readonly type: "entity" | "event" | "document"; readonly id: string }

const parseNodeId = (nodeId: string): Parsed => {
  const [type, ...rest] = nodeId.split(":")
  if (type === "community") return { type, sourceId: rest[0]!, community: Number(rest[1]) }
  return { type: type as "entity" | "event" | "document", id: rest.join(":") }
}

/** The node's own facts once found: its source, label and position, and what its neighbour queries need. */
interface Resolved {
  readonly parsed: Parsed
  readonly ref: NodeRef
  /** The document's active version, for a document node. */
  readonly version?: number
}

const kindsOf: Record<Exclude<NodeType, "chunk">, ReadonlyArray<NeighbourKind>> = {
  community: ["entity"],
  entity: ["entity", "event", "document"],
  event: ["entity", "chunk", "document"],
  document: ["entity", "event", "chunk"]
}

const expandCursor = PageCursor(
  "universe.expand",
  Schema.Struct({ node: Schema.String, k: Schema.Int, s: Schema.Int, key: Schema.String })
)

type StoredKind = "entity" | "event" | "document" | "chunk"

/** A stable small offset from the id: where a node without a position of its own sits around its parent. */
const jitter = (id: string, around: Position, reach = 12): Position => {
  let hash = 2166136261
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 16777619)
  const angle = ((hash >>> 0) % 3600) / 3600 * 2 * Math.PI
  const distance = reach * (0.5 + (((hash >>> 12) % 1000) / 2000))
  const round = (value: number) => Math.round(value * 100) / 100
  return { x: round(around.x + Math.cos(angle) * distance), y: round(around.y + Math.sin(angle) * distance) }
}

/** The space left between two sources' maps laid side by side. */
const frameGap = 100
const round2 = (value: number) => Math.round(value * 100) / 100

const iso = (date: Date | null) => date === null ? null : date.toISOString()
const span = (start: Date | null, end: Date | null) =>
  start === null || end === null ? null : { start: start.toISOString(), end: end.toISOString() }
const confidence = (value: number) => Math.round(value * 1e6) / 1e6

interface EventRow {
  readonly id: string
  readonly source_id: string
  readonly document_id: string
  readonly statement: string
  readonly kind: string
  readonly time_start: Date | null
  readonly time_end: Date | null
  readonly time_precision: string | null
  readonly time_text: string | null
  readonly time_relative: boolean
  readonly confidence: number
}

/**
 * The knowledge universe: the overview of the caller's sources from the aggregates the background keeps
 * (manifest), a node's neighbours page by page (expand), and one node's detail with its provenance.
 */
export class Universe extends Context.Service<Universe, {
  readonly manifest: (owner: UserId, sourceIds: ReadonlyArray<string> | undefined) => Effect.Effect<
    UniverseManifest,
    UniverseFailure
  >
  readonly expand: (owner: UserId, request: ExpandRequest) => Effect.Effect<ExpandOut, UniverseFailure>
  readonly node: (owner: UserId, nodeId: string) => Effect.Effect<NodeDetail, UniverseFailure>
}>()("engram/Universe") {
  static readonly layer = Layer.effect(
    Universe,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** The requested sources, all the caller's (else SourceNotFound), or every source of the caller. */
      const sourcesOf = Effect.fnUntraced(function*(owner: UserId, requested: ReadonlyArray<string> | undefined) {
        if (requested === undefined) return yield* ownedSources(sql, owner, undefined).pipe(Effect.orDie)
        const ids = sourceIdList(requested)
        if (ids.length === 0 || ids.length > maxSources) {
          return yield* fail({
            _tag: "InvalidQuery",
            issues: [{ path: "source_ids", message: `must name 1 to ${maxSources} sources` }]
          })
        }
        return yield* ownedSources(sql, owner, ids).pipe(
          Effect.catchTag("SourceNotOwned", ({ sourceId }) => fail({ _tag: "SourceNotFound", sourceId }))
        )
      })

      /**
       * Where each of the owner's source maps sits in the one plane the client draws: maps are computed per source
       * around their own origin, then laid side by side, left to right in the order the sources were created,
       * centred on y = 0, a gap apart. The offsets follow the owner's sources, not the request's selection, so
       * a node keeps its position whichever sources a request names.
       */
      const framesOf = (owner: UserId) =>
        sql<{ id: string; min_x: number | null; min_y: number | null; max_x: number | null; max_y: number | null }>`
          SELECT s.id, u.min_x, u.min_y, u.max_x, u.max_y
          FROM sources s LEFT JOIN universe_sources u ON u.source_id = s.id
          WHERE s.owner_id = ${owner} ORDER BY s.created_at, s.id`.pipe(
          Effect.orDie,
          Effect.map((rows) => {
            const frames = new Map<string, Position>()
            let cursor = 0
            for (const row of rows) {
              if (row.min_x === null) continue
              frames.set(row.id, { x: round2(cursor - row.min_x), y: round2(-(row.min_y! + row.max_y!) / 2) })
              cursor += row.max_x! - row.min_x + frameGap
            }
            return frames
          })
        )

      /** A position of a source's map, in the owner's plane. */
      const placed = (frames: ReadonlyMap<string, Position>, sourceId: string, position: Position): Position => {
        const offset = frames.get(sourceId)
        return offset === undefined ? position : { x: round2(position.x + offset.x), y: round2(position.y + offset.y) }
      }

      const manifest = Effect.fn("Universe.manifest")(function*(
        owner: UserId,
        requested: ReadonlyArray<string> | undefined
      ) {
        const sourceIds = yield* sourcesOf(owner, requested)
        const sources = yield* sql<{
          id: string
          name: string
          computed_at: Date | null
          pending: boolean
          document_count: number | null
          chunk_count: number | null
          entity_count: number | null
          event_count: number | null
          dated_event_count: number | null
          entity_kinds: ReadonlyArray<{ kind: string; count: number }> | null
          time_start: Date | null
          time_end: Date | null
          min_x: number | null
          min_y: number | null
          max_x: number | null
          max_y: number | null
        }>`
          SELECT s.id, s.name, u.computed_at, coalesce(u.dirty_since IS NOT NULL, false) AS pending,
            u.document_count, u.chunk_count, u.entity_count, u.event_count, u.dated_event_count, u.entity_kinds,
            u.time_start, u.time_end, u.min_x, u.min_y, u.max_x, u.max_y
          FROM sources s LEFT JOIN universe_sources u ON u.source_id = s.id
          WHERE s.id = ANY(${sourceIds}::text[])
          ORDER BY s.created_at, s.id`.pipe(Effect.orDie)
        const communities = yield* sql<{
          source_id: string
          community: number
          label: string
          loose: boolean
          size: number
          event_count: number
          top_members: ReadonlyArray<{ id: string; name: string; kind: string; score: number }>
          time_start: Date | null
          time_end: Date | null
          x: number
          y: number
          radius: number
        }>`
          SELECT source_id, community, label, loose, size, event_count, top_members, time_start, time_end, x, y, radius
          FROM universe_communities WHERE source_id = ANY(${sourceIds}::text[])
          ORDER BY source_id, community`.pipe(Effect.orDie)
        const links = yield* sql<{ source_id: string; a: number; b: number; weight: number }>`
          SELECT source_id, a, b, weight FROM universe_links WHERE source_id = ANY(${sourceIds}::text[])
          ORDER BY weight DESC, source_id, a, b LIMIT ${maxEdges}`.pipe(Effect.orDie)
        const frames = yield* framesOf(owner)
        const order = new Map(sources.map((source, i) => [source.id, i]))
        const kinds = new Map<string, number>()
        for (const source of sources) {
          for (const { kind, count } of source.entity_kinds ?? []) kinds.set(kind, (kinds.get(kind) ?? 0) + count)
        }
        const starts = sources.flatMap((s) => s.time_start ?? [])
        const ends = sources.flatMap((s) => s.time_end ?? [])
        const computed = sources.map((s) => s.computed_at)
        return {
          computed_at: computed.length === 0 || computed.some((c) => c === null)
            ? null
            : new Date(Math.min(...computed.map((c) => c!.getTime()))).toISOString(),
          pending: sources.some((s) => s.pending),
          sources: sources.map((s) => ({
            source_id: s.id,
            name: s.name,
            computed_at: iso(s.computed_at),
            pending: s.pending,
            counts: {
              documents: s.document_count ?? 0,
              chunks: s.chunk_count ?? 0,
              entities: s.entity_count ?? 0,
              events: s.event_count ?? 0,
              dated_events: s.dated_event_count ?? 0,
              undated_events: (s.event_count ?? 0) - (s.dated_event_count ?? 0)
            },
            entity_kinds: s.entity_kinds ?? [],
            time_span: span(s.time_start, s.time_end),
            bounds: s.min_x === null ? null : (() => {
              const low = placed(frames, s.id, { x: s.min_x, y: s.min_y! })
              const high = placed(frames, s.id, { x: s.max_x!, y: s.max_y! })
              return { min_x: low.x, min_y: low.y, max_x: high.x, max_y: high.y }
            })()
          })),
          entity_kinds: [...kinds.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
            .map(([kind, count]) => ({ kind, count })),
          time_span: starts.length === 0
            ? null
            : span(
              new Date(Math.min(...starts.map((d) => d.getTime()))),
              new Date(Math.max(...ends.map((d) => d.getTime())))
            ),
          communities: [...communities].sort((a, b) =>
            order.get(a.source_id)! - order.get(b.source_id)! || a.community - b.community
          ).map((c) => ({
            id: `community:${c.source_id}:${c.community}`,
            source_id: c.source_id,
            label: c.label,
            loose: c.loose,
            size: c.size,
            event_count: c.event_count,
            top_members: c.top_members.map((m) => ({
              id: `entity:${m.id}`,
              entity_id: m.id,
              name: m.name,
              kind: m.kind,
              score: m.score
            })),
            time_span: span(c.time_start, c.time_end),
            position: placed(frames, c.source_id, { x: c.x, y: c.y }),
            radius: c.radius
          })),
          community_edges: links.map((l) => ({
            source: `community:${l.source_id}:${l.a}`,
            target: `community:${l.source_id}:${l.b}`,
            weight: l.weight
          }))
        }
      })

      const visibleEvent = (alias: string) =>
        sql`JOIN documents vd ON vd.id = ${sql.literal(alias)}.document_id AND ${
          searchable(sql, "vd", `${alias}.version`)
        }`

      /** Stored positions of entities (of the last map). */
      const entityPositions = (ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed(new Map<string, Position>()) : sql<{ entity_id: string; x: number; y: number }>`
          SELECT entity_id, x, y FROM universe_entities WHERE entity_id = ANY(${ids}::text[])`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Map(rows.map((r) => [r.entity_id, { x: r.x, y: r.y }])))
        )

      /** An event sits among its participants (their mean position), a little apart from them. */
      const eventPositions = (ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed(new Map<string, Position>()) : sql<{ event_id: string; x: number; y: number }>`
          SELECT p.event_id, avg(u.x)::float8 AS x, avg(u.y)::float8 AS y
          FROM event_participants p JOIN universe_entities u ON u.entity_id = p.entity_id
          WHERE p.event_id = ANY(${ids}::text[]) GROUP BY p.event_id`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Map(rows.map((r) => [r.event_id, jitter(r.event_id, r)])))
        )

      /** A document sits among its ten most mentioned entities. */
      const documentPositions = (ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed(new Map<string, Position>()) : sql<{ document_id: string; x: number; y: number }>`
          SELECT document_id, avg(x)::float8 AS x, avg(y)::float8 AS y FROM (
            SELECT m.document_id, u.x, u.y,
              row_number() OVER (PARTITION BY m.document_id ORDER BY m.count DESC, m.entity_id) AS rank
            FROM entity_mentions m
            JOIN documents d ON d.id = m.document_id AND d.active_version = m.version
            JOIN universe_entities u ON u.entity_id = m.entity_id
            WHERE m.document_id = ANY(${ids}::text[]) AND m.chunk_id IS NULL
          ) top WHERE rank <= 10 GROUP BY document_id`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Map(rows.map((r) => [r.document_id, jitter(r.document_id, r, 20)])))
        )

      /** The node, if it is in one of the sources and visible; NodeNotFound otherwise (another user's too). */
      const resolve = Effect.fnUntraced(function*(parsed: Parsed, sourceIds: ReadonlyArray<string>) {
        const origin = { x: 0, y: 0 }
        switch (parsed.type) {
          case "community": {
            if (!sourceIds.includes(parsed.sourceId)) return yield* fail({ _tag: "NodeNotFound" })
            const [row] = yield* sql<{ label: string; x: number; y: number }>`
              SELECT label, x, y FROM universe_communities
              WHERE source_id = ${parsed.sourceId} AND community = ${parsed.community}`.pipe(Effect.orDie)
            if (row === undefined) return yield* fail({ _tag: "NodeNotFound" })
            return {
              parsed,
              ref: {
                id: `community:${parsed.sourceId}:${parsed.community}`,
                type: "community",
                label: row.label,
                source_id: parsed.sourceId,
                position: { x: row.x, y: row.y }
              }
            } satisfies Resolved
          }
          case "entity": {
            const [row] = yield* sql<{ source_id: string; name: string; x: number | null; y: number | null }>`
              SELECT e.source_id, e.name, u.x, u.y FROM entities e
              LEFT JOIN universe_entities u ON u.entity_id = e.id
              WHERE e.id = ${parsed.id} AND e.source_id = ANY(${sourceIds}::text[]) AND EXISTS (
                SELECT 1 FROM entity_mentions m JOIN documents d ON d.id = m.document_id AND ${
              searchable(sql, "d", "m.version")
            }
                WHERE m.entity_id = e.id)`.pipe(Effect.orDie)
            if (row === undefined) return yield* fail({ _tag: "NodeNotFound" })
            const position = row.x === null ? jitter(parsed.id, origin) : { x: row.x, y: row.y! }
            return {
              parsed,
              ref: { id: `entity:${parsed.id}`, type: "entity", label: row.name, source_id: row.source_id, position }
            } satisfies Resolved
          }
          case "event": {
            const [row] = yield* sql<{ source_id: string; statement: string }>`
              SELECT ev.source_id, ev.statement FROM events ev ${visibleEvent("ev")}
              WHERE ev.id = ${parsed.id} AND ev.source_id = ANY(${sourceIds}::text[])`.pipe(Effect.orDie)
            if (row === undefined) return yield* fail({ _tag: "NodeNotFound" })
            const position = (yield* eventPositions([parsed.id])).get(parsed.id) ?? jitter(parsed.id, origin)
            return {
              parsed,
              ref: { id: `event:${parsed.id}`, type: "event", label: row.statement, source_id: row.source_id, position }
            } satisfies Resolved
          }
          case "document": {
            const [row] = yield* sql<{ source_id: string; title: string; active_version: number }>`
              SELECT source_id, title, active_version FROM documents
              WHERE id = ${parsed.id} AND source_id = ANY(${sourceIds}::text[]) AND status = 'ready'`.pipe(
              Effect.orDie
            )
            if (row === undefined) return yield* fail({ _tag: "NodeNotFound" })
            const position = (yield* documentPositions([parsed.id])).get(parsed.id) ?? jitter(parsed.id, origin)
            return {
              parsed,
              version: row.active_version,
              ref: { id: `document:${parsed.id}`, type: "document", label: row.title, source_id: row.source_id, position }
            } satisfies Resolved
          }
        }
      })

      interface Window {
        readonly from: Date | null
        readonly to: Date | null
      }

      const eventWindow = (alias: string, window: Window) =>
        sql`${window.from === null ? sql`` : sql`AND ${sql.literal(alias)}.time_end > ${window.from}`}
          ${window.to === null ? sql`` : sql`AND ${sql.literal(alias)}.time_start < ${window.to}`}`

      const participantCount = (alias: string) =>
        sql`(SELECT count(DISTINCT x.entity_id) FROM event_participants x WHERE x.event_id = ${sql.literal(alias)}.id)`

      /**
       * The neighbours of one kind as rows (ref_id, score, key), ranked by score (descending) then key, and what
       * the item calls the relation.
       */
      const neighbours = (node: Resolved, kind: NeighbourKind, window: Window): {
        readonly rows: Statement.Fragment
        readonly relation: string
      } | undefined => {
        const parsed = node.parsed
        switch (parsed.type) {
          case "community":
            return kind !== "entity" ? undefined : {
              relation: "member",
              rows: sql`
                SELECT u.entity_id AS ref_id, u.score AS score, u.entity_id AS key
                FROM universe_entities u
                ${
                window.from === null && window.to === null ? sql`` : sql`JOIN entities e ON e.id = u.entity_id
                  ${window.from === null ? sql`` : sql`AND e.last_seen >= ${window.from}`}
                  ${window.to === null ? sql`` : sql`AND e.first_seen < ${window.to}`}`
              }
                WHERE u.source_id = ${parsed.sourceId} AND u.community = ${parsed.community}`
            }
          case "entity":
            switch (kind) {
              case "entity":
                return {
                  relation: "related",
                  rows: sql`
                    SELECT p2.entity_id AS ref_id, count(DISTINCT ev.id) AS score, p2.entity_id AS key
                    FROM event_participants p1
                    JOIN events ev ON ev.id = p1.event_id ${eventWindow("ev", window)}
                    ${visibleEvent("ev")}
                    JOIN event_participants p2 ON p2.event_id = ev.id AND p2.entity_id <> p1.entity_id
                    WHERE p1.entity_id = ${parsed.id}
                    GROUP BY p2.entity_id`
                }
              case "event":
                return {
                  relation: "participates",
                  rows: sql`
                    SELECT ev.id AS ref_id, ${participantCount("ev")} AS score, ev.id AS key
                    FROM events ev ${visibleEvent("ev")}
                    WHERE ev.id IN (SELECT p.event_id FROM event_participants p WHERE p.entity_id = ${parsed.id})
                      ${eventWindow("ev", window)}`
                }
              case "document":
                return {
                  relation: "mentioned_in",
                  rows: sql`
                    SELECT m.document_id AS ref_id, sum(m.count) AS score, m.document_id AS key
                    FROM entity_mentions m JOIN documents d ON d.id = m.document_id AND ${
                    searchable(sql, "d", "m.version")
                  }
                    WHERE m.entity_id = ${parsed.id} AND m.chunk_id IS NULL
                    GROUP BY m.document_id`
                }
              default:
                return undefined
            }
          case "event":
            switch (kind) {
              case "entity":
                return {
                  relation: "participant",
                  rows: sql`
                    SELECT p.entity_id AS ref_id,
                      max(CASE p.role WHEN 'actor' THEN 4 WHEN 'object' THEN 3 WHEN 'place' THEN 2 ELSE 1 END) AS score,
                      p.entity_id AS key
                    FROM event_participants p WHERE p.event_id = ${parsed.id}
                    GROUP BY p.entity_id`
                }
              case "chunk":
                return {
                  relation: "source_chunk",
                  rows: sql`
                    SELECT c.id AS ref_id, 1 AS score, lpad(c.ordinal::text, 10, '0') || c.id AS key
                    FROM event_chunks ec JOIN chunks c ON c.id = ec.chunk_id WHERE ec.event_id = ${parsed.id}`
                }
              case "document":
                return {
                  relation: "from_document",
                  rows: sql`SELECT document_id AS ref_id, 1 AS score, document_id AS key FROM events
                    WHERE id = ${parsed.id}`
                }
              default:
                return undefined
            }
          case "document":
            switch (kind) {
              case "entity":
                return {
                  relation: "mentions",
                  rows: sql`
                    SELECT m.entity_id AS ref_id, sum(m.count) AS score, m.entity_id AS key
                    FROM entity_mentions m
                    WHERE m.document_id = ${parsed.id} AND m.version = ${node.version!} AND m.chunk_id IS NULL
                    GROUP BY m.entity_id`
                }
              case "event":
                return {
                  relation: "states",
                  rows: sql`
                    SELECT ev.id AS ref_id, ${participantCount("ev")} AS score, ev.id AS key
                    FROM events ev
                    WHERE ev.document_id = ${parsed.id} AND ev.version = ${node.version!} ${eventWindow("ev", window)}`
                }
              case "chunk":
                return {
                  relation: "contains",
                  rows: sql`
                    SELECT c.id AS ref_id, 1 AS score, lpad(c.ordinal::text, 10, '0') || c.id AS key
                    FROM chunks c WHERE c.document_id = ${parsed.id} AND c.version = ${node.version!}`
                }
              default:
                return undefined
            }
        }
      }

      /** The items for rows of one kind, in the rows' order, positioned (stored, among their own, or by the parent). */
      const hydrate = Effect.fnUntraced(function*(
        kind: NeighbourKind,
        rows: ReadonlyArray<{ ref_id: string; score: number }>,
        relation: string,
        parent: NodeRef,
        roleOf?: ReadonlyMap<string, ParticipantRole>
      ) {
        const ids = rows.map((row) => row.ref_id)
        if (ids.length === 0) return [] as Array<ExpandItem>
        const base = (id: string, score: number) => ({
          id: `${kind}:${id}`,
          ref_id: id,
          type: kind,
          relation,
          evidence: Number(score),
          role: roleOf?.get(id) ?? null,
          time: null as EventTime | null
        })
        switch (kind) {
          case "entity": {
            const found = yield* sql<{ id: string; source_id: string; name: string; kind: EntityKind }>`
              SELECT id, source_id, name, kind FROM entities WHERE id = ANY(${ids}::text[])`.pipe(Effect.orDie)
            const byId = new Map(found.map((row) => [row.id, row]))
            const positions = yield* entityPositions(ids)
            return rows.flatMap((row): Array<ExpandItem> => {
              const entity = byId.get(row.ref_id)
              return entity === undefined ? [] : [{
                ...base(row.ref_id, row.score),
                label: entity.name,
                kind: entity.kind,
                source_id: entity.source_id,
                position: positions.get(row.ref_id) ?? jitter(row.ref_id, parent.position)
              }]
            })
          }
          case "event": {
            const found = yield* sql<EventRow>`
              SELECT id, source_id, document_id, statement, kind, time_start, time_end, time_precision, time_text,
                time_relative, confidence
              FROM events WHERE id = ANY(${ids}::text[])`.pipe(Effect.orDie)
            const byId = new Map(found.map((row) => [row.id, row]))
            const positions = yield* eventPositions(ids)
            return rows.flatMap((row): Array<ExpandItem> => {
              const event = byId.get(row.ref_id)
              return event === undefined ? [] : [{
                ...base(row.ref_id, row.score),
                label: event.statement,
                kind: event.kind,
                source_id: event.source_id,
                time: eventTime(event),
                position: positions.get(row.ref_id) ?? jitter(row.ref_id, parent.position)
              }]
            })
          }
          case "document": {
            const found = yield* sql<{ id: string; source_id: string; title: string; format: string }>`
              SELECT id, source_id, title, format FROM documents WHERE id = ANY(${ids}::text[])`.pipe(Effect.orDie)
            const byId = new Map(found.map((row) => [row.id, row]))
            const positions = yield* documentPositions(ids)
            return rows.flatMap((row): Array<ExpandItem> => {
              const document = byId.get(row.ref_id)
              return document === undefined ? [] : [{
                ...base(row.ref_id, row.score),
                label: document.title,
                kind: document.format,
                source_id: document.source_id,
                position: positions.get(row.ref_id) ?? jitter(row.ref_id, parent.position, 20)
              }]
            })
          }
          case "chunk": {
            const found = yield* sql<{ id: string; source_id: string; text: string }>`
              SELECT id, source_id, left(text, 160) AS text FROM chunks WHERE id = ANY(${ids}::text[])`.pipe(
              Effect.orDie
            )
            const byId = new Map(found.map((row) => [row.id, row]))
            return rows.flatMap((row): Array<ExpandItem> => {
              const chunk = byId.get(row.ref_id)
              return chunk === undefined ? [] : [{
                ...base(row.ref_id, row.score),
                label: excerptAround(undefined, chunk.text.length > 120 ? `${chunk.text.slice(0, 120)}…` : chunk.text),
                kind: null,
                source_id: chunk.source_id,
                position: jitter(row.ref_id, parent.position, 8)
              }]
            })
          }
        }
      })

      interface RankedPage {
        readonly total: number
        /** Neighbours after the cursor (all of them without one), this page included. */
        readonly following: number
        readonly page: ReadonlyArray<{ readonly ref_id: string; readonly score: number; readonly key: string }>
      }

      /** One page of a kind's neighbours ranked in SQL (score descending, then key), after the cursor `at`. */
      const livePage = (
        rows: Statement.Fragment,
        skipped: boolean,
        at: { readonly s: number; readonly key: string } | undefined,
        room: number
      ) => {
        const position = at !== undefined
          ? sql`WHERE (n.score < ${at.s} OR (n.score = ${at.s} AND n.key > ${at.key}))`
          : skipped
          ? sql`WHERE false`
          : sql``
        return sql<{ ref_id: string | null; score: number; key: string; total: number; following: number }>`
          WITH n AS (${rows})
          SELECT p.ref_id, p.score, p.key, c.total, c.following FROM
            (SELECT count(*)::int AS total, (SELECT count(*) FROM n ${position})::int AS following FROM n) c
            LEFT JOIN LATERAL (
              SELECT n.ref_id, n.score::int AS score, n.key FROM n ${position}
              ORDER BY n.score DESC, n.key LIMIT ${room}
            ) p ON true`.pipe(
          Effect.orDie,
          Effect.map((found): RankedPage => ({
            total: found[0]?.total ?? 0,
            following: found[0]?.following ?? 0,
            page: found.flatMap((row) => row.ref_id === null ? [] : [{ ref_id: row.ref_id, score: row.score, key: row.key }])
          }))
        )
      }

      /**
       * An entity's neighbour counts and, for a hub, its first neighbours of each kind, as the last recompute stored them
       * (src/stores/Universe.ts), when its source's aggregates are current; undefined otherwise.
       */
      const storedNeighbours = (entityId: string) =>
        sql<{
          kind: StoredKind | null
          ref_id: string | null
          score: number | null
          event_count: number
          related_count: number
          document_count: number
        }>`
          SELECT n.kind, n.ref_id, n.score, u.event_count, u.related_count, u.document_count
          FROM universe_entities u
          JOIN universe_sources s ON s.source_id = u.source_id AND s.computed_at IS NOT NULL AND s.dirty_since IS NULL
          LEFT JOIN universe_neighbours n ON n.entity_id = u.entity_id
          WHERE u.entity_id = ${entityId}
          ORDER BY n.kind, n.rank`.pipe(
          Effect.orDie,
          Effect.map((rows) => {
            if (rows.length === 0) return undefined
            const lists = new Map<StoredKind, Array<{ ref_id: string; score: number; key: string }>>()
            for (const row of rows) {
              if (row.kind === null) continue
              const list = lists.get(row.kind) ?? []
              list.push({ ref_id: row.ref_id!, score: row.score!, key: row.ref_id! })
              lists.set(row.kind, list)
            }
            const totals: Record<Exclude<StoredKind, "chunk">, number> = {
              entity: rows[0]!.related_count,
              event: rows[0]!.event_count,
              document: rows[0]!.document_count
            }
            return { totals, lists }
          })
        )

      /**
       * The page from a hub's stored neighbours (the same order as the live ranking: keys are ids compared byte
       * by byte), or undefined when the page reaches past what is stored.
       */
      const storedPage = (
        stored: Effect.Success<ReturnType<typeof storedNeighbours>>,
        kind: NeighbourKind,
        skipped: boolean,
        at: { readonly s: number; readonly key: string } | undefined,
        room: number
      ): RankedPage | undefined => {
        if (stored === undefined || kind === "chunk") return undefined
        const list = stored.lists.get(kind)
        if (list === undefined) return undefined
        const total = stored.totals[kind]
        if (skipped) return { total, following: 0, page: [] }
        const from = at === undefined
          ? 0
          : list.findIndex((row) => row.score < at.s || (row.score === at.s && row.key > at.key))
        const start = from === -1 ? list.length : from
        const complete = list.length === total
        if (!complete && (start === list.length || start + room > list.length)) return undefined
        return { total, following: total - start, page: list.slice(start, start + room) }
      }

      const expand = Effect.fn("Universe.expand")(function*(owner: UserId, request: ExpandRequest) {
        const window = { from: instantOf(request.from), to: instantOf(request.to) }
        if (window.from !== null && window.to !== null && window.from >= window.to) {
          return yield* fail({ _tag: "InvalidQuery", issues: [{ path: "body.to", message: "must be after from" }] })
        }
        const sourceIds = yield* sourcesOf(owner, request.source_ids)
        const node = yield* resolve(parseNodeId(request.node_id), sourceIds)
        const available = kindsOf[node.parsed.type]
        const kinds = request.kinds ?? available
        const after = request.cursor === undefined ? undefined : expandCursor.decode(request.cursor)
        if (after !== undefined && (Option.isNone(after) || after.value.node !== node.ref.id)) {
          return yield* fail({ _tag: "InvalidCursor" })
        }
        const key = after?.value
        const limit = request.limit ?? 20
        const stored = node.parsed.type === "entity" ? yield* storedNeighbours(node.parsed.id) : undefined
        const items: Array<ExpandItem> = []
        const counts: Array<{ kind: NeighbourKind; total: number }> = []
        let remaining = 0
        let last: { k: number; s: number; key: string } | undefined
        for (const [k, kind] of kinds.entries()) {
          const query = neighbours(node, kind, window)
          if (query === undefined) {
            counts.push({ kind, total: 0 })
            continue
          }
          const skipped = key !== undefined && k < key.k
          const room = skipped ? 0 : limit - items.length
          const at = key !== undefined && k === key.k ? { s: key.s, key: key.key } : undefined
          const ranked = (window.from === null && window.to === null
            ? storedPage(stored, kind, skipped, at, room)
            : undefined) ?? (yield* livePage(query.rows, skipped, at, room))
          counts.push({ kind, total: ranked.total })
          const page = ranked.page
          remaining += ranked.following - page.length
          if (page.length === 0) continue
          const roles = kind === "entity" && node.parsed.type === "event"
            ? new Map(page.map((row) => [row.ref_id, (["participant", "place", "object", "actor"] as const)[row.score - 1]!]))
            : undefined
          items.push(...yield* hydrate(kind, page, query.relation, node.ref, roles))
          const end = page[page.length - 1]!
          last = { k, s: end.score, key: end.key }
        }
        const frames = yield* framesOf(owner)
        return {
          node: { ...node.ref, position: placed(frames, node.ref.source_id, node.ref.position) },
          items: items.map((item) => ({ ...item, position: placed(frames, item.source_id, item.position) })),
          counts,
          total: counts.reduce((sum, c) => sum + c.total, 0),
          remaining,
          next_cursor: remaining > 0 && last !== undefined ? expandCursor.encode({ node: node.ref.id, ...last }) : null
        }
      })

      const quotes = (
        chunkRows: ReadonlyArray<{ chunk_id: string; document_id: string; title: string; ordinal: number; text: string }>,
        pattern: RegExp | undefined
      ) =>
        chunkRows.map((c) => ({
          chunk_id: c.chunk_id,
          document_id: c.document_id,
          document_title: c.title,
          ordinal: c.ordinal,
          quote: excerptAround(pattern, c.text)
        }))

      const node = Effect.fn("Universe.node")(function*(owner: UserId, nodeId: string) {
        const sourceIds = yield* sourcesOf(owner, undefined)
        const resolved = yield* resolve(parseNodeId(nodeId), sourceIds)
        const parsed = resolved.parsed
        const frames = yield* framesOf(owner)
        const ref = { ...resolved.ref, position: placed(frames, resolved.ref.source_id, resolved.ref.position) }
        switch (parsed.type) {
          case "entity": {
            const [entity] = yield* sql<{
              kind: EntityKind
              description: string | null
              mention_count: number
              first_seen: Date | null
              last_seen: Date | null
              community: number | null
            }>`
              SELECT e.kind, e.description, e.mention_count, e.first_seen, e.last_seen, u.community
              FROM entities e LEFT JOIN universe_entities u ON u.entity_id = e.id WHERE e.id = ${parsed.id}`
              .pipe(Effect.orDie)
            const aliases = (yield* sql<{ alias: string }>`
              SELECT alias FROM entity_aliases WHERE entity_id = ${parsed.id} ORDER BY alias`.pipe(Effect.orDie))
              .map((row) => row.alias)
            // Counts (and a hub's first documents) come from the last recompute while it is current.
            const stored = yield* storedNeighbours(parsed.id)
            const storedDocuments = stored?.lists.get("document")?.slice(0, 10)
            const [counts] = stored !== undefined
              ? [{ events: stored.totals.event, related: stored.totals.entity }]
              : yield* sql<{ events: number; related: number }>`
                SELECT
                  (SELECT count(DISTINCT ev.id) FROM event_participants p JOIN events ev ON ev.id = p.event_id
                    ${visibleEvent("ev")} WHERE p.entity_id = ${parsed.id})::int AS events,
                  (SELECT count(DISTINCT p2.entity_id) FROM event_participants p1
                    JOIN events ev ON ev.id = p1.event_id ${visibleEvent("ev")}
                    JOIN event_participants p2 ON p2.event_id = ev.id AND p2.entity_id <> p1.entity_id
                    WHERE p1.entity_id = ${parsed.id})::int AS related`.pipe(Effect.orDie)
            const documents = storedDocuments !== undefined
              ? yield* sql<{ document_id: string; title: string }>`
                SELECT id AS document_id, title FROM documents
                WHERE id = ANY(${storedDocuments.map((d) => d.ref_id)}::text[])`.pipe(
                Effect.orDie,
                Effect.map((rows) => {
                  const titles = new Map(rows.map((row) => [row.document_id, row.title]))
                  return storedDocuments.map((d) => ({ document_id: d.ref_id, title: titles.get(d.ref_id)!, mentions: d.score }))
                })
              )
              : yield* sql<{ document_id: string; title: string; mentions: number }>`
                SELECT m.document_id, d.title, sum(m.count)::int AS mentions
                FROM entity_mentions m JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
                WHERE m.entity_id = ${parsed.id} AND m.chunk_id IS NULL
                GROUP BY m.document_id, d.title
                ORDER BY mentions DESC, m.document_id`.pipe(Effect.orDie)
            const storedChunks = stored?.lists.get("chunk")
            const chunks = storedChunks !== undefined
              ? yield* sql<{ chunk_id: string; document_id: string; title: string; ordinal: number; text: string }>`
                SELECT c.id AS chunk_id, c.document_id, d.title, c.ordinal, c.text
                FROM chunks c JOIN documents d ON d.id = c.document_id
                WHERE c.id = ANY(${storedChunks.map((c) => c.ref_id)}::text[])`.pipe(
                Effect.orDie,
                Effect.map((rows) => storedChunks.flatMap((c) => rows.filter((row) => row.chunk_id === c.ref_id)))
              )
              : yield* sql<{ chunk_id: string; document_id: string; title: string; ordinal: number; text: string }>`
                SELECT m.chunk_id, c.document_id, d.title, c.ordinal, c.text
                FROM entity_mentions m
                JOIN chunks c ON c.id = m.chunk_id
                JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
                WHERE m.entity_id = ${parsed.id}
                ORDER BY m.count DESC, d.created_at, c.document_id, c.ordinal
                LIMIT ${quotedChunks}`.pipe(Effect.orDie)
            return {
              type: "entity" as const,
              id: ref.id,
              ref_id: parsed.id,
              source_id: ref.source_id,
              label: ref.label,
              kind: entity!.kind,
              aliases,
              description: entity!.description,
              time_span: span(entity!.first_seen, entity!.last_seen),
              counts: {
                mentions: entity!.mention_count,
                events: counts!.events,
                documents: stored?.totals.document ?? documents.length,
                related: counts!.related
              },
              community: entity!.community === null ? null : `community:${ref.source_id}:${entity!.community}`,
              position: ref.position,
              provenance: {
                documents: documents.slice(0, 10).map((d) => ({
                  id: `document:${d.document_id}`,
                  document_id: d.document_id,
                  title: d.title,
                  mentions: d.mentions
                })),
                chunks: quotes(chunks, surfacePattern([ref.label, ...aliases]))
              }
            }
          }
          case "event": {
            const [event] = yield* sql<EventRow & { title: string }>`
              SELECT ev.id, ev.source_id, ev.document_id, ev.statement, ev.kind, ev.time_start, ev.time_end,
                ev.time_precision, ev.time_text, ev.time_relative, ev.confidence, d.title
              FROM events ev JOIN documents d ON d.id = ev.document_id WHERE ev.id = ${parsed.id}`.pipe(Effect.orDie)
            const participants = yield* sql<{ entity_id: string; name: string; kind: EntityKind; role: ParticipantRole }>`
              SELECT p.entity_id, en.name, en.kind, p.role
              FROM event_participants p JOIN entities en ON en.id = p.entity_id
              WHERE p.event_id = ${parsed.id}
              ORDER BY CASE p.role WHEN 'actor' THEN 0 WHEN 'object' THEN 1 WHEN 'place' THEN 2 ELSE 3 END,
                en.name, p.entity_id`.pipe(Effect.orDie)
            const chunks = yield* sql<{ chunk_id: string; document_id: string; title: string; ordinal: number; text: string }>`
              SELECT c.id AS chunk_id, c.document_id, d.title, c.ordinal, c.text
              FROM event_chunks ec JOIN chunks c ON c.id = ec.chunk_id JOIN documents d ON d.id = c.document_id
              WHERE ec.event_id = ${parsed.id}
              ORDER BY c.ordinal`.pipe(Effect.orDie)
            return {
              type: "event" as const,
              id: ref.id,
              ref_id: parsed.id,
              source_id: ref.source_id,
              label: event!.statement,
              kind: event!.kind,
              time: eventTime(event!),
              confidence: confidence(event!.confidence),
              participants: participants.map((p) => ({
                id: `entity:${p.entity_id}`,
                entity_id: p.entity_id,
                name: p.name,
                kind: p.kind,
                role: p.role
              })),
              counts: { participants: new Set(participants.map((p) => p.entity_id)).size, chunks: chunks.length },
              position: ref.position,
              provenance: {
                document: {
                  id: `document:${event!.document_id}`,
                  document_id: event!.document_id,
                  title: event!.title,
                  mentions: 0
                },
                chunks: quotes(chunks.slice(0, 5), surfacePattern(participants.map((p) => p.name)))
              }
            }
          }
          case "community": {
            const [row] = yield* sql<{
              loose: boolean
              size: number
              event_count: number
              time_start: Date | null
              time_end: Date | null
              radius: number
              computed_at: Date | null
            }>`
              SELECT c.loose, c.size, c.event_count, c.time_start, c.time_end, c.radius, s.computed_at
              FROM universe_communities c JOIN universe_sources s ON s.source_id = c.source_id
              WHERE c.source_id = ${parsed.sourceId} AND c.community = ${parsed.community}`.pipe(Effect.orDie)
            const members = yield* sql<{ entity_id: string; name: string; kind: string; score: number }>`
              SELECT u.entity_id, e.name, e.kind, u.score FROM universe_entities u JOIN entities e ON e.id = u.entity_id
              WHERE u.source_id = ${parsed.sourceId} AND u.community = ${parsed.community}
              ORDER BY u.score DESC, u.entity_id LIMIT ${detailMembers}`.pipe(Effect.orDie)
            const linked = yield* sql<{ other: number; label: string; weight: number }>`
              SELECT c.community AS other, c.label, l.weight
              FROM universe_links l
              JOIN universe_communities c ON c.source_id = l.source_id
                AND c.community = CASE WHEN l.a = ${parsed.community} THEN l.b ELSE l.a END
              WHERE l.source_id = ${parsed.sourceId} AND (l.a = ${parsed.community} OR l.b = ${parsed.community})
              ORDER BY l.weight DESC, c.community LIMIT 20`.pipe(Effect.orDie)
            return {
              type: "community" as const,
              id: ref.id,
              source_id: ref.source_id,
              label: ref.label,
              loose: row!.loose,
              size: row!.size,
              event_count: row!.event_count,
              top_members: members.map((m) => ({
                id: `entity:${m.entity_id}`,
                entity_id: m.entity_id,
                name: m.name,
                kind: m.kind,
                score: m.score
              })),
              time_span: span(row!.time_start, row!.time_end),
              position: ref.position,
              radius: row!.radius,
              neighbours: linked.map((l) => ({
                id: `community:${parsed.sourceId}:${l.other}`,
                label: l.label,
                weight: l.weight
              })),
              computed_at: iso(row!.computed_at)
            }
          }
          case "document": {
            const [row] = yield* sql<{
              format: string
              document_date: Date | null
              created_at: Date
              chunks: number
              entities: number
              events: number
            }>`
              SELECT d.format, d.document_date, d.created_at,
                (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.version = d.active_version)::int AS chunks,
                (SELECT count(DISTINCT m.entity_id) FROM entity_mentions m
                  WHERE m.document_id = d.id AND m.version = d.active_version)::int AS entities,
                (SELECT count(*) FROM events ev
                  WHERE ev.document_id = d.id AND ev.version = d.active_version)::int AS events
              FROM documents d WHERE d.id = ${parsed.id}`.pipe(Effect.orDie)
            const first = yield* sql<{ chunk_id: string; document_id: string; title: string; ordinal: number; text: string }>`
              SELECT c.id AS chunk_id, c.document_id, d.title, c.ordinal, c.text
              FROM chunks c JOIN documents d ON d.id = c.document_id AND d.active_version = c.version
              WHERE c.document_id = ${parsed.id}
              ORDER BY c.ordinal LIMIT 1`.pipe(Effect.orDie)
            return {
              type: "document" as const,
              id: ref.id,
              ref_id: parsed.id,
              source_id: ref.source_id,
              label: ref.label,
              format: row!.format,
              document_date: iso(row!.document_date),
              created_at: row!.created_at.toISOString(),
              counts: { chunks: row!.chunks, entities: row!.entities, events: row!.events },
              position: ref.position,
              provenance: { chunks: quotes(first, undefined) }
            }
          }
        }
      })

      return Universe.of({ manifest, expand, node })
    })
  )
}

