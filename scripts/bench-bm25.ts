/**
 * Exact pruned BM25 against exhaustive scoring, on the same index in one run:
 *   npm run bench:bm25 -- --dataset ../shared/datasets/scifact [--copies 20] [--k 10]
 *   npm run bench:bm25 -- --chunks 100000 [--queries 200] [--k 10]
 * Ingests (extraction and embeddings off) a BEIR corpus `copies` times, every copy after the first with about one
 * word in twenty replaced so copies are not duplicates, or the synthetic corpus of `bench:search`; then for every
 * query (the dataset's test queries, or synthetic ones) checks that the pruned top k equals the exhaustive top k
 * (same chunks, order and scores), and reports the share of postings read and the latency of both.
 * Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 */
import { Context, Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { LexicalIndex } from "../src/stores/LexicalIndex.ts"
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
  const instance = yield* startInstance({ embedModelDir: Option.none(), embedModel: "none", extractor: "off" })
  const { url, sql } = instance
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
  const token: string = session.access_token
  const source = yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "bm25", connector_kind: "file_upload", config: {} } })
  )
  const ingestStarted = performance.now()
  let accepted = 0
  yield* Effect.promise(() =>
    pool(documents, 4, async (document) => {
      const reply = await call(url, `/api/v1/sources/${source.id}/documents/ingest`, { token, json: document })
      if (reply.duplicate !== true) accepted++
    })
  )
  const corpus = yield* Effect.promise(() => waitForSource(url, token, source.id, accepted))
  console.log(`corpus: ${corpus.chunk_count} chunks in ${((performance.now() - ingestStarted) / 1000).toFixed(0)} s`)
  yield* sql`VACUUM (ANALYZE)`.pipe(Effect.orDie)

  const lexical = Context.get(instance.context, LexicalIndex)
  const scan = (query: string, exhaustive: boolean) =>
    Effect.gen(function*() {
      const started = performance.now()
      const result = yield* lexical.scan(query, [source.id], k, parameters, { exhaustive })
      return { ...result, ms: performance.now() - started }
    })
  for (const query of queries.slice(0, 20)) {
    yield* scan(query, true)
    yield* scan(query, false)
  }
  let equal = 0
  const shares: Array<number> = []
  const exhaustiveMs: Array<number> = []
  const prunedMs: Array<number> = []
  for (const query of queries) {
    const reference = yield* scan(query, true)
    const pruned = yield* scan(query, false)
    exhaustiveMs.push(reference.ms)
    prunedMs.push(pruned.ms)
    if (JSON.stringify(reference.hits) === JSON.stringify(pruned.hits)) equal++
    else console.log(`differs: ${query}`)
    if (pruned.postingsTotal > 0) shares.push(pruned.postingsRead / pruned.postingsTotal)
  }
  const totalRead = shares.reduce((a, b) => a + b, 0)
  const result = {
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    workload: datasetDir === undefined ? "synthetic" : `${Path.basename(datasetDir)} x${copies}`,
    chunks: corpus.chunk_count,
    queries: queries.length,
    k,
    identical_top_k: equal,
    postings_read_share: {
      mean: totalRead / Math.max(shares.length, 1),
      p50: percentile(shares, 50),
      p95: percentile(shares, 95)
    },
    exhaustive_ms: { p50: percentile(exhaustiveMs, 50), p95: percentile(exhaustiveMs, 95) },
    pruned_ms: { p50: percentile(prunedMs, 50), p95: percentile(prunedMs, 95) },
    machine: machine(),
    date: new Date().toISOString()
  }
  console.log(`${result.workload}, ${result.engine}: top ${k} identical for ${equal} of ${queries.length} queries`)
  console.log(`postings read, share of exhaustive: mean ${result.postings_read_share.mean.toFixed(3)}, p50 ${
    result.postings_read_share.p50.toFixed(3)}, p95 ${result.postings_read_share.p95.toFixed(3)}`)
  console.log(`exhaustive p50 ${result.exhaustive_ms.p50.toFixed(1)} ms, p95 ${result.exhaustive_ms.p95.toFixed(1)} ms;` +
    ` pruned p50 ${result.pruned_ms.p50.toFixed(1)} ms, p95 ${result.pruned_ms.p95.toFixed(1)} ms`)
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  const name = datasetDir === undefined ? "synthetic" : Path.basename(datasetDir)
  Fs.writeFileSync(Path.join(outDir, `bm25-${name}-${result.engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
