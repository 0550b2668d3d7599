import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The knowledge universe's aggregates, recomputed in the background per source (src/background/Universe.ts):
 * the source's state (counts, when computed, whether a recompute is pending), its communities of entities with
 * their positions and the links between them, and every entity's community and position. Graph transitions mark
 * the source (dirty_since, revision); a recompute clears the mark only if no transition marked it meanwhile.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE universe_sources (
      source_id text PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
      revision bigint NOT NULL DEFAULT 0,
      dirty_since timestamptz,
      marked_at timestamptz,
      claimed_until timestamptz,
      computed_at timestamptz,
      compute_ms integer,
      document_count integer NOT NULL DEFAULT 0,
      chunk_count integer NOT NULL DEFAULT 0,
      entity_count integer NOT NULL DEFAULT 0,
      event_count integer NOT NULL DEFAULT 0,
      dated_event_count integer NOT NULL DEFAULT 0,
      entity_kinds jsonb NOT NULL DEFAULT '[]'::jsonb,
      time_start timestamptz,
      time_end timestamptz,
      min_x real, min_y real, max_x real, max_y real
    )`
  yield* sql`CREATE INDEX universe_sources_dirty ON universe_sources (dirty_since) WHERE dirty_since IS NOT NULL`
  yield* sql`
    CREATE TABLE universe_communities (
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      community integer NOT NULL,
      label text NOT NULL,
      loose boolean NOT NULL,
      size integer NOT NULL,
      event_count integer NOT NULL,
      top_members jsonb NOT NULL,
      time_start timestamptz,
      time_end timestamptz,
      x real NOT NULL,
      y real NOT NULL,
      radius real NOT NULL,
      PRIMARY KEY (source_id, community)
    )`
  yield* sql`
    CREATE TABLE universe_links (
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      a integer NOT NULL,
      b integer NOT NULL,
      weight integer NOT NULL,
      PRIMARY KEY (source_id, a, b)
    )`
  yield* sql`
    CREATE TABLE universe_entities (
      entity_id text PRIMARY KEY REFERENCES entities (id) ON DELETE CASCADE,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      community integer NOT NULL,
      score integer NOT NULL,
      x real NOT NULL,
      y real NOT NULL
    )`
  yield* sql`CREATE INDEX universe_entities_community ON universe_entities (source_id, community, score DESC, entity_id)`
  // Sources that already hold a graph get their first map at start-up.
  yield* sql`
    INSERT INTO universe_sources (source_id, dirty_since, marked_at)
    SELECT DISTINCT source_id, now(), now() FROM entities`
})
