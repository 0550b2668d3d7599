import type { SqlClient, Statement } from "effect/sql"

/**
 * How BM25 postings are packed in a segment (`lexical_segments.packed`), the one owner of the format, written in SQL
 * (appends) and in the service (merges), read by search. Postings are in chunk-number order; each is the difference
 * from the previous chunk number (the first: from 0) as a varint, the term frequency in one byte (a tsvector keeps at
 * most 255 positions of a lexeme, and a lexeme without positions counts once) and the chunk's length in lexemes as a
 * varint. A varint is 7 bits a byte, low bits first, the high bit set while more bytes follow; numbers are below 2^31.
 */

export interface Posting {
  readonly no: number
  readonly tf: number
  readonly len: number
}

/**
 * Decodes a packed segment into `nos`, `tfs` and `lens` (each at least `postingsBound(bytes)` long); returns how many
 * postings it holds. The scoring loop's reader: no call per posting.
 */
export const decodePostings = (bytes: Uint8Array, nos: Int32Array, tfs: Uint8Array, lens: Int32Array): number => {
  let no = 0
  let count = 0
  for (let at = 0; at < bytes.length; count++) {
    let byte = bytes[at++]!
    let gap = byte & 127
    for (let scale = 128; byte >= 128; scale *= 128) {
      byte = bytes[at++]!
      gap += (byte & 127) * scale
    }
    no += gap
    nos[count] = no
    tfs[count] = bytes[at++]!
    byte = bytes[at++]!
    let len = byte & 127
    for (let scale = 128; byte >= 128; scale *= 128) {
      byte = bytes[at++]!
      len += (byte & 127) * scale
    }
    lens[count] = len
  }
  return count
}

/** The most postings a packed segment of these bytes can hold (each takes at least three bytes). */
export const postingsBound = (bytes: Uint8Array) => Math.floor(bytes.length / 3)

/** Calls `visit` with each posting of a packed segment. */
export const forEachPosting = (bytes: Uint8Array, visit: (no: number, tf: number, len: number) => void) => {
  const bound = postingsBound(bytes)
  const [nos, tfs, lens] = [new Int32Array(bound), new Uint8Array(bound), new Int32Array(bound)]
  const count = decodePostings(bytes, nos, tfs, lens)
  for (let i = 0; i < count; i++) visit(nos[i]!, tfs[i]!, lens[i]!)
}

/** Postings, in chunk-number order, packed. */
export const pack = (postings: ReadonlyArray<Posting>): Buffer => {
  const bytes: Array<number> = []
  const varint = (value: number) => {
    for (; value >= 128; value = Math.floor(value / 128)) bytes.push((value % 128) | 128)
    bytes.push(value)
  }
  let previous = 0
  for (const { len, no, tf } of postings) {
    varint(no - previous)
    bytes.push(tf)
    varint(len)
    previous = no
  }
  return Buffer.from(bytes)
}

/** The byte holding the low 8 bits of the int4 expression `value`. */
const byte = (value: string) => `substring(int4send((${value})::int4) from 4 for 1)`

/** SQL for the varint of the non-negative int4 `column` (a plain column or alias: it is repeated). */
const varint = (column: string) => {
  const groups = (count: number) =>
    Array.from({ length: count }, (_, i) =>
      i === count - 1 ? byte(`${column} >> ${7 * i}`) : byte(`((${column} >> ${7 * i}) & 127) | 128`))
      .join(" || ")
  return `CASE WHEN ${column} < 128 THEN ${groups(1)} WHEN ${column} < 16384 THEN ${groups(2)}
    WHEN ${column} < 2097152 THEN ${groups(3)} WHEN ${column} < 268435456 THEN ${groups(4)} ELSE ${groups(5)} END`
}

/**
 * SQL aggregating postings into one packed segment, over rows with the int4 columns `no`, `gap` (the difference from
 * the previous `no` of the same segment, in `no` order: `no - lag(no, 1, 0)`), `tf` and `len`.
 */
export const packedAggregate = (sql: SqlClient.SqlClient): Statement.Fragment =>
  sql.literal(`string_agg(${varint("gap")} || ${byte("tf")} || ${varint("len")}, ''::bytea ORDER BY no)`)
