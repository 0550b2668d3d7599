import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The timeline aggregate the universe's background recompute keeps per source: for every calendar unit that the
 * source's span allows, its non-empty buckets with their counts and top events, so a whole-span timeline reads a
 * few hundred rows instead of ranking every event. Sources that already hold a map are marked for a recompute.
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
  yield* sql`UPDATE universe_sources SET dirty_since = now(), marked_at = now() WHERE computed_at IS NOT NULL`
})
