import { Data, Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"

/** A requested source is not one of the caller's (or does not exist: the two are not told apart). */
export class SourceNotOwned extends Data.TaggedError("SourceNotOwned")<{ readonly sourceId: string }> {}

/**
 * The ownership rule as SQL: a query of those of `ids` that are sources of `owner` (`ownedSources` runs it; a
 * statement that checks ownership while it reads embeds it).
 */
export const ownedAmong = (
  sql: SqlClient.SqlClient,
  owner: string,
  ids: ReadonlyArray<string>
): Statement.Fragment => sql`SELECT id FROM sources WHERE owner_id = ${owner} AND id IN ${sql.in(ids)}`

/**
 * The one source-ownership check. Answers the distinct `requested` ids in the order asked, once each is a source
 * of `owner`, or every source of `owner` (oldest first) when `requested` is undefined. `lock` holds them against
 * deletion until the surrounding transaction ends.
 */
export const ownedSources = (
  sql: SqlClient.SqlClient,
  owner: string,
  requested: ReadonlyArray<string> | undefined,
  options: { readonly lock?: boolean } = {}
): Effect.Effect<ReadonlyArray<string>, SourceNotOwned> =>
  Effect.gen(function*() {
    if (requested === undefined) {
      const rows = yield* sql<{ id: string }>`SELECT id FROM sources WHERE owner_id = ${owner} ORDER BY created_at, id`
      return rows.map((row) => row.id)
    }
    const unique = [...new Set(requested)]
    if (unique.length === 0) return unique
    const rows = yield* sql<{ id: string }>`
      ${ownedAmong(sql, owner, unique)} ${options.lock === true ? sql`FOR SHARE` : sql``}`
    const owned = new Set(rows.map((row) => row.id))
    const missing = unique.find((id) => !owned.has(id))
    if (missing !== undefined) return yield* new SourceNotOwned({ sourceId: missing })
    return unique
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))

/** Source ids as a query sends them (the parameter repeated, comma-separated, or both): trimmed, without repeats. */
export const sourceIdList = (requested: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(requested.flatMap((part) => part.split(",")).map((id) => id.trim()))].filter((id) => id.length > 0)
