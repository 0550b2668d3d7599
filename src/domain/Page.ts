import { Schema } from "effect"
import { characters, Text } from "./Text.ts"

export const PageQuery = {
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
  ).annotate({ description: "Items per page, 1 to 100 (default 20)" }),
  cursor: Schema.optionalKey(Text.check(characters(0, 200))).annotate({
    description: "The next_cursor of the previous page"
  })
}

export const Page = <S extends Schema.Top>(item: S) =>
  Schema.Struct({
    items: Schema.Array(item),
    next_cursor: Schema.NullOr(Schema.String).annotate({ description: "Pass as cursor for the next page; null at the end" })
  })

export interface PageRequest {
  readonly limit: number
  readonly after: { readonly createdAt: Date; readonly id: string } | undefined
}

/** Cursors are opaque to clients: base64url of the last item's creation time and id (newest first order). */
export const encodeCursor = (createdAt: Date, id: string) =>
  Buffer.from(`${createdAt.toISOString()}|${id}`).toString("base64url")

export const decodeCursor = (cursor: string): PageRequest["after"] | null => {
  const [time, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|")
  const createdAt = new Date(time ?? "")
  return id === undefined || Number.isNaN(createdAt.getTime()) ? null : { createdAt, id }
}
