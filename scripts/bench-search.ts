/**
 * Search benchmark over a synthetic corpus (default 100,000 chunks) ingested through the pipeline:
 * p50/p95 of POST /api/v1/search (strategy multi, top_k 10) at concurrency 1 and 8, against the bare work the
 * same request needs — the query embedding, the vector index's and BM25's lists, as the search service asks them —
 * timed alone in the same run, with the share of the query's postings BM25 read; GET /system/health is asked every
 * 20 ms during the concurrency-8 phase (p50, p99, max). Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 * Event extraction is off unless --extract is given: the synthetic words name nothing, and the graph list has its
 * own evaluation (npm run eval:graph). The process's peak resident memory (VmHWM) is read right after the ingest;
 * the searches begin once idle workers have compacted BM25's index. Every phase asks the same queries, the bare work
 * first: BM25's segment cache (ENGRAM_BM25_CACHE_MB) fills during it, and the HTTP phases find it warm.
 * `--data-dir DIR` keeps the embedded database in DIR and reuses the corpus found there (the ingest is then skipped),
 * to compare settings on one corpus.
 *   npm run bench:search -- [--chunks 100000] [--queries 200] [--model-dir DIR] [--extract] [--data-dir DIR]
 */
import { Context, Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { LexicalIndex } from "../src/stores/LexicalIndex.ts"
import { VectorIndex } from "../src/stores/VectorIndex.ts"
import { Retriever } from "../src/services/Retriever.ts"
import {
  argument,
  call,
  machine,
  peakResidentBytes,
  percentile,
  pool,
  startInstance,
  timed,
  waitForSource
} from "./lib/instance.ts"
import { mostSegmentsPerTerm } from "./lib/bm25Reference.ts"
import { syntheticDocument, syntheticQuery } from "./lib/synthetic.ts"

const root = Path.resolve(import.meta.dirname, "..")
const targetChunks = Number(argument("chunks") ?? 100_000)
const queryCount = Number(argument("queries") ?? 200)
const modelDir = Path.resolve(argument("model-dir") ?? Path.join(root, "../shared/models/_fixtures/tiny-random-bert"))
const chunksPerDocument = 200
const dataDir = argument("data-dir")

const program = Effect.gen(function*() {
  const instance = yield* startInstance({
    embedModelDir: Option.some(modelDir),
    embedModel: "local",
    ...(argument("extract") === undefined ? { extractor: "off" as const } : {}),
    ...(dataDir === undefined ? {} : { dataDir: Path.resolve(dataDir) })
  })
  const { url, sql } = instance
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
  const token: string = session.access_token
  const documents = Math.ceil(targetChunks / chunksPerDocument)
  const existing = (yield* Effect.promise(() => call(url, "/api/v1/sources?limit=100", { token }))).items
    .find((source: { name: string; document_count: number }) =>
      source.name === "bench" && source.document_count === documents
    )
  const source = existing ?? (yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "bench", connector_kind: "file_upload", config: {} } })
  ))
  const ingestStarted = performance.now()
  if (existing === undefined) {
    yield* Effect.promise(() =>
      pool(Array.from({ length: documents }, (_, i) => i), 4, async (i) => {
        await call(url, `/api/v1/sources/${source.id}/documents/ingest`, {
          token,
          json: { title: `doc-${i}`, text: syntheticDocument(i, chunksPerDocument) }
        })
      })
    )
  }
  const corpus = yield* Effect.promise(() => waitForSource(url, token, source.id, documents))
  const ingestSeconds = existing === undefined ? (performance.now() - ingestStarted) / 1000 : null
  const ingestPeakMb = peakResidentBytes() / 1e6
  console.log(existing === undefined
    ? `corpus: ${corpus.chunk_count} chunks in ${ingestSeconds!.toFixed(0)} s, peak resident ${ingestPeakMb.toFixed(0)} MB`
    : `corpus: ${corpus.chunk_count} chunks found${dataDir === undefined ? "" : ` in ${dataDir}`}`)
  // The steady state: idle workers have compacted BM25's index (every term in at most two segments), and autovacuum
  // (PostgreSQL) or the periodic vacuum (PGlite) leaves the tables vacuumed and analyzed.
  const compactionStarted = performance.now()
  while ((yield* mostSegmentsPerTerm(sql)) > 2) yield* Effect.sleep("1 second")
  const compactionSeconds = (performance.now() - compactionStarted) / 1000
  console.log(`index compacted ${compactionSeconds.toFixed(0)} s after the corpus was ready`)
  yield* sql`VACUUM (ANALYZE)`.pipe(Effect.orDie)

  const queries = Array.from({ length: queryCount }, (_, i) => syntheticQuery(i))
  const retriever = Context.get(instance.context, Retriever)
  const lexical = Context.get(instance.context, LexicalIndex)
  const dense = yield* retriever.denseStatus
  if (Option.isNone(dense.model)) return yield* Effect.die(new Error(`dense retrieval is off: ${dense.reason}`))
  const model = dense.model.value
  const vectors = Context.get(instance.context, VectorIndex)

  /**
   * The bare work of one multi search, as the search service does it: embed the query, the vector index's nearest 50
   * and BM25's best 50; each part's time too, and the share of the query's postings BM25 read.
   */
  const bare = (query: string) =>
    Effect.gen(function*() {
      const started = performance.now()
      const [vector] = yield* instance.embed(query)
      const embedded = performance.now()
      yield* vectors.nearest(model, vector!, [source.id], 50)
      const searched = performance.now()
      const { postings } = yield* lexical.searchMeasured(query, [source.id], 50, { k1: 1.2, b: 0.75 })
      const done = performance.now()
      return {
        total: done - started,
        embed: embedded - started,
        vector: searched - embedded,
        bm25: done - searched,
        postings
      }
    })

  for (const query of queries.slice(0, 20)) yield* bare(query)
  const bareParts: Array<Effect.Success<ReturnType<typeof bare>>> = []
  for (const query of queries) bareParts.push(yield* bare(query))
  const shares = bareParts.flatMap(({ postings }) => postings.total === 0 ? [] : [postings.read / postings.total])
  const postingsRead = bareParts.reduce((sum, { postings }) => sum + postings.read, 0)
  const postingsTotal = bareParts.reduce((sum, { postings }) => sum + postings.total, 0)
  const bareTimes = bareParts.map((part) => part.total)
  const partP50 = (part: "embed" | "vector" | "bm25") => percentile(bareParts.map((parts) => parts[part]), 50)

  /** Searches at the concurrency while a prober asks GET /system/health every 20 ms, as a load balancer would. */
  const endToEnd = (concurrency: number) =>
    Effect.promise(async () => {
      const times: Array<number> = []
      const health: Array<number> = []
      let done = false
      const prober = (async () => {
        while (!done) {
          health.push(await timed(() => fetch(`${url}/api/v1/system/health`).then((response) => response.arrayBuffer())))
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      })()
      const started = performance.now()
      await pool(queries, concurrency, async (query) => {
        times.push(await timed(() => call(url, "/api/v1/search", { token, json: { query, strategy: "multi", top_k: 10 } })))
      })
      const qps = queries.length / ((performance.now() - started) / 1000)
      done = true
      await prober
      return { times, qps, health }
    })
  const c1 = yield* endToEnd(1)
  const c8 = yield* endToEnd(8)
  const result = {
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    chunks: corpus.chunk_count,
    queries: queries.length,
    model: Path.basename(modelDir),
    extractor: instance.settings.extractor,
    ingest_seconds: ingestSeconds,
    ingest_peak_resident_mb: existing === undefined ? ingestPeakMb : null,
    pglite_shared_buffers_mb: Option.isSome(instance.settings.databaseUrl) ? null : instance.settings.pgliteSharedBuffersMb,
    bm25_cache_mb: instance.settings.bm25CacheMb,
    bare_ms: {
      p50: percentile(bareTimes, 50),
      p95: percentile(bareTimes, 95),
      parts_p50: { embed: partP50("embed"), vector: partP50("vector"), bm25: partP50("bm25") },
      bm25_share_of_postings_read: {
        p50: percentile(shares, 50),
        p95: percentile(shares, 95),
        all: postingsTotal === 0 ? 0 : postingsRead / postingsTotal
      }
    },
    concurrency_1: { p50: percentile(c1.times, 50), p95: percentile(c1.times, 95), qps: c1.qps },
    concurrency_8: { p50: percentile(c8.times, 50), p95: percentile(c8.times, 95), qps: c8.qps },
    health_during_concurrency_8: {
      requests: c8.health.length,
      p50: percentile(c8.health, 50),
      p99: percentile(c8.health, 99),
      max: Math.max(...c8.health)
    },
    overhead_p50: percentile(c1.times, 50) / percentile(bareTimes, 50) - 1,
    machine: machine(),
    date: new Date().toISOString()
  }
  console.log(`bare (embedding + vector SQL + BM25): p50 ${result.bare_ms.p50.toFixed(1)} ms, p95 ${
    result.bare_ms.p95.toFixed(1)} ms; p50 of the parts: embedding ${partP50("embed").toFixed(1)}, vector ${
    partP50("vector").toFixed(1)}, BM25 ${partP50("bm25").toFixed(1)} ms`)
  const read = result.bare_ms.bm25_share_of_postings_read
  const percent = (share: number) => `${(share * 100).toFixed(1)}%`
  console.log(`BM25 read ${percent(read.p50)} of its query's postings (p50; p95 ${percent(read.p95)}, ${
    percent(read.all)} of all)`)
  console.log(`POST /search multi, concurrency 1: p50 ${result.concurrency_1.p50.toFixed(1)} ms, p95 ${result.concurrency_1.p95.toFixed(1)} ms, ${result.concurrency_1.qps.toFixed(1)} q/s`)
  console.log(`POST /search multi, concurrency 8: p50 ${result.concurrency_8.p50.toFixed(1)} ms, p95 ${result.concurrency_8.p95.toFixed(1)} ms, ${result.concurrency_8.qps.toFixed(1)} q/s`)
  console.log(`GET /system/health during concurrency 8: ${result.health_during_concurrency_8.requests} requests, p50 ${
    result.health_during_concurrency_8.p50.toFixed(1)} ms, p99 ${result.health_during_concurrency_8.p99.toFixed(1)} ms, max ${
    result.health_during_concurrency_8.max.toFixed(1)} ms`)
  console.log(`overhead over the bare work at concurrency 1 (p50): ${(result.overhead_p50 * 100).toFixed(0)}%`)
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  Fs.writeFileSync(Path.join(outDir, `search-${result.engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
