import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What each document version says of an entity, on its mention row (the one without a chunk): the forms it names
 * the entity by, the match keys they give and its description. An entity's name, aliases, keys and description are
 * what its remaining documents say, so a document that goes (deleted, reprocessed) takes back what only it said.
 * Rows stored before this hold none (null): their entities keep what they have.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE entity_mentions ADD COLUMN forms text[], ADD COLUMN keys text[], ADD COLUMN description text`
})
