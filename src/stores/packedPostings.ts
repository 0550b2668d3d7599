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

/** The varint at `cursor.at`, which moves past it. */
const readVarint = (bytes: Uint8Array, cursor: { at: number }): number => {
  let at = cursor.at
  let byte = bytes[at++]!
  let value = byte & 127
  for (let scale = 128; byte >= 128; scale *= 128) {
    byte = bytes[at++]!
    value += (byte & 127) * scale
  }
  cursor.at = at
  return value
}

/**
 * A query's scores by chunk number as `scorePostings` adds to them: `units[no]` counts for the query when
 * `stamps[no] === stamp`; `seen[0 .. seenLength)` lists the numbers in the order first scored.
 */
export interface Scores {
  units: Float64Array
  stamps: Int32Array
  seen: Int32Array
  seenLength: number
  readonly stamp: number
  /** Makes `units` and `stamps` at least `size` long. */
  grow(size: number): void
}

/**
 * A term's weights by term frequency and chunk length: `table[tf << 8 | len]` for tf < 16 and len < 256, or `weigh`
 * for each posting where the table is empty.
 */
export interface TermWeights {
  /** `weightSlots` long, NaN where not computed yet (`weigh` fills it); or empty. */
  readonly table: Float64Array
  readonly weigh: (tf: number, len: number) => number
}

/** The slots of a `TermWeights` table. */
export const weightSlots = 16 << 8

/**
 * Adds each posting's weight of a packed segment to `scores` (whose `seen` has room for `postingsBound(bytes)` more);
 * returns how many postings it held. The search's reader: decoding and adding in one pass, no call per posting but
 * for a weight first needed (or outside the table).
 */
export const scorePostings = (bytes: Uint8Array, weights: TermWeights, scores: Scores): number => {
  const { table, weigh } = weights
  const tabled = table.length === weightSlots
  const { seen, stamp } = scores
  let { stamps, units } = scores
  let seenLength = scores.seenLength
  let no = 0
  let count = 0
  for (const cursor = { at: 0 }; cursor.at < bytes.length; count++) {
    no += readVarint(bytes, cursor)
    const tf = bytes[cursor.at++]!
    const len = readVarint(bytes, cursor)
    let weight: number
    if (tabled && tf < 16 && len < 256) {
      const slot = (tf << 8) | len
      weight = table[slot]!
      if (weight !== weight) weight = table[slot] = weigh(tf, len)
    } else {
      weight = weigh(tf, len)
    }
    if (no >= units.length) {
      scores.grow(no + 1)
      units = scores.units
      stamps = scores.stamps
    }
    if (stamps[no] === stamp) units[no]! += weight
    else {
      stamps[no] = stamp
      units[no] = weight
      seen[seenLength++] = no
    }
  }
  scores.seenLength = seenLength
  return count
}

/** The most postings a packed segment of these bytes can hold (each takes at least three bytes). */
export const postingsBound = (bytes: Uint8Array) => Math.floor(bytes.length / 3)

/** Calls `visit` with each posting of a packed segment. */
export const forEachPosting = (bytes: Uint8Array, visit: (no: number, tf: number, len: number) => void) => {
  let no = 0
  for (const cursor = { at: 0 }; cursor.at < bytes.length;) {
    no += readVarint(bytes, cursor)
    const tf = bytes[cursor.at++]!
    visit(no, tf, readVarint(bytes, cursor))
  }
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
