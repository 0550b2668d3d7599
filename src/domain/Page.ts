import { Option, Schema } from "effect"
import { readInstant } from "./Instant.ts"
import { characters, Text, textProblem } from "./Text.ts"

export const PageQuery = {
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
  ).annotate({ description: "Items per page, 1 to 100 (default 20)" }),
  cursor: Schema.optionalKey(Text.check(characters(0, 200))).annotate({
    description: "The next_cursor of the previous page of the same list; anything else is 400 invalid_cursor"
  })
}

export const Page = <S extends Schema.Top>(item: S) =>
  Schema.Struct({
    items: Schema.Array(item),
    next_cursor: Schema.NullOr(Schema.String).annotate({ description: "Pass as cursor for the next page; null at the end" })
  })

/** PostgreSQL's `to_char` format of a sort time as cursors carry it: UTC, with the six fractional digits stored. */
export const cursorTimeFormat = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'

/**
 * A sort time in a cursor, read from SQL with `cursorTimeFormat` and compared as `${at}::timestamptz`: the
 * database's own microsecond value, since a millisecond (a JS Date) would lose or repeat rows within one.
 */
export const CursorTime = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
  // A crafted cursor's time must be one PostgreSQL reads (30 February and year 0 were a 500).
  Schema.makeFilter((s: string) => readInstant(s) !== undefined)
)

/** The key of lists ordered by a time with the row's id as tie-breaker. */
export const TimeKey = Schema.Struct({ at: CursorTime, id: Schema.String })

/** Whether every string in a decoded cursor can be sent to the database (a crafted id with NUL was a 500). */
const storableKey = (value: unknown): boolean =>
  typeof value === "string"
    ? textProblem(value) === undefined
    : typeof value !== "object" || value === null || Object.values(value).every(storableKey)

/**
 * The one cursor codec of every list: base64url of the JSON `[list, key]`, the key being the last item's exact sort
 * values ending in a unique tie-breaker. A cursor of another list, or anything else, decodes to None.
 */
export const PageCursor = <S extends Schema.Codec<any, any, never, never>>(list: string, key: S) => {
  const codec = Schema.fromJsonString(Schema.Tuple([Schema.Literal(list), key]))
  const decode = Schema.decodeUnknownOption(codec)
  const encodeKey = Schema.encodeSync(key)
  return {
    encode: (value: S["Type"]): string => Buffer.from(JSON.stringify([list, encodeKey(value)])).toString("base64url"),
    decode: (cursor: string): Option.Option<S["Type"]> =>
      Option.map(
        Option.filter(decode(Buffer.from(cursor, "base64url").toString("utf8")), ([, value]) => storableKey(value)),
        ([, value]) => value
      )
  }
}

/** The first `limit` rows (the query asked for one more) and the cursor after them, null at the end. */
export const takePage = <R>(rows: ReadonlyArray<R>, limit: number, cursorOf: (last: R) => string) => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return { rows: page, next_cursor: rows.length > limit && last !== undefined ? cursorOf(last) : null }
}
