import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { MapInput, MapOutput } from "../background/universeMap.ts"
import { searchable } from "./Searchable.ts"
import { storeTimeline } from "./Timeline.ts"

/**
 * In the transaction of a graph transition (a version activated, a document removed or taken out for
 * reprocessing): the source's universe map is out of date. Bumps its revision; the first mark since the last
 * recompute sets dirty_since, every mark moves marked_at (the debounce reads both).
 */
export const markUniverseChanged = (sql: SqlClient.SqlClient, sourceId: string) =>
  sql`
    INSERT INTO universe_sources (source_id, revision, dirty_since, marked_at)
    VALUES (${sourceId}, 1, now(), now())
    ON CONFLICT (source_id) DO UPDATE SET revision = universe_sources.revision + 1,
      dirty_since = coalesce(universe_sources.dirty_since, now()), marked_at = now()`.pipe(Effect.asVoid)

/** A source whose map a recompute has claimed, at the revision it read. */
export interface Claim {
  readonly sourceId: string
  readonly revision: number
}

export interface UniverseEntity {
  readonly id: string
  readonly name: string
  readonly kind: string
  readonly mention_count: number
  readonly first_seen: Date | null
  readonly last_seen: Date | null
}

/** What the map is computed from: the visible entities (sorted by id) and the events' participants. */
export interface SourceGraph {
  readonly entities: ReadonlyArray<UniverseEntity>
  /** Per visible event, the distinct entities taking part (indexes into entities). */
  readonly events: ReadonlyArray<ReadonlyArray<number>>
  /** Per event of `events`: its id and how many distinct entities take part (visible or not). */
  readonly eventIds: ReadonlyArray<string>
  readonly eventSizes: ReadonlyArray<number>
  readonly counts: {
    readonly documents: number
    readonly chunks: number
    readonly events: number
    readonly datedEvents: number
    readonly timeStart: Date | null
    /** The latest start of a dated event (timeEnd is the latest end). */
    readonly lastStart: Date | null
    readonly timeEnd: Date | null
  }
}

/** Entities taking part in at least this many events are hubs: their first neighbours are stored. */
export const hubEvents = 100
/** Neighbours stored per hub and kind (the first pages of an expand). */
export const storedNeighbours = 100
/** Chunks an entity's detail quotes. */
export const quotedChunks = 5

const topMembers = 5
const labelMembers = 3

/** A community's label: its first members' names. */
export const communityLabel = (top: ReadonlyArray<{ readonly name: string }>) =>
  top.slice(0, labelMembers).map((member) => member.name).join(", ")

/**
 * The universe aggregates: which sources need a new map (marks, debounced claims), what a map is computed from,
 * and the one transaction that replaces a source's map (with its stored timeline, written just before).
 */
export class UniverseMaps extends Context.Service<UniverseMaps, {
  /**
   * A marked source that has been quiet for `settleMs` (or, so that a steady stream of changes still refreshes it,
   * marked for `maxWaitMs` or `busyFactor` times its last computation's time, whichever is longer: a map that takes
   * long to compute is recomputed less often while the changes go on) and that no one else is computing; claimed
   * for 10 minutes.
   */
  readonly claim: (settleMs: number, maxWaitMs: number, busyFactor: number) => Effect.Effect<Option.Option<Claim>>
  /** A failed recompute: the source stays marked and is tried again after `retryMs`. */
  readonly release: (claim: Claim, retryMs: number) => Effect.Effect<void>
  readonly load: (sourceId: string) => Effect.Effect<SourceGraph>
  /**
   * Replaces the source's map; the mark is cleared only when no transition marked the source since the claim, else
   * it counts as marked from now, so a source that keeps changing waits `maxWaitMs` again, not recomputed back to back.
   */
  readonly save: (
    claim: Claim,
    graph: SourceGraph,
    input: MapInput,
    map: MapOutput,
    computeMs: number
  ) => Effect.Effect<void>
}>()("engram/UniverseMaps") {
  static readonly layer = Layer.effect(
    UniverseMaps,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const claim = Effect.fn("UniverseMaps.claim")(function*(settleMs: number, maxWaitMs: number, busyFactor: number) {
        const [row] = yield* sql<{ source_id: string; revision: string | number }>`
          UPDATE universe_sources SET claimed_until = now() + interval '10 minutes'
          WHERE source_id = (
            SELECT source_id FROM universe_sources
            WHERE dirty_since IS NOT NULL
              AND (claimed_until IS NULL OR claimed_until < now())
              AND (marked_at <= now() - make_interval(secs => ${settleMs / 1000})
                OR dirty_since <= now() - make_interval(
                  secs => greatest(${maxWaitMs / 1000}, ${busyFactor} * coalesce(compute_ms, 0) / 1000.0)))
            ORDER BY dirty_since, source_id
            LIMIT 1
            FOR UPDATE SKIP LOCKED)
          RETURNING source_id, revision`.pipe(Effect.orDie)
        return row === undefined
          ? Option.none<Claim>()
          : Option.some({ sourceId: row.source_id, revision: Number(row.revision) })
      })

      const release = Effect.fn("UniverseMaps.release")(function*(claim: Claim, retryMs: number) {
        yield* sql`
          UPDATE universe_sources SET claimed_until = now() + make_interval(secs => ${retryMs / 1000})
          WHERE source_id = ${claim.sourceId}`.pipe(Effect.orDie)
      })

      const load = Effect.fn("UniverseMaps.load")(function*(sourceId: string) {
        const entities = yield* sql<UniverseEntity>`
          SELECT e.id, e.name, e.kind, e.mention_count, e.first_seen, e.last_seen
          FROM entities e
          WHERE e.source_id = ${sourceId} AND EXISTS (
            SELECT 1 FROM entity_mentions m JOIN documents d ON d.id = m.document_id AND ${
          searchable(sql, "d", "m.version")
        }
            WHERE m.entity_id = e.id)
          ORDER BY e.id`.pipe(Effect.orDie)
        const participations = yield* sql<{ event_id: string; entity_id: string }>`
          SELECT p.event_id, p.entity_id
          FROM events ev
          JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
          JOIN event_participants p ON p.event_id = ev.id
          WHERE ev.source_id = ${sourceId}
          ORDER BY p.event_id`.pipe(Effect.orDie)
        const [counts] = yield* sql<{
          documents: number
          chunks: number
          events: number
          dated: number
          time_start: Date | null
          last_start: Date | null
          time_end: Date | null
        }>`
          SELECT
            (SELECT count(*) FROM documents d WHERE d.source_id = ${sourceId} AND d.status = 'ready')::int AS documents,
            (SELECT coalesce(sum(d.chunk_count), 0) FROM documents d
              WHERE d.source_id = ${sourceId} AND d.status = 'ready')::int AS chunks,
            count(*)::int AS events, count(ev.time_start)::int AS dated,
            min(ev.time_start) AS time_start, max(ev.time_start) AS last_start, max(ev.time_end) AS time_end
          FROM events ev JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}
          WHERE ev.source_id = ${sourceId}`.pipe(Effect.orDie)
        const index = new Map(entities.map((entity, i) => [entity.id, i]))
        const events: Array<Array<number>> = []
        const eventIds: Array<string> = []
        const eventSizes: Array<number> = []
        let current: string | undefined
        let members: Array<number> = []
        let taking = new Set<string>()
        const close = () => {
          if (members.length === 0) return
          events.push(members)
          eventIds.push(current!)
          eventSizes.push(taking.size)
        }
        for (const row of participations) {
          if (row.event_id !== current) {
            close()
            current = row.event_id
            members = []
            taking = new Set()
          }
          taking.add(row.entity_id)
          const i = index.get(row.entity_id)
          if (i !== undefined && !members.includes(i)) members.push(i)
        }
        close()
        return {
          entities,
          events,
          eventIds,
          eventSizes,
          counts: {
            documents: counts!.documents,
            chunks: counts!.chunks,
            events: counts!.events,
            datedEvents: counts!.dated,
            timeStart: counts!.time_start,
            lastStart: counts!.last_start,
            timeEnd: counts!.time_end
          }
        }
      })

      /**
       * Every entity's neighbour counts (visible events, related entities, documents), and for the hubs (entities
       * in at least `hubEvents` events) their first `storedNeighbours` neighbours of each kind, ranked as expand
       * ranks them live: related entities by shared events, events by participants, documents by mentions, then
       * by id; and the chunks their detail quotes.
       */
      const neighbourhood = Effect.fnUntraced(function*(sourceId: string, graph: SourceGraph, input: MapInput) {
        const { entities } = graph
        const events = new Int32Array(entities.length)
        for (const members of graph.events) for (const i of members) events[i]!++
        const related = new Int32Array(entities.length)
        for (let k = 0; k < input.edgeA.length; k++) {
          related[input.edgeA[k]!]!++
          related[input.edgeB[k]!]!++
        }
        const documentRows = yield* sql<{ entity_id: string; documents: number }>`
          SELECT m.entity_id, count(DISTINCT m.document_id)::int AS documents
          FROM entity_mentions m
          JOIN entities e ON e.id = m.entity_id AND e.source_id = ${sourceId}
          JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
          WHERE m.chunk_id IS NULL
          GROUP BY m.entity_id`.pipe(Effect.orDie)
        const documents = new Map(documentRows.map((row) => [row.entity_id, row.documents]))

        const hubs = entities.flatMap((_, i) => events[i]! >= hubEvents ? [i] : [])
        const lists = new Map<number, Record<"entity" | "event" | "document", Array<{ id: string; score: number }>>>(
          hubs.map((i) => [i, { entity: [], event: [], document: [] }])
        )
        for (let k = 0; k < input.edgeA.length; k++) {
          const a = input.edgeA[k]!
          const b = input.edgeB[k]!
          lists.get(a)?.entity.push({ id: entities[b]!.id, score: input.edgeWeight[k]! })
          lists.get(b)?.entity.push({ id: entities[a]!.id, score: input.edgeWeight[k]! })
        }
        graph.events.forEach((members, e) => {
          for (const i of members) lists.get(i)?.event.push({ id: graph.eventIds[e]!, score: graph.eventSizes[e]! })
        })
        const hubIds = hubs.map((i) => entities[i]!.id)
        const mentioned = hubIds.length === 0 ? [] : yield* sql<{ entity_id: string; document_id: string; n: number }>`
          SELECT m.entity_id, m.document_id, sum(m.count)::int AS n
          FROM entity_mentions m JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
          WHERE m.entity_id = ANY(${hubIds}::text[]) AND m.chunk_id IS NULL
          GROUP BY m.entity_id, m.document_id`.pipe(Effect.orDie)
        const hubIndex = new Map(hubs.map((i) => [entities[i]!.id, i]))
        for (const row of mentioned) lists.get(hubIndex.get(row.entity_id)!)!.document.push({ id: row.document_id, score: row.n })

        // The chunks a hub's detail quotes: where it is mentioned most, oldest document first.
        const quoted = hubIds.length === 0 ? [] : yield* sql<{ entity_id: string; chunk_id: string; n: number; rank: number }>`
          SELECT entity_id, chunk_id, n, rank FROM (
            SELECT m.entity_id, m.chunk_id, m.count AS n, row_number() OVER (PARTITION BY m.entity_id
              ORDER BY m.count DESC, d.created_at, c.document_id, c.ordinal) AS rank
            FROM entity_mentions m
            JOIN chunks c ON c.id = m.chunk_id
            JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
            WHERE m.entity_id = ANY(${hubIds}::text[])
          ) ranked WHERE rank <= ${quotedChunks}`.pipe(Effect.orDie)

        const rows: Array<{ entity_id: string; kind: string; rank: number; ref_id: string; score: number }> =
          quoted.map((row) => ({
            entity_id: row.entity_id,
            kind: "chunk",
            rank: Number(row.rank),
            ref_id: row.chunk_id,
            score: row.n
          }))
        for (const [i, byKind] of lists) {
          for (const [kind, list] of Object.entries(byKind)) {
            list.sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
            list.slice(0, storedNeighbours).forEach((item, rank) =>
              rows.push({ entity_id: entities[i]!.id, kind, rank: rank + 1, ref_id: item.id, score: item.score })
            )
          }
        }
        return { events, related, documents, hubs: rows }
      })

      const save = Effect.fn("UniverseMaps.save")(function*(
        claim: Claim,
        graph: SourceGraph,
        input: MapInput,
        map: MapOutput,
        computeMs: number
      ) {
        const { sourceId } = claim
        const { entities } = graph
        const membersOf: Array<Array<number>> = map.communities.map(() => [])
        entities.forEach((_, i) => membersOf[map.community[i]!]!.push(i))
        const eventsOf = map.communities.map(() => 0)
        for (const event of graph.events) {
          for (const c of new Set(event.map((i) => map.community[i]!))) eventsOf[c]!++
        }
        const communities = map.communities.map((community, c) => {
          const members = membersOf[c]!.sort((a, b) =>
            map.score[b]! - map.score[a]! || entities[b]!.mention_count - entities[a]!.mention_count ||
            (entities[a]!.id < entities[b]!.id ? -1 : 1)
          )
          const top = members.slice(0, topMembers).map((i) => ({
            id: entities[i]!.id,
            name: entities[i]!.name,
            kind: entities[i]!.kind,
            score: map.score[i]!
          }))
          const starts = members.flatMap((i) => entities[i]!.first_seen ?? [])
          const ends = members.flatMap((i) => entities[i]!.last_seen ?? [])
          return {
            community: c,
            label: communityLabel(top),
            loose: community.loose,
            size: community.size,
            event_count: eventsOf[c]!,
            top_members: top,
            time_start: starts.length === 0 ? null : new Date(Math.min(...starts.map((d) => d.getTime()))).toISOString(),
            time_end: ends.length === 0 ? null : new Date(Math.max(...ends.map((d) => d.getTime()))).toISOString(),
            x: community.x,
            y: community.y,
            radius: community.radius
          }
        })
        const kinds = new Map<string, number>()
        for (const entity of entities) kinds.set(entity.kind, (kinds.get(entity.kind) ?? 0) + 1)
        const entityKinds = [...kinds.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .map(([kind, count]) => ({ kind, count }))
        const bounds = map.communities.length === 0 ? null : {
          minX: Math.min(...map.communities.map((c) => c.x - c.radius)),
          minY: Math.min(...map.communities.map((c) => c.y - c.radius)),
          maxX: Math.max(...map.communities.map((c) => c.x + c.radius)),
          maxY: Math.max(...map.communities.map((c) => c.y + c.radius))
        }
        const { counts } = graph

        const neighbours = yield* neighbourhood(sourceId, graph, input)
        yield* storeTimeline(sql, sourceId, counts.timeStart, counts.lastStart)
        yield* sql.withTransaction(Effect.gen(function*() {
          const alive = yield* sql`SELECT 1 FROM sources WHERE id = ${sourceId} FOR KEY SHARE`
          if (alive.length === 0) return
          yield* sql`DELETE FROM universe_entities WHERE source_id = ${sourceId}`
          yield* sql`DELETE FROM universe_communities WHERE source_id = ${sourceId}`
          yield* sql`DELETE FROM universe_links WHERE source_id = ${sourceId}`
          // Rows travel as one JSON parameter: array parameters must not mix nulls, integers and fractions.
          const placed = entities.map((entity, i) => ({
            id: entity.id,
            community: map.community[i]!,
            score: map.score[i]!,
            x: map.x[i]!,
            y: map.y[i]!,
            events: neighbours.events[i]!,
            related: neighbours.related[i]!,
            documents: neighbours.documents.get(entity.id) ?? 0
          }))
          // Entities removed since the load are skipped: their source is marked again and recomputed.
          yield* sql`
            INSERT INTO universe_entities (entity_id, source_id, community, score, x, y, event_count, related_count,
              document_count)
            SELECT u.id, ${sourceId}, u.community, u.score, u.x, u.y, u.events, u.related, u.documents
            FROM json_to_recordset(${JSON.stringify(placed)}::json)
              AS u (id text, community int, score int, x real, y real, events int, related int, documents int)
            JOIN entities e ON e.id = u.id`
          yield* sql`DELETE FROM universe_neighbours WHERE source_id = ${sourceId}`
          yield* sql`
            INSERT INTO universe_neighbours (entity_id, source_id, kind, rank, ref_id, score)
            SELECT u.entity_id, ${sourceId}, u.kind, u.rank, u.ref_id, u.score
            FROM json_to_recordset(${JSON.stringify(neighbours.hubs)}::json)
              AS u (entity_id text, kind text, rank int, ref_id text, score int)
            JOIN entities e ON e.id = u.entity_id`
          yield* sql`
            INSERT INTO universe_communities
              (source_id, community, label, loose, size, event_count, top_members, time_start, time_end, x, y, radius)
            SELECT ${sourceId}, u.community, u.label, u.loose, u.size, u.event_count, u.top_members, u.time_start,
              u.time_end, u.x, u.y, u.radius
            FROM json_to_recordset(${JSON.stringify(communities)}::json)
              AS u (community int, label text, loose boolean, size int, event_count int, top_members jsonb,
                time_start timestamptz, time_end timestamptz, x real, y real, radius real)`
          yield* sql`
            INSERT INTO universe_links (source_id, a, b, weight)
            SELECT ${sourceId}, u.a, u.b, u.weight
            FROM json_to_recordset(${JSON.stringify(map.links)}::json) AS u (a int, b int, weight int)`
          yield* sql`
            UPDATE universe_sources SET
              dirty_since = CASE WHEN revision = ${claim.revision} THEN NULL ELSE now() END,
              claimed_until = NULL, computed_at = now(), compute_ms = ${Math.round(computeMs)},
              document_count = ${counts.documents}, chunk_count = ${counts.chunks}, entity_count = ${entities.length},
              event_count = ${counts.events}, dated_event_count = ${counts.datedEvents},
              entity_kinds = ${JSON.stringify(entityKinds)}::jsonb,
              time_start = ${counts.timeStart}, last_start = ${counts.lastStart}, time_end = ${counts.timeEnd},
              min_x = ${bounds?.minX ?? null}, min_y = ${bounds?.minY ?? null},
              max_x = ${bounds?.maxX ?? null}, max_y = ${bounds?.maxY ?? null}
            WHERE source_id = ${sourceId}`
        })).pipe(Effect.orDie)
      })

      return UniverseMaps.of({ claim, release, load, save })
    })
  )
}
