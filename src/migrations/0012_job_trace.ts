import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The W3C traceparent of the request that queued a job, so that the job's spans join that request's trace. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE jobs ADD COLUMN trace_parent text`
})
