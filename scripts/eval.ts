/**
 * Retrieval evaluation on a BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv):
 *   npm run eval -- --dataset ../shared/datasets/scifact [--model-dir DIR | --no-dense] [--split test]
 *                   [--strategies lexical,multi,vector] [--limit-queries N] [--rerank-model-dir DIR]
 * Ingests the corpus through the service's own pipeline (HTTP, workers, chunking, BM25 statistics, embeddings)
 * into a fresh source of an in-process server (embedded PGlite, or PostgreSQL with DATABASE_URL), runs every
 * query of the split through the search service for each strategy, and prints nDCG@10, recall@10,
 * recall@100, MRR@10 and latency p50/p95, then the top 10 of lexical and multi over HTTP against GET /system/health
 * (the no-op) in the same run; results are written to bench/results/. multi also runs without its graph
 * list ("multi-graph"), and with a reranker (a cross-encoder directory) with rerank on ("multi+rerank").
 */
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Strategy } from "../src/domain/Search.ts"
import type { UserId } from "../src/domain/User.ts"
import { argument, call, machine, percentile, pool, readJsonl, startInstance, timed, waitForSource } from "./lib/instance.ts"
import { mean, mrrAt, ndcgAt, recallAt } from "./lib/metrics.ts"

const datasetDir = argument("dataset")
if (datasetDir === undefined) {
  console.error("usage: npm run eval -- --dataset <BEIR folder> [--model-dir DIR | --no-dense] [--split test]")
  process.exit(2)
}
const split = argument("split") ?? "test"
const modelDir = argument("model-dir")
const noDense = argument("no-dense") !== undefined || modelDir === undefined
const limitQueries = Number(argument("limit-queries") ?? Infinity)
const rerankModelDir = argument("rerank-model-dir")

const corpus: Array<{ _id: string; title?: string; text: string }> = readJsonl(Path.join(datasetDir, "corpus.jsonl"))
const queries = new Map<string, string>(
  readJsonl(Path.join(datasetDir, "queries.jsonl")).map((q: { _id: string; text: string }) => [q._id, q.text])
)
const qrels = new Map<string, Map<string, number>>()
for (const line of Fs.readFileSync(Path.join(datasetDir, "qrels", `${split}.tsv`), "utf8").split("\n").slice(1)) {
  const [queryId, docId, score] = line.split("\t")
  if (queryId === undefined || docId === undefined || score === undefined || Number(score) <= 0) continue
  if (!qrels.has(queryId)) qrels.set(queryId, new Map())
  qrels.get(queryId)!.set(docId, Number(score))
}
const evaluated = [...qrels.keys()].filter((id) => queries.has(id)).slice(0, limitQueries)


const program = Effect.gen(function*() {
  const instance = yield* startInstance({
    embedModelDir: noDense ? Option.none() : Option.some(Path.resolve(modelDir!)),
    embedModel: noDense ? "none" : "local",
    rerankModelDir: rerankModelDir === undefined ? Option.none() : Option.some(Path.resolve(rerankModelDir))
  })
  const { url, retriever } = instance
  const started = performance.now()
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "evaluator" } }))
  const token: string = session.access_token
  const owner = session.user.id as UserId
  const source = yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: Path.basename(datasetDir), connector_kind: "file_upload", config: {} } })
  )
  yield* Effect.promise(() =>
    pool(corpus, 8, async (doc) => {
      const text = [doc.title, doc.text].filter((part) => part !== undefined && part.trim() !== "").join("\n\n")
      await call(url, `/api/v1/sources/${source.id}/documents/ingest`, { token, json: { title: doc._id, text } })
    })
  )
  const indexed = yield* Effect.promise(() => waitForSource(url, token, source.id, corpus.length))
  const ingestSeconds = (performance.now() - started) / 1000
  // Fresh planner statistics, as autovacuum (PostgreSQL) or the periodic vacuum (PGlite) would soon leave them.
  yield* instance.sql`ANALYZE`.pipe(Effect.orDie)
  const dense = yield* retriever.denseStatus
  console.log(
    `ingested ${indexed.document_count} documents as ${indexed.chunk_count} chunks in ${ingestSeconds.toFixed(1)} s; ` +
      `dense: ${dense.reason === null ? "on" : `off (${dense.reason})`}`
  )

  /** HNSW (as search runs it) against an exact scan of the same vectors: the index's recall@10. */
  const indexRecall = Effect.gen(function*() {
    if (Option.isNone(dense.model)) return null
    const { sql } = instance
    const table = dense.model.value.table
    const recalls: Array<number> = []
    for (const queryId of evaluated) {
      const response = yield* retriever.search({
        owner, query: queries.get(queryId)!, strategy: "vector", topK: 10, sourceIds: [source.id], saveExploration: false
      }).pipe(Effect.orDie)
      const [vector] = yield* instance.embed(queries.get(queryId)!)
      const exact = yield* sql<{ id: string }>`
        SELECT v.chunk_id AS id FROM ${sql(table)} v
        ORDER BY (v.embedding <=> ${`[${vector!.join(",")}]`}::vector) + 0
        LIMIT 10`.pipe(Effect.orDie)
      const truth = new Set(exact.map((row) => row.id))
      recalls.push(response.results.filter((r) => truth.has(r.chunk_id)).length / Math.max(truth.size, 1))
    }
    return mean(recalls)
  })

  const strategies = (argument("strategies")?.split(",") as Array<Strategy> | undefined) ??
    (dense.reason === null ? ["lexical", "vector", "multi"] : ["lexical", "multi"])
  const runs = strategies.flatMap((strategy): Array<{ name: string; strategy: Strategy; rerank: boolean; graph: boolean }> =>
    strategy !== "multi"
      ? [{ name: strategy, strategy, rerank: false, graph: true }]
      : [
        { name: "multi", strategy, rerank: false, graph: true },
        { name: "multi-graph", strategy, rerank: false, graph: false },
        ...(rerankModelDir === undefined ? [] : [{ name: "multi+rerank", strategy, rerank: true, graph: true }])
      ]
  )
  const report: Record<string, unknown> = {}
  for (const { name, strategy, rerank, graph } of runs) {
    const ndcg10: Array<number> = []
    const recall10: Array<number> = []
    const recall100: Array<number> = []
    const mrr10: Array<number> = []
    const latencies: Array<number> = []
    for (const queryId of evaluated) {
      const relevant = qrels.get(queryId)!
      const t0 = performance.now()
      const response = yield* retriever.search({
        owner,
        query: queries.get(queryId)!,
        strategy,
        topK: 100,
        sourceIds: [source.id],
        saveExploration: false,
        rerank,
        graph
      }).pipe(Effect.orDie)
      latencies.push(performance.now() - t0)
      const ranked = [...new Set(response.results.map((result) => result.document_title))]
      ndcg10.push(ndcgAt(ranked, relevant, 10))
      recall10.push(recallAt(ranked, relevant, 10))
      recall100.push(recallAt(ranked, relevant, 100))
      mrr10.push(mrrAt(ranked, relevant, 10))
    }
    report[name] = {
      ndcg_at_10: mean(ndcg10),
      recall_at_10: mean(recall10),
      recall_at_100: mean(recall100),
      mrr_at_10: mean(mrr10),
      latency_ms_p50: percentile(latencies, 50),
      latency_ms_p95: percentile(latencies, 95)
    }
  }
  /**
   * Over real HTTP, top 10 as a client asks: per query a GET /system/health (the no-op), a lexical and a multi
   * search, interleaved so that load changes during the run touch all three alike.
   */
  const http = yield* Effect.promise(async () => {
    const times = { health: [] as Array<number>, lexical: [] as Array<number>, multi: [] as Array<number> }
    for (const queryId of evaluated) {
      const query = queries.get(queryId)!
      times.health.push(await timed(() => fetch(`${url}/api/v1/system/health`).then((response) => response.arrayBuffer())))
      for (const strategy of ["lexical", "multi"] as const) {
        times[strategy].push(await timed(() =>
          call(url, "/api/v1/search", { token, json: { query, strategy, top_k: 10, source_ids: [source.id] } })
        ))
      }
    }
    return Object.fromEntries(Object.entries(times).map(([name, values]) => [name, {
      p50: percentile(values, 50),
      p95: percentile(values, 95)
    }]))
  })
  const result = {
    dataset: Path.basename(Path.resolve(datasetDir)),
    split,
    queries: evaluated.length,
    documents: indexed.document_count,
    chunks: indexed.chunk_count,
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    embedding_model: noDense ? null : Path.resolve(modelDir!),
    dense: dense.reason === null ? "on" : `off: ${dense.reason}`,
    bm25: { k1: instance.settings.bm25K1, b: instance.settings.bm25B },
    fusion: {
      k: instance.settings.fusionK,
      vector: instance.settings.fusionWeightVector,
      lexical: instance.settings.fusionWeightLexical,
      graph: instance.settings.fusionWeightGraph
    },
    extractor: instance.settings.extractor,
    rerank_model: rerankModelDir === undefined ? null : Path.resolve(rerankModelDir),
    rerank_candidates: instance.settings.rerankCandidates,
    hnsw_recall_at_10_vs_exact: yield* indexRecall,
    ingest_seconds: ingestSeconds,
    machine: machine(),
    date: new Date().toISOString(),
    strategies: report,
    http_top_10_ms: http
  }
  console.log(`\n${result.dataset} (${split}, ${evaluated.length} queries, ${result.engine}, dense ${result.dense})`)
  console.log("strategy      nDCG@10  R@10    R@100   MRR@10  p50 ms  p95 ms")
  for (const [strategy, m] of Object.entries(report) as Array<[string, Record<string, number>]>) {
    console.log(
      `${strategy.padEnd(13)} ${m.ndcg_at_10!.toFixed(4)}  ${m.recall_at_10!.toFixed(4)}  ${m.recall_at_100!.toFixed(4)}  ` +
        `${m.mrr_at_10!.toFixed(4)}  ${m.latency_ms_p50!.toFixed(1).padStart(6)}  ${m.latency_ms_p95!.toFixed(1).padStart(6)}`
    )
  }
  const [health, lexical, multi] = [http.health!.p50, http.lexical!.p50, http.multi!.p50]
  console.log(
    `\nHTTP, top 10, p50: GET /system/health ${health.toFixed(1)} ms; lexical ${lexical.toFixed(1)} ms ` +
      `(${(lexical / health).toFixed(1)}x health); multi ${multi.toFixed(1)} ms (${(multi / health).toFixed(1)}x health, ` +
      `${(multi / lexical).toFixed(2)}x lexical)`
  )
  const outDir = Path.resolve(import.meta.dirname, "../bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  const file = Path.join(outDir, `eval-${result.dataset}-${result.engine}-${noDense ? "lexical" : "dense"}${rerankModelDir === undefined ? "" : "-rerank"}.json`)
  Fs.writeFileSync(file, JSON.stringify(result, null, 2) + "\n")
  console.log(`\nwritten to ${Path.relative(process.cwd(), file)}`)
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
