/**
 * A probe for the next step of issue 17 (not a feature): how fast BM25 is when each term's postings are one packed
 * value read in a single row and scored in JavaScript, against the SQL exhaustive scoring, on the same embedded
 * database. Works on a COPY of a data directory that `npm run bench:search -- --data-dir DIR` filled (it adds two
 * tables): chunk numbers, and per (term, source) the postings packed as (chunk number int32, tf int16, length int16).
 * Then the benchmark's synthetic queries: both ways, p50/p95, postings per query, and whether the top-10 sets agree.
 *   node scripts/probe-packed-postings.ts --pglite-dir COPY/pglite [--queries 200] [--hex]
 * `--hex` reads the packed values as bytea (PGlite's hex text) instead of base64 text.
 */
import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { argument, percentile } from "./lib/instance.ts"
import { syntheticQuery } from "./lib/synthetic.ts"

const dir = argument("pglite-dir")
if (dir === undefined) throw new Error("usage: node scripts/probe-packed-postings.ts --pglite-dir COPY/pglite")
const queryCount = Number(argument("queries") ?? 200)
const hex = argument("hex") !== undefined
const k1 = 1.2
const b = 0.75

const db = await PGlite.create({
  dataDir: dir,
  extensions: { vector },
  startParams: [...PGlite.defaultStartParams, "-c", "shared_buffers=32MB"]
})
const [{ built }] = (await db.query<{ built: boolean }>(`SELECT to_regclass('packed_postings') IS NOT NULL AS built`)).rows
if (!built) {
  const started = performance.now()
  await db.exec(`CREATE TABLE chunk_nos AS SELECT id, (row_number() OVER (ORDER BY id))::int AS no FROM chunks`)
  await db.exec(`CREATE UNIQUE INDEX ON chunk_nos (id)`)
  await db.exec(`CREATE TABLE packed_postings AS
    SELECT p.term, p.source_id, count(*)::int AS df, string_agg(
      int4send(n.no) || int2send(least(p.tf, 32767)::int2) || int2send(least(p.len, 32767)::int2), ''::bytea
      ORDER BY n.no) AS packed
    FROM chunk_terms p JOIN chunk_nos n ON n.id = p.chunk_id
    GROUP BY p.term, p.source_id`)
  await db.exec(`CREATE INDEX ON packed_postings (term, source_id)`)
  console.log(`packed tables built in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}
const [{ n, avgdl, source }] = (await db.query<{ n: number; avgdl: number; source: string }>(`
  SELECT sum(chunk_count)::float8 AS n, (sum(total_length) / sum(chunk_count))::float8 AS avgdl,
    min(source_id) AS source FROM lexical_stats`)).rows
const [{ last }] = (await db.query<{ last: number }>(`SELECT max(no) AS last FROM chunk_nos`)).rows
const scores = new Float64Array(last + 1)
const stamps = new Int32Array(last + 1)
let stamp = 0

/** The best 10 chunk numbers by score (ties: the smaller number), from the chunks `seen`. */
const best10 = (seen: ReadonlyArray<number>) => {
  const top: Array<number> = []
  const before = (x: number, y: number) => scores[x]! > scores[y]! || (scores[x] === scores[y] && x < y)
  for (const no of seen) {
    if (top.length === 10 && !before(no, top[9]!)) continue
    let i = top.length === 10 ? 9 : top.push(no) - 1
    while (i > 0 && before(no, top[i - 1]!)) {
      top[i] = top[i - 1]!
      i--
    }
    top[i] = no
  }
  return top
}

const packedSearch = async (query: string) => {
  const rows = (await db.query<{ df: number; packed: string | Uint8Array }>(`
    SELECT p.df, ${hex ? "p.packed" : "encode(p.packed, 'base64') AS packed"}
    FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS t (term)
    JOIN packed_postings p ON p.term = t.term AND p.source_id = $2`, [query, source])).rows
  stamp++
  const seen: Array<number> = []
  let read = 0
  for (const row of rows) {
    const idf = Math.log(1 + (n - row.df + 0.5) / (row.df + 0.5))
    const bytes = typeof row.packed === "string" ? Buffer.from(row.packed, "base64") : row.packed
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    for (let at = 0; at < bytes.byteLength; at += 8, read++) {
      const no = view.getInt32(at)
      const tf = view.getInt16(at + 4)
      const weight = idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * view.getInt16(at + 6) / avgdl))
      if (stamps[no] === stamp) scores[no]! += weight
      else {
        stamps[no] = stamp
        scores[no] = weight
        seen.push(no)
      }
    }
  }
  return { top: best10(seen), read }
}

const sqlSearch = async (query: string) =>
  (await db.query<{ chunk_id: string }>(`
    WITH terms AS (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', $1))),
    weighted AS (
      SELECT t.term, ln(1 + ($2::float8 - l.df + 0.5) / (l.df + 0.5)) AS idf
      FROM terms t JOIN lexical_terms l ON l.term = t.term AND l.source_id = $3
    )
    SELECT p.chunk_id FROM weighted w JOIN chunk_terms p ON p.term = w.term AND p.source_id = $3
    GROUP BY p.chunk_id
    ORDER BY sum(w.idf * (p.tf * ${k1 + 1}) / (p.tf + ${k1} * (${1 - b} + ${b} * p.len / $4::float8))) DESC, p.chunk_id
    LIMIT 10`, [query, n, source, avgdl])).rows.map((row) => row.chunk_id)

const timed = async <A>(work: () => Promise<A>): Promise<[number, A]> => {
  const started = performance.now()
  const result = await work()
  return [performance.now() - started, result]
}
const queries = Array.from({ length: queryCount }, (_, i) => syntheticQuery(i))
for (const query of queries.slice(0, 10)) await Promise.all([packedSearch(query), sqlSearch(query)])
const packedTimes: Array<number> = []
const sqlTimes: Array<number> = []
const reads: Array<number> = []
let agree = 0
for (const query of queries) {
  const [packedMs, packed] = await timed(() => packedSearch(query))
  const [sqlMs, ids] = await timed(() => sqlSearch(query))
  packedTimes.push(packedMs)
  sqlTimes.push(sqlMs)
  reads.push(packed.read)
  const packedIds = (await db.query<{ id: string }>(`SELECT id FROM chunk_nos WHERE no = ANY($1::int[])`, [packed.top]))
    .rows.map((row) => row.id).sort()
  if (JSON.stringify(packedIds) === JSON.stringify([...ids].sort())) agree++
}
console.log(`packed, scored in JS (${hex ? "hex bytea" : "base64"}): p50 ${percentile(packedTimes, 50).toFixed(1)} ms, ` +
  `p95 ${percentile(packedTimes, 95).toFixed(1)} ms`)
console.log(`SQL exhaustive: p50 ${percentile(sqlTimes, 50).toFixed(1)} ms, p95 ${percentile(sqlTimes, 95).toFixed(1)} ms`)
console.log(`postings per query p50 ${percentile(reads, 50)}, p95 ${percentile(reads, 95)}; ` +
  `same top-10 set for ${agree} of ${queries.length} queries`)
await db.close()
