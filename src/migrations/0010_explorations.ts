import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Explorations saved from the knowledge universe beside those POST /search saves: a title, the nodes a view started
 * from and opened, its filters and time window. saved_hit_count is how many hits were stored, so a replay can say
 * how many were erased since with their documents.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE explorations ALTER COLUMN query DROP NOT NULL`
  yield* sql`ALTER TABLE explorations ALTER COLUMN strategy DROP NOT NULL`
  yield* sql`ALTER TABLE explorations ADD COLUMN title text`
  yield* sql`ALTER TABLE explorations ADD COLUMN kind text NOT NULL DEFAULT 'search'`
  yield* sql`ALTER TABLE explorations ADD COLUMN top_k integer`
  yield* sql`ALTER TABLE explorations ADD COLUMN saved_hit_count integer NOT NULL DEFAULT 0`
  yield* sql`UPDATE explorations SET saved_hit_count = jsonb_array_length(results)`
  yield* sql`ALTER TABLE explorations ADD COLUMN seed_node_ids jsonb NOT NULL DEFAULT '[]'::jsonb`
  yield* sql`ALTER TABLE explorations ADD COLUMN expanded_node_ids jsonb NOT NULL DEFAULT '[]'::jsonb`
  yield* sql`ALTER TABLE explorations ADD COLUMN filters jsonb NOT NULL DEFAULT '{}'::jsonb`
  yield* sql`ALTER TABLE explorations ADD COLUMN time_from timestamptz`
  yield* sql`ALTER TABLE explorations ADD COLUMN time_to timestamptz`
  yield* sql`ALTER TABLE explorations ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()`
  yield* sql`UPDATE explorations SET updated_at = created_at`
})
