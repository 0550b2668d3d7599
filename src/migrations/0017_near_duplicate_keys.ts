import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Each chunk's near-duplicate key (src/retrieval/fusion.ts, `nearDuplicateKey`): its number of word trigrams and the
 * smallest of them, written with the chunk, so that search collapses near-duplicate results without reading their
 * texts. Chunks written before have none: search reads their texts, as it did.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chunks ADD COLUMN near_key bytea`
})
