import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { PageCursor, takePage, TimeKey } from "../../src/domain/Page.ts"
import { Text } from "../../src/domain/Text.ts"

const documents = PageCursor("documents", TimeKey)
const chunks = PageCursor(
  "chunks",
  Schema.Struct({ at: TimeKey.fields.at, document_id: Schema.String, ordinal: Schema.Int })
)

const Micros = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 999_999 }))
const at = (seconds: number, micros: number) =>
  `${new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString().slice(0, 19)}.${String(micros).padStart(6, "0")}Z`

describe("page cursors", () => {
  it.effect.prop("a cursor decodes to exactly the key it was made from", [Micros, Text], ([micros, id]) =>
    Effect.sync(() => {
      const key = { at: at(micros % 60, micros), id }
      assert.deepStrictEqual(documents.decode(documents.encode(key)), Option.some(key))
    }))

  it.effect.prop("a cursor of another list, or a malformed one, decodes to nothing", [Micros, Schema.String], ([
    micros,
    text
  ]) =>
    Effect.sync(() => {
      const cursor = documents.encode({ at: at(0, micros), id: "d" })
      assert.isTrue(Option.isNone(chunks.decode(cursor)))
      assert.isTrue(Option.isNone(documents.decode(text)))
      const millisecond = Buffer.from(JSON.stringify(["documents", { at: "2026-01-01T00:00:00.123Z", id: "d" }]))
        .toString("base64url")
      assert.isTrue(Option.isNone(documents.decode(millisecond)), "a millisecond time is not exact")
      const crafted = (key: object) => Buffer.from(JSON.stringify(["documents", key])).toString("base64url")
      assert.isTrue(Option.isNone(documents.decode(crafted({ at: at(0, micros), id: "a\u0000b" }))), "NUL in an id")
      assert.isTrue(Option.isNone(documents.decode(crafted({ at: "2023-02-30T10:00:00.000000Z", id: "d" }))), "30 Feb")
    }))

  it.effect.prop("takePage keeps limit rows and a cursor only when more follow", [Schema.Array(Schema.Int), Micros], ([
    rows,
    limit
  ]) =>
    Effect.sync(() => {
      const size = (limit % 10) + 1
      const page = takePage(rows, size, (last) => String(last))
      assert.deepStrictEqual(page.rows, rows.slice(0, size))
      assert.strictEqual(page.next_cursor, rows.length > size ? String(rows[size - 1]) : null)
    }))

  it.effect("chunk cursors carry the document and the ordinal", () =>
    Effect.sync(() => {
      const key = { at: at(1, 5), document_id: "doc", ordinal: 3 }
      assert.deepStrictEqual(chunks.decode(chunks.encode(key)), Option.some(key))
    }))
})
