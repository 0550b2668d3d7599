import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A chunk of a chat keeps each message's speaker, time and offsets (`messages`, a JSON array) and the span of their
 * times (`spoken_at` … `spoken_until`), which the graph list reads for queries that name a time.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chunks ADD COLUMN spoken_until timestamptz`
  yield* sql`ALTER TABLE chunks ADD COLUMN messages jsonb NOT NULL DEFAULT '[]'::jsonb`
  yield* sql`UPDATE chunks SET spoken_until = spoken_at WHERE spoken_at IS NOT NULL`
  yield* sql`CREATE INDEX chunks_source_spoken ON chunks (source_id, spoken_at) WHERE spoken_at IS NOT NULL`
})
