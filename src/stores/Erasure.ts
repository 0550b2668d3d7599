import { Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { Citation } from "../domain/Agent.ts"
import { communityLabel } from "./Universe.ts"

/** What replaces an answer that drew on a deleted document: answers quote their sources, often word for word. */
export const redactedAnswer = "[This answer was removed because a source it drew on was deleted.]"

export interface StoredAnswer {
  readonly text: string
  readonly citations: ReadonlyArray<Citation>
  /** A cancelled or failed run's partial answer has no citations to tell what it drew on. */
  readonly partial: boolean
  readonly searchedSourceIds: ReadonlyArray<string>
}

export interface Hit {
  readonly document_id: string
  readonly duplicates: ReadonlyArray<string>
}

export interface StoredExploration<H extends Hit> {
  readonly sourceIds: ReadonlyArray<string>
  readonly hits: ReadonlyArray<H>
}

/**
 * Removes the copies of a source's or a document's text and ids that live outside its own rows (those go with the
 * foreign-key cascades): hits and nodes in saved explorations, answers and citations in runs and messages, the searched
 * source in run traces, the document id on its jobs. Runs inside the deleting transaction, before the rows are
 * deleted, so a delete either leaves nothing behind or does not happen.
 */
export class Erasure extends Context.Service<Erasure, {
  /** Before `DELETE FROM sources`, in the same transaction. */
  readonly forgetSource: (sourceId: string) => Effect.Effect<void>
  /** Before `DELETE FROM documents`, in the same transaction, after the documents' jobs are settled. */
  readonly forgetDocuments: (documentIds: ReadonlyArray<string>) => Effect.Effect<void>
  /**
   * In the transaction that stores an answer: locks what it cites and searched against deletion until the
   * transaction ends (a delete waits, then finds the answer stored), and gives the answer as it may be stored —
   * redacted as a delete would have, when what it drew on was deleted while it was being written.
   */
  readonly storableAnswer: (answer: StoredAnswer) => Effect.Effect<StoredAnswer>
  /**
   * In the transaction that saves an exploration: the same for its searched sources and hits, which keep only what
   * still exists (no source left: nothing to save).
   */
  readonly storableExploration: <H extends Hit>(exploration: StoredExploration<H>) => Effect.Effect<
    StoredExploration<H>
  >
}>()("engram/Erasure") {
  static readonly layer = Layer.effect(
    Erasure,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /**
       * Runs whose answer cites one of the documents lose the answer and those citations; so do the assistant
       * messages of the conversation. A run that searched the source and ended without a complete answer
       * (cancelled, failed) has no citations to tell, so its partial answer goes too.
       */
      const forgetAnswers = (owner: string, documentIds: ReadonlyArray<string>, sourceId: string | null) =>
        Effect.gen(function*() {
          const cites = (citations: Statement.Fragment) =>
            sql`EXISTS (SELECT 1 FROM jsonb_array_elements(${citations}) c
              WHERE c->>'document_id' = ANY(${documentIds}::text[]))`
          const keptCitations = (citations: Statement.Fragment) =>
            sql`COALESCE((SELECT jsonb_agg(c ORDER BY n)
              FROM jsonb_array_elements(${citations}) WITH ORDINALITY AS e(c, n)
              WHERE NOT (c->>'document_id' = ANY(${documentIds}::text[]))), '[]'::jsonb)`
          yield* sql`
            UPDATE messages m SET content = ${redactedAnswer}, citations = ${keptCitations(sql`m.citations`)}
            FROM conversations cv
            WHERE cv.id = m.conversation_id AND cv.owner_id = ${owner} AND ${cites(sql`m.citations`)}`
          const searched = sourceId === null
            ? sql`false`
            : sql`(r.status <> 'completed' AND r.answer <> ''
              AND r.retrieval->'searched_source_ids' @> jsonb_build_array(${sourceId}::text))`
          yield* sql`
            UPDATE runs r SET answer = ${redactedAnswer}, citations = ${keptCitations(sql`r.citations`)}
            WHERE r.owner_id = ${owner} AND (${cites(sql`r.citations`)} OR ${searched})`
          if (sourceId !== null) {
            yield* sql`
              UPDATE runs r SET retrieval = jsonb_set(r.retrieval, '{searched_source_ids}',
                (r.retrieval->'searched_source_ids') - ${sourceId}::text)
              WHERE r.owner_id = ${owner}
                AND r.retrieval->'searched_source_ids' @> jsonb_build_array(${sourceId}::text)`
          }
        })

      /**
       * Saved explorations of the source keep their query but lose the documents' hits, and the chunks among other
       * hits' near-duplicates. Only explorations that searched the source can hold them.
       */
      const forgetHits = (sourceId: string, documentIds: ReadonlyArray<string>) =>
        sql`
          UPDATE explorations x SET results = COALESCE((
            SELECT jsonb_agg(
              jsonb_set(hit, '{duplicates}', COALESCE((
                SELECT jsonb_agg(duplicate ORDER BY k) FROM jsonb_array_elements(hit->'duplicates') WITH ORDINALITY
                  AS d(duplicate, k)
                WHERE NOT EXISTS (SELECT 1 FROM chunks c
                  WHERE c.id = duplicate #>> '{}' AND c.document_id = ANY(${documentIds}::text[]))
              ), '[]'::jsonb))
              ORDER BY n)
            FROM jsonb_array_elements(x.results) WITH ORDINALITY AS h(hit, n)
            WHERE NOT (hit->>'document_id' = ANY(${documentIds}::text[]))
          ), '[]'::jsonb)
          WHERE x.source_ids @> jsonb_build_array(${sourceId}::text)`

      /**
       * Saved explorations lose the deleted documents and their events (and, for a source, its entities) from the
       * nodes they started from or opened.
       */
      const forgetNodes = (owner: string, nodeIds: Statement.Fragment) =>
        sql`
          WITH gone AS (SELECT coalesce(array_agg(node), '{}'::text[]) AS ids FROM (${nodeIds}) n(node))
          UPDATE explorations x SET seed_node_ids = x.seed_node_ids - gone.ids,
            expanded_node_ids = x.expanded_node_ids - gone.ids
          FROM gone
          WHERE x.owner_id = ${owner} AND (x.seed_node_ids ?| gone.ids OR x.expanded_node_ids ?| gone.ids)`

      const documentNodes = (documentIds: ReadonlyArray<string>) =>
        sql`SELECT 'document:' || id FROM unnest(${documentIds}::text[]) AS d(id)
          UNION ALL SELECT 'event:' || id FROM events WHERE document_id = ANY(${documentIds}::text[])`

      // Deletes lock the rows they remove first (FOR UPDATE), and writers of copies lock what they copy (FOR KEY
      // SHARE), so one of the two always sees the other's work. Both lock sources before documents, each by id, so
      // they never wait for each other in a cycle.
      const lockDocuments = (documentIds: ReadonlyArray<string>) =>
        sql<{ id: string }>`
          SELECT id FROM documents WHERE id = ANY(${documentIds}::text[]) ORDER BY id FOR UPDATE`

      const liveDocuments = (documentIds: ReadonlyArray<string>) =>
        documentIds.length === 0
          ? Effect.succeed(new Set<string>())
          : sql<{ id: string }>`
            SELECT id FROM documents WHERE id = ANY(${documentIds}::text[]) ORDER BY id FOR KEY SHARE`.pipe(
            Effect.map((rows) => new Set(rows.map((row) => row.id)))
          )

      const liveSources = (sourceIds: ReadonlyArray<string>) =>
        sourceIds.length === 0
          ? Effect.succeed(new Set<string>())
          : sql<{ id: string }>`
            SELECT id FROM sources WHERE id = ANY(${sourceIds}::text[]) ORDER BY id FOR KEY SHARE`.pipe(
            Effect.map((rows) => new Set(rows.map((row) => row.id)))
          )

      const ownerOf = (sourceId: string) =>
        sql<{ owner_id: string }>`SELECT owner_id FROM sources WHERE id = ${sourceId}`.pipe(
          Effect.map((rows) => rows[0]?.owner_id)
        )

      const forgetSource = Effect.fn("Erasure.forgetSource")(function*(sourceId: string) {
        const owner = yield* ownerOf(sourceId)
        if (owner === undefined) return
        yield* sql`SELECT id FROM sources WHERE id = ${sourceId} FOR UPDATE`
        const documentIds = (yield* sql<{ id: string }>`
          SELECT id FROM documents WHERE source_id = ${sourceId} ORDER BY id FOR UPDATE`).map((row) => row.id)
        yield* forgetAnswers(owner, documentIds, sourceId)
        // An exploration of this source alone has nothing left to show.
        yield* sql`
          DELETE FROM explorations WHERE owner_id = ${owner} AND source_ids = jsonb_build_array(${sourceId}::text)`
        yield* forgetHits(sourceId, documentIds)
        yield* forgetNodes(owner, sql`${documentNodes(documentIds)}
          UNION ALL SELECT 'entity:' || id FROM entities WHERE source_id = ${sourceId}`)
        yield* sql`
          UPDATE explorations SET source_ids = source_ids - ${sourceId}::text
          WHERE source_ids @> jsonb_build_array(${sourceId}::text)`
        yield* sql`UPDATE jobs SET document_id = NULL WHERE document_id = ANY(${documentIds}::text[])`
      }, Effect.orDie)

      /**
       * The source's stored universe map until its recompute (marked by the delete, seconds later): its communities'
       * top members keep only entities that still exist, under their names now (the graph has taken back what the
       * documents alone said), and their labels follow; its timeline's top events and its stored neighbours leave
       * the documents and the events and entities gone with them (the map is not served from storage until its
       * recompute; its counts wait for it). Runs after the graph's rows are removed. Rows a recompute is replacing
       * right now (locked) are left to it: waiting for them could deadlock with its inserts, which wait for the
       * entities this delete removes, and the source is marked again, so the next recompute follows.
       */
      const forgetMapCopies = (sourceId: string, documentIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const stale = yield* sql<{ community: number; top_members: ReadonlyArray<{ id: string; name: string }> }>`
            SELECT community, top_members FROM universe_communities c
            WHERE c.source_id = ${sourceId} AND EXISTS (
              SELECT 1 FROM jsonb_array_elements(c.top_members) m (member)
              LEFT JOIN entities e ON e.id = m.member->>'id'
              WHERE e.name IS DISTINCT FROM m.member->>'name')
            FOR UPDATE SKIP LOCKED`
          if (stale.length > 0) {
            const ids = [...new Set(stale.flatMap((community) => community.top_members.map((member) => member.id)))]
            const names = new Map(
              (yield* sql<{ id: string; name: string }>`SELECT id, name FROM entities WHERE id = ANY(${ids}::text[])`)
                .map((row) => [row.id, row.name])
            )
            const rebuilt = stale.map(({ community, top_members }) => {
              const top = top_members.flatMap((member) => {
                const name = names.get(member.id)
                return name === undefined ? [] : [{ ...member, name }]
              })
              return { community, top, label: communityLabel(top) }
            })
            yield* sql`
              UPDATE universe_communities c SET top_members = r.top, label = r.label
              FROM jsonb_to_recordset(${JSON.stringify(rebuilt)}::jsonb) AS r (community int, top jsonb, label text)
              WHERE c.source_id = ${sourceId} AND c.community = r.community`
          }
          yield* sql`
            WITH stale AS (
              SELECT unit, bucket_start, bucket_end FROM universe_timeline t
              WHERE t.source_id = ${sourceId} AND EXISTS (
                SELECT 1 FROM jsonb_array_elements(t.top) e (item)
                WHERE NOT EXISTS (SELECT 1 FROM events ev WHERE ev.id = e.item->>'id'))
              FOR UPDATE SKIP LOCKED
            )
            UPDATE universe_timeline t SET top = coalesce((
              SELECT jsonb_agg(e.item ORDER BY e.n) FROM jsonb_array_elements(t.top) WITH ORDINALITY AS e (item, n)
              WHERE EXISTS (SELECT 1 FROM events ev WHERE ev.id = e.item->>'id')), '[]'::jsonb)
            FROM stale s
            WHERE t.source_id = ${sourceId} AND t.unit = s.unit AND t.bucket_start = s.bucket_start
              AND t.bucket_end = s.bucket_end`
          yield* sql`
            WITH emptied AS (
              SELECT unit, bucket_start, bucket_end FROM universe_timeline
              WHERE source_id = ${sourceId} AND top = '[]'::jsonb
              FOR UPDATE SKIP LOCKED
            )
            DELETE FROM universe_timeline t USING emptied e
            WHERE t.source_id = ${sourceId} AND t.unit = e.unit AND t.bucket_start = e.bucket_start
              AND t.bucket_end = e.bucket_end`
          yield* sql`
            WITH stale AS (
              SELECT entity_id, kind, rank FROM universe_neighbours n
              WHERE n.source_id = ${sourceId} AND (
                (n.kind = 'document' AND n.ref_id = ANY(${documentIds}::text[]))
                OR (n.kind = 'event' AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = n.ref_id))
                OR (n.kind = 'entity' AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = n.ref_id)))
              FOR UPDATE SKIP LOCKED
            )
            DELETE FROM universe_neighbours n USING stale s
            WHERE n.entity_id = s.entity_id AND n.kind = s.kind AND n.rank = s.rank`
        })

      const forgetDocuments = Effect.fn("Erasure.forgetDocuments")(function*(documentIds: ReadonlyArray<string>) {
        if (documentIds.length === 0) return
        yield* lockDocuments(documentIds)
        const sources = yield* sql<{ source_id: string; owner_id: string }>`
          SELECT DISTINCT d.source_id, s.owner_id FROM documents d JOIN sources s ON s.id = d.source_id
          WHERE d.id = ANY(${documentIds}::text[])`
        for (const owner of new Set(sources.map((row) => row.owner_id))) {
          yield* forgetAnswers(owner, documentIds, null)
        }
        for (const { source_id } of sources) {
          yield* forgetHits(source_id, documentIds)
          yield* forgetMapCopies(source_id, documentIds)
        }
        for (const owner of new Set(sources.map((row) => row.owner_id))) {
          yield* forgetNodes(owner, documentNodes(documentIds))
        }
        yield* sql`UPDATE jobs SET document_id = NULL WHERE document_id = ANY(${documentIds}::text[])`
      }, Effect.orDie)

      const storableAnswer = Effect.fn("Erasure.storableAnswer")(function*(answer: StoredAnswer) {
        const sources = yield* liveSources(answer.searchedSourceIds)
        const searchedSourceIds = answer.searchedSourceIds.filter((id) => sources.has(id))
        const live = yield* liveDocuments([...new Set(answer.citations.map((citation) => citation.document_id))])
        const citations = answer.citations.filter((citation) => live.has(citation.document_id))
        const drewOnDeleted = citations.length < answer.citations.length ||
          (answer.partial && answer.text !== "" && searchedSourceIds.length < answer.searchedSourceIds.length)
        return { ...answer, text: drewOnDeleted ? redactedAnswer : answer.text, citations, searchedSourceIds }
      }, Effect.orDie)

      const storableExploration = Effect.fn("Erasure.storableExploration")(
        function*<H extends Hit>(exploration: StoredExploration<H>) {
          const sources = yield* liveSources(exploration.sourceIds)
          const live = yield* liveDocuments([...new Set(exploration.hits.map((hit) => hit.document_id))])
          const duplicates = [...new Set(exploration.hits.flatMap((hit) => hit.duplicates))]
          const liveChunks = duplicates.length === 0
            ? new Set<string>()
            : new Set((yield* sql<{ id: string }>`SELECT id FROM chunks WHERE id = ANY(${duplicates}::text[])`)
              .map((row) => row.id))
          return {
            sourceIds: exploration.sourceIds.filter((id) => sources.has(id)),
            hits: exploration.hits.filter((hit) => live.has(hit.document_id)).map((hit) =>
              hit.duplicates.every((id) => liveChunks.has(id))
                ? hit
                : { ...hit, duplicates: hit.duplicates.filter((id) => liveChunks.has(id)) }
            )
          }
        },
        Effect.orDie
      )

      return Erasure.of({ forgetSource, forgetDocuments, storableAnswer, storableExploration })
    })
  )
}
