import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** A document's own date, given at ingestion: it anchors relative times in the text ("last Tuesday"). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE documents ADD COLUMN document_date timestamptz`
})
