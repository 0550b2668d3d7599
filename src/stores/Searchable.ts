import type { SqlClient, Statement } from "effect/sql"

/**
 * The one rule for what search sees: a ready document, in its active version. `document` is the alias of the
 * documents row, `version` the version column of the derived row (chunk, event, mention) joined to it.
 * The Lifecycle service keeps it true: only its transitions change status or active_version.
 */
export const searchable = (sql: SqlClient.SqlClient, document: string, version: string): Statement.Fragment =>
  sql.literal(`${document}.active_version = ${version} AND ${document}.status = 'ready'`)
