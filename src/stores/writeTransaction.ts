import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * A transaction of the pipeline's writes, its statements run on generic plans (planned once per connection) instead
 * of being planned again at every execution. Each document's writes run the same statements keyed by a document, a
 * source or a list of keys, whose best plan does not depend on the values; PostgreSQL plans such a prepared statement
 * anew at each execution whenever it estimates the generic plan dearer than the custom ones it has seen (arrays of
 * keys, `document_id = $1 AND version = $2`), and on SciFact with the rules that planning was most of its planning
 * time (docs/benchmarks.md). `SET LOCAL` ends with the outermost transaction, so the connection's other statements
 * (searches) keep the planner's own choice; nested inside another transaction, it holds until that one ends.
 */
export const withGenericPlans = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>) =>
  sql.withTransaction(sql`SET LOCAL plan_cache_mode = force_generic_plan`.pipe(Effect.andThen(effect)))
