/**
 * BM25 over the packed postings against exhaustive scoring in SQL, on the same index in one run:
 *   npm run bench:bm25 -- --dataset ../shared/datasets/scifact [--copies 20] [--k 10]
 *   npm run bench:bm25 -- --chunks 100000 [--queries 200] [--k 10]
 * Ingests (extraction and embeddings off) a BEIR corpus `copies` times, every copy after the first with about one
 * word in twenty replaced so copies are not duplicates, or the synthetic corpus of `bench:search`; then for every
 * query (the dataset's test queries, or synthetic ones) checks that search's top k equals the exhaustive top k in SQL
 * (same chunks, order and scores), and reports the latency of both, the postings of a query's terms and the share of
 * them search read (MaxScore leaves common terms' postings unread). `--data-dir DIR` keeps the embedded database in
 * DIR and reuses the corpus it finds there. Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 */
import { Context, Effect, Option } from "effect"
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
    .find((source: { name: string; document_count: number }) => source.name === "bm25" && source.document_count > 0)
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
  const exhaustive = (query: string) => timedHits(exhaustiveBm25(sql, query, [source.id], k, parameters))
  for (const query of queries.slice(0, 20)) {
    yield* exhaustive(query)
    yield* packed(query)
  }
  let equal = 0
  const postings: Array<number> = []
  const shares: Array<number> = []
  let read = 0
  const exhaustiveMs: Array<number> = []
  const packedMs: Array<number> = []
  for (const query of queries) {
    const reference = yield* exhaustive(query)
    const result = yield* packed(query)
    exhaustiveMs.push(reference.ms)
    packedMs.push(result.ms)
    if (JSON.stringify(reference.hits) === JSON.stringify(result.hits)) equal++
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
    exhaustive_ms: { p50: percentile(exhaustiveMs, 50), p95: percentile(exhaustiveMs, 95) },
    packed_ms: { p50: percentile(packedMs, 50), p95: percentile(packedMs, 95) },
    machine: machine(),
    date: new Date().toISOString()
  }
  console.log(`${result.workload}, ${result.engine}: top ${k} identical for ${equal} of ${queries.length} queries`)
  const { p50, p95 } = result.postings_per_query
  console.log(`postings of the query's terms p50 ${p50}, p95 ${p95}; ${segments!.rows} segments hold ${
    segments!.postings} postings`)
  console.log(`share of those postings read p50 ${(result.share_read.p50 * 100).toFixed(1)}%, p95 ${
    (result.share_read.p95 * 100).toFixed(1)}%, over all queries ${(result.share_read.all * 100).toFixed(1)}%`)
  console.log(`exhaustive SQL p50 ${result.exhaustive_ms.p50.toFixed(1)} ms, p95 ${result.exhaustive_ms.p95.toFixed(1)} ms;` +
    ` packed p50 ${result.packed_ms.p50.toFixed(1)} ms, p95 ${result.packed_ms.p95.toFixed(1)} ms`)
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  const name = datasetDir === undefined ? "synthetic" : Path.basename(datasetDir)
  Fs.writeFileSync(Path.join(outDir, `bm25-${name}-${result.engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
