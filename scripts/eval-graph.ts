/**
 * Does the graph list help? Multi-hop and temporal questions over a small hand-written corpus
 * (bench/fixtures/graph-eval.json): every document goes through the real pipeline (extraction included), every
 * question through the real search service as multi with the graph list and without it, and lexical alone.
 * Prints nDCG@10, recall@3 and MRR@10 per question type; writes bench/results/eval-graph.json.
 *   npm run eval:graph [-- --fixture FILE] [--verbose]
 */
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { UserId } from "../src/domain/User.ts"
import { argument, call, machine, startInstance, waitForSource } from "./lib/instance.ts"
import { mean, mrrAt, ndcgAt, recallAt } from "./lib/metrics.ts"

const root = Path.resolve(import.meta.dirname, "..")
const fixture = JSON.parse(
  Fs.readFileSync(argument("fixture") ?? Path.join(root, "bench/fixtures/graph-eval.json"), "utf8")
) as {
  documents: Array<{ title: string; text: string }>
  queries: Array<{ query: string; relevant: Array<string>; type: string }>
}

const runs = [
  { name: "lexical", strategy: "lexical" as const, graph: false },
  { name: "multi without graph", strategy: "multi" as const, graph: false },
  { name: "multi with graph", strategy: "multi" as const, graph: true }
]

const program = Effect.gen(function*() {
  const instance = yield* startInstance({ embedModelDir: Option.none(), embedModel: "none" })
  const { url, retriever, sql } = instance
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "graph-evaluator" } }))
  const token: string = session.access_token
  const owner = session.user.id as UserId
  const source = yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "graph-eval", connector_kind: "file_upload", config: {} } })
  )
  for (const doc of fixture.documents) {
    yield* Effect.promise(() =>
      call(url, `/api/v1/sources/${source.id}/documents/ingest`, { token, json: { title: doc.title, text: doc.text } })
    )
  }
  yield* Effect.promise(() => waitForSource(url, token, source.id, fixture.documents.length))
  const [counts] = yield* sql<{ entities: number; events: number }>`
    SELECT (SELECT count(*)::int FROM entities) AS entities, (SELECT count(*)::int FROM events) AS events`.pipe(
    Effect.orDie
  )
  console.log(`${fixture.documents.length} documents: ${counts!.entities} entities, ${counts!.events} events`)

  const report: Record<string, Record<string, Record<string, number>>> = {}
  for (const run of runs) {
    const byType = new Map<string, { ndcg: Array<number>; recall: Array<number>; mrr: Array<number> }>()
    for (const item of fixture.queries) {
      const response = yield* retriever.search({
        owner,
        query: item.query,
        strategy: run.strategy,
        topK: 10,
        sourceIds: [source.id],
        saveExploration: false,
        graph: run.graph
      }).pipe(Effect.orDie)
      const ranked = [...new Set(response.results.map((result) => result.document_title))]
      const relevant = new Map(item.relevant.map((title) => [title, 1]))
      if (argument("verbose") !== undefined) console.log(`${run.name} | ${item.query} → ${ranked.slice(0, 3).join(", ")}`)
      for (const type of [item.type, "all"]) {
        const bucket = byType.get(type) ?? { ndcg: [], recall: [], mrr: [] }
        bucket.ndcg.push(ndcgAt(ranked, relevant, 10))
        bucket.recall.push(recallAt(ranked, relevant, 3))
        bucket.mrr.push(mrrAt(ranked, relevant, 10))
        byType.set(type, bucket)
      }
    }
    report[run.name] = Object.fromEntries(
      [...byType].map(([type, m]) => [type, { ndcg_at_10: mean(m.ndcg), recall_at_3: mean(m.recall), mrr_at_10: mean(m.mrr) }])
    )
  }
  console.log("\nrun                   type       nDCG@10  R@3     MRR@10")
  for (const [name, types] of Object.entries(report)) {
    for (const [type, m] of Object.entries(types)) {
      console.log(
        `${name.padEnd(21)} ${type.padEnd(10)} ${m.ndcg_at_10!.toFixed(4)}  ${m.recall_at_3!.toFixed(4)}  ${m.mrr_at_10!.toFixed(4)}`
      )
    }
  }
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  const result = {
    fixture: "bench/fixtures/graph-eval.json",
    documents: fixture.documents.length,
    queries: fixture.queries.length,
    entities: counts!.entities,
    events: counts!.events,
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    extractor: instance.settings.extractor,
    fusion: { k: instance.settings.fusionK, lexical: instance.settings.fusionWeightLexical, graph: instance.settings.fusionWeightGraph },
    machine: machine(),
    date: new Date().toISOString(),
    runs: report
  }
  Fs.writeFileSync(Path.join(outDir, "eval-graph.json"), JSON.stringify(result, null, 2) + "\n")
  console.log("\nwritten to bench/results/eval-graph.json")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
