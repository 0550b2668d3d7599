import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * More aggregates the universe's background recompute keeps per source, so that no request ranks a whole source
 * or a hub's every event: the timeline (for every calendar unit the source's span allows, its non-empty buckets
 * with their counts and top events), every entity's neighbour counts, and the first neighbours of each kind of
 * the most connected entities (hubs). Sources that already hold a map are marked for a recompute.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE universe_sources ADD COLUMN last_start timestamptz`
  yield* sql`
    CREATE TABLE universe_timeline (
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      unit text NOT NULL,
      bucket_start timestamptz NOT NULL,
      bucket_end timestamptz NOT NULL,
      precision text NOT NULL,
      fits boolean NOT NULL,
      count integer NOT NULL,
      top jsonb NOT NULL,
      PRIMARY KEY (source_id, unit, bucket_start, bucket_end)
    )`
  yield* sql`
    ALTER TABLE universe_entities ADD COLUMN event_count integer NOT NULL DEFAULT 0,
      ADD COLUMN related_count integer NOT NULL DEFAULT 0, ADD COLUMN document_count integer NOT NULL DEFAULT 0`
  yield* sql`
    CREATE TABLE universe_neighbours (
      entity_id text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      kind text NOT NULL,
      rank integer NOT NULL,
      ref_id text NOT NULL,
      score integer NOT NULL,
      PRIMARY KEY (entity_id, kind, rank)
    )`
  yield* sql`CREATE INDEX universe_neighbours_source ON universe_neighbours (source_id)`
  yield* sql`UPDATE universe_sources SET dirty_since = now(), marked_at = now() WHERE computed_at IS NOT NULL`
})
