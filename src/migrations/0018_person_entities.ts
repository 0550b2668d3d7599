import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The source's persons, for the graph store's short-form lookup ("Mel" → Melanie): without this index every
 * document's lookup read all of the source's entities to find the few persons (17 ms at 10,000 entities, growing
 * with the source).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX entities_persons ON entities (source_id, id) WHERE kind = 'person'`
})
