import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The version of each document whose graph rows the entities' counts and times include (Graph keeps them by
 * deltas from here on): the active version, as the recount before this migration had it, recounted once here.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE documents ADD COLUMN graph_version integer`
  yield* sql`UPDATE documents SET graph_version = active_version WHERE active_version IS NOT NULL`
  yield* sql`
    UPDATE entities e SET
      mention_count = coalesce((
        SELECT sum(m.count) FROM entity_mentions m JOIN documents d ON d.id = m.document_id
        WHERE m.entity_id = e.id AND m.chunk_id IS NULL AND m.version = d.graph_version), 0),
      (first_seen, last_seen) = (
        SELECT min(ev.time_start), max(ev.time_start)
        FROM event_participants p JOIN events ev ON ev.id = p.event_id
        JOIN documents d ON d.id = ev.document_id
        WHERE p.entity_id = e.id AND ev.version = d.graph_version)`
})
