/**
 * BM25 over the packed postings against exhaustive scoring in SQL, on the same index in one run:
 *   npm run bench:bm25 -- --dataset ../shared/datasets/scifact [--copies 16] [--k 10] [--data-dir DIR] [--no-reference]
 *   npm run bench:bm25 -- --chunks 100000 [--queries 200] [--k 10] [--data-dir DIR] [--no-reference]
 * Ingests (extraction and embeddings off) a BEIR corpus `copies` times, every copy after the first with about one
 * word in twenty replaced so copies are not duplicates, or the synthetic corpus of `bench:search`; then for every
 * query (the dataset's test queries, or synthetic ones) checks that search's top k equals the exhaustive top k in SQL
 * (same chunks, order and scores), and reports the latency of both, the postings of a query's terms and the share of
 * them search read (MaxScore leaves common terms' postings unread); the same search reading every term's postings
 * (no MaxScore, no segment cache) runs beside it, alternating which goes first, and must give the same top k.
 * `--no-reference` skips the slow exhaustive SQL (the two searches are then compared with each other). `--data-dir
 * DIR` keeps the embedded database in DIR and reuses the corpus it finds there (also `bench:search`'s synthetic
 * corpus, the same documents).
 * Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { LexicalIndex } from "../src/stores/LexicalIndex.ts"
import { exhaustiveBm25 } from "./lib/bm25Reference.ts"
import {
  argument,
  call,
  machine,
  percentile,
  pool,
  readJsonl,
  startInstance,
  waitForSource
} from "./lib/instance.ts"
import { mulberry32 } from "./lib/onnx.ts"
import { syntheticDocument, syntheticQuery } from "./lib/synthetic.ts"

const root = Path.resolve(import.meta.dirname, "..")
const datasetDir = argument("dataset")
const copies = Number(argument("copies") ?? 1)
const targetChunks = Number(argument("chunks") ?? 100_000)
const k = Number(argument("k") ?? 10)
const parameters = { k1: 1.2, b: 0.75 }
const dataDir = argument("data-dir")
const withReference = argument("no-reference") === undefined

/** The documents to ingest (title, text) and the queries to run. */
const workload = (): { documents: Array<{ title: string; text: string }>; queries: Array<string> } => {
  if (datasetDir === undefined) {
    const perDocument = 200
    const queries = Array.from({ length: Number(argument("queries") ?? 200) }, (_, i) => syntheticQuery(i))
    const documents = Array.from({ length: Math.ceil(targetChunks / perDocument) }, (_, i) => ({
      title: `doc-${i}`,
      text: syntheticDocument(i, perDocument)
    }))
    return { documents, queries }
  }
  const corpus: Array<{ title?: string; text: string }> = readJsonl(Path.join(datasetDir, "corpus.jsonl"))
  const testIds = new Set(
    Fs.readFileSync(Path.join(datasetDir, "qrels", "test.tsv"), "utf8").split("\n").slice(1).map((line) =>
      line.split("\t")[0]
    )
  )
  const queries = readJsonl(Path.join(datasetDir, "queries.jsonl"))
    .filter((q: { _id: string }) => testIds.has(q._id)).map((q: { text: string }) => q.text)
  const words = corpus.flatMap((doc) => doc.text.split(/\s+/)).filter((word) => /^[a-z]{4,}$/.test(word))
  const documents: Array<{ title: string; text: string }> = []
  const perDocument = 20
  for (let copy = 0; copy < copies; copy++) {
    const next = mulberry32(copy + 1)
    const vary = (text: string) =>
      copy === 0 ? text : text.split(" ").map((word) => next() < 0.05 ? words[Math.floor(next() * words.length)]! : word).join(" ")
    for (let i = 0; i < corpus.length; i += perDocument) {
      const text = corpus.slice(i, i + perDocument).map((doc) => `${doc.title ?? ""}\n\n${vary(doc.text)}`).join("\n\n")
      documents.push({ title: `copy ${copy} part ${i / perDocument}`, text })
    }
  }
  return { documents, queries }
}

const program = Effect.gen(function*() {
  const { documents, queries } = workload()
  const instance = yield* startInstance({
    embedModelDir: Option.none(),
    embedModel: "none",
    extractor: "off",
    ...(dataDir === undefined ? {} : { dataDir: Path.resolve(dataDir) })
  })
  const { url, sql } = instance
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
  const token: string = session.access_token
  const existing = (yield* Effect.promise(() => call(url, "/api/v1/sources?limit=100", { token }))).items
    .find((source: { name: string; document_count: number }) =>
      (source.name === "bm25" || (datasetDir === undefined && source.name === "bench")) && source.document_count > 0
    )
  const source = existing ?? (yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "bm25", connector_kind: "file_upload", config: {} } })
  ))
  const ingestStarted = performance.now()
  let accepted = existing?.document_count ?? 0
  if (existing === undefined) {
    yield* Effect.promise(() =>
      pool(documents, 4, async (document) => {
        const reply = await call(url, `/api/v1/sources/${source.id}/documents/ingest`, { token, json: document })
        if (reply.duplicate !== true) accepted++
      })
    )
  }
  const corpus = yield* Effect.promise(() => waitForSource(url, token, source.id, accepted))
  console.log(existing === undefined
    ? `corpus: ${corpus.chunk_count} chunks in ${((performance.now() - ingestStarted) / 1000).toFixed(0)} s`
    : `corpus: ${corpus.chunk_count} chunks found in ${dataDir}`)
  yield* sql`VACUUM (ANALYZE)`.pipe(Effect.orDie)

  const lexical = Context.get(instance.context, LexicalIndex)
  // The same index reading every term's postings in one statement (no MaxScore, no segment cache), for comparison.
  const everyTerm = Context.get(
    yield* Layer.build(
      LexicalIndex.layerWith({
        inlinePostings: Infinity,
        lookupCost: Infinity,
        tabledPostings: 1024,
        cachedPostings: Infinity,
        cacheBytes: 0
      })
    ).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
    LexicalIndex
  )
  const timedHits = (work: Effect.Effect<ReadonlyArray<unknown>>) =>
    Effect.gen(function*() {
      const started = performance.now()
      const hits = yield* work
      return { hits, ms: performance.now() - started }
    })
  let measured = { read: 0, total: 0 }
  const packed = (query: string) =>
    timedHits(Effect.map(lexical.searchMeasured(query, [source.id], k, parameters), ({ hits, postings }) => {
      measured = postings
      return hits
    }))
  const unpruned = (query: string) => timedHits(everyTerm.search(query, [source.id], k, parameters))
  const exhaustive = (query: string) =>
    withReference ? Effect.map(timedHits(exhaustiveBm25(sql, query, [source.id], k, parameters)), Option.some) :
      Effect.succeed(Option.none())
  for (const query of queries.slice(0, 20)) {
    yield* exhaustive(query)
    yield* packed(query)
    yield* unpruned(query)
  }
  let equal = 0
  const postings: Array<number> = []
  const shares: Array<number> = []
  let read = 0
  const exhaustiveMs: Array<number> = []
  const packedMs: Array<number> = []
  const unprunedMs: Array<number> = []
  for (const [i, query] of queries.entries()) {
    const reference = yield* exhaustive(query)
    // Alternating which goes first, so neither always meets pages the other just read.
    let result, every
    if (i % 2 === 0) {
      result = yield* packed(query)
      every = yield* unpruned(query)
    } else {
      every = yield* unpruned(query)
      result = yield* packed(query)
    }
    if (Option.isSome(reference)) exhaustiveMs.push(reference.value.ms)
    packedMs.push(result.ms)
    unprunedMs.push(every.ms)
    const expected = JSON.stringify(Option.getOrElse(reference, () => every).hits)
    if (expected === JSON.stringify(result.hits) && expected === JSON.stringify(every.hits)) equal++
    else console.log(`differs: ${query}`)
    postings.push(measured.total)
    read += measured.read
    if (measured.total > 0) shares.push(measured.read / measured.total)
  }
  const total = postings.reduce((sum, n) => sum + n, 0)
  const [segments] = yield* sql<{ rows: number; postings: number }>`
    SELECT count(*)::int AS rows, coalesce(sum(postings), 0)::float8 AS postings FROM lexical_segments`
    .pipe(Effect.orDie)
  const result = {
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    workload: datasetDir === undefined ? "synthetic" : `${Path.basename(datasetDir)} x${copies}`,
    chunks: corpus.chunk_count,
    queries: queries.length,
    k,
    identical_top_k: equal,
    postings_per_query: { p50: percentile(postings, 50), p95: percentile(postings, 95) },
    share_read: { p50: percentile(shares, 50), p95: percentile(shares, 95), all: total === 0 ? 0 : read / total },
    segments: segments!,
    reference: withReference ? "exhaustive SQL" : "every term read",
    exhaustive_ms: withReference ? { p50: percentile(exhaustiveMs, 50), p95: percentile(exhaustiveMs, 95) } : null,
    packed_ms: { p50: percentile(packedMs, 50), p95: percentile(packedMs, 95) },
    every_term_read_ms: { p50: percentile(unprunedMs, 50), p95: percentile(unprunedMs, 95) },
    machine: machine(),
    date: new Date().toISOString()
  }
  console.log(`${result.workload}, ${result.engine}: top ${k} identical for ${equal} of ${queries.length} queries`)
  const { p50, p95 } = result.postings_per_query
  console.log(`postings of the query's terms p50 ${p50}, p95 ${p95}; ${segments!.rows} segments hold ${
    segments!.postings} postings`)
  console.log(`share of those postings read p50 ${(result.share_read.p50 * 100).toFixed(1)}%, p95 ${
    (result.share_read.p95 * 100).toFixed(1)}%, over all queries ${(result.share_read.all * 100).toFixed(1)}%`)
  const ms = (times: { p50: number; p95: number }) => `p50 ${times.p50.toFixed(1)} ms, p95 ${times.p95.toFixed(1)} ms`
  console.log(`${result.exhaustive_ms === null ? "" : `exhaustive SQL ${ms(result.exhaustive_ms)}; `}packed ${
    ms(result.packed_ms)}; every term read ${ms(result.every_term_read_ms)}`)
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  const name = datasetDir === undefined ? "synthetic" : Path.basename(datasetDir)
  Fs.writeFileSync(Path.join(outDir, `bm25-${name}-${result.engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
