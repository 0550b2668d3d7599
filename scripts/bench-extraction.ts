/**
 * What rule extraction costs ingestion: a BEIR corpus (corpus.jsonl) ingested through the real pipeline (HTTP,
 * workers, no embedding model) with `ENGRAM_EXTRACTOR=off`, then with the rules, back to back in one run, each
 * into a fresh database, and the ratio of the two times; for each, the time spent in each pipeline stage summed over
 * the documents (the instance's stage histogram), which shows where the difference goes, and this process's CPU time
 * (the service runs in it: its main and ingestion threads; the database server's is not counted). `--runs N` repeats the
 * pair N times, alternating, and reports the median of each mode and of the pairs' ratios (one pair's ratio moves
 * by a fifth between runs on a shared 2-core machine).
 *   npm run bench:extraction -- --dataset ../shared/datasets/scifact [--docs N] [--only off|rules] [--runs N]
 * With DATABASE_URL (a PostgreSQL server's database the user may create databases from), each run gets its own
 * throwaway database on that server; without it, each run gets a fresh PGlite. Results go to
 * bench/results/extraction-<dataset>-<engine>.json.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { throwawayDatabase } from "./lib/admin.ts"
import { argument, call, machine, pool, startInstance, waitForSource, withDatabase } from "./lib/instance.ts"

const datasetDir = argument("dataset")
if (datasetDir === undefined) {
  console.error("usage: npm run bench:extraction -- --dataset <BEIR folder> [--docs N] [--only off|rules]")
  process.exit(2)
}
const limit = Number(argument("docs") ?? Infinity)
const only = argument("only")
const runs = Math.max(1, Number(argument("runs") ?? 1))
const serverUrl = process.env.DATABASE_URL

const corpus: Array<{ _id: string; title?: string; text: string }> = Fs.readFileSync(
  Path.join(datasetDir, "corpus.jsonl"),
  "utf8"
).split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line)).slice(0, limit)

/** A throwaway database on the DATABASE_URL server for the scope, or undefined (PGlite). */
const freshDatabase = serverUrl === undefined
  ? Effect.succeed(undefined)
  : Effect.map(throwawayDatabase(serverUrl, "engram_bench"), (database) => database.url)

const engine = serverUrl === undefined ? "pglite" : "postgres"
const loadBefore = Os.loadavg()
type Timed = Partial<
  Record<"off" | "rules", { seconds: number; cpuSeconds: number; chunks: number; stages: Record<string, number> }>
>
/** One entry per pair of runs; the last is the one in progress. */
const pairs: Array<Timed> = []

const median = (values: ReadonlyArray<number>) => {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
const ratioOf = (pair: Timed) =>
  pair.off === undefined || pair.rules === undefined ? null : pair.rules.seconds / pair.off.seconds
/** Each pair's figure, where the pair has it. */
const secondsOf = (mode: "off" | "rules") => pairs.flatMap((pair) => pair[mode]?.seconds ?? [])
const ratios = () => pairs.flatMap((pair) => ratioOf(pair) ?? [])

/** Seconds spent in each pipeline stage, summed over the jobs (the instance's /metrics histogram sums). */
const stageSeconds = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const sums: Record<string, number> = {}
  for (const match of text.matchAll(/^engram_stage_duration_seconds_sum\{([^}]*)\} ([0-9.e+-]+)$/gm)) {
    const stage = /stage="([^"]+)"/.exec(match[1]!)?.[1]
    if (stage !== undefined) sums[stage] = (sums[stage] ?? 0) + Number(match[2])
  }
  return sums
}

/** Written after each run, before its instance closes: the figures are on disk even if a close is slow. */
const writeResult = () => {
  const timed = pairs[pairs.length - 1]!
  const result = {
    dataset: Path.basename(Path.resolve(datasetDir)),
    engine,
    documents: corpus.length,
    // Medians over the pairs run so far (the one run's figures when there is one).
    off_seconds: median(secondsOf("off")),
    rules_seconds: median(secondsOf("rules")),
    ratio: median(ratios()),
    runs: pairs.map((pair) => ({
      off_seconds: pair.off?.seconds ?? null,
      rules_seconds: pair.rules?.seconds ?? null,
      ratio: ratioOf(pair)
    })),
    // The last pair's. CPU: this process's, all its threads (the service's main and ingestion threads, V8's
    // helpers, and the benchmark's client); the database server's is not in it.
    off_cpu_seconds: timed.off?.cpuSeconds ?? null,
    rules_cpu_seconds: timed.rules?.cpuSeconds ?? null,
    off_stage_seconds: timed.off?.stages ?? null,
    rules_stage_seconds: timed.rules?.stages ?? null,
    chunks: timed.rules?.chunks ?? timed.off?.chunks ?? null,
    load_average_before: loadBefore,
    load_average_after: Os.loadavg(),
    machine: machine(),
    date: new Date().toISOString()
  }
  const outDir = Path.resolve(import.meta.dirname, "../bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  Fs.writeFileSync(Path.join(outDir, `extraction-${result.dataset}-${engine}.json`), JSON.stringify(result, null, 2) + "\n")
  return ratioOf(timed)
}

const ingest = (extractor: "off" | "rules") =>
  Effect.scoped(Effect.gen(function*() {
    const database = yield* freshDatabase
    const instance = yield* startInstance({ ...withDatabase(database), embedModel: "none", extractor, metrics: true })
    const { url } = instance
    const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
    const token: string = session.access_token
    const stagesBefore = yield* Effect.promise(() => stageSeconds(url))
    const started = performance.now()
    const cpuBefore = process.cpuUsage()
    const source = yield* Effect.promise(() =>
      call(url, "/api/v1/sources", { token, json: { name: "corpus", connector_kind: "file_upload", config: {} } })
    )
    yield* Effect.promise(() =>
      pool(corpus, 8, async (doc) => {
        const text = [doc.title, doc.text].filter((part) => part !== undefined && part.trim() !== "").join("\n\n")
        await call(url, `/api/v1/sources/${source.id}/documents/ingest`, { token, json: { title: doc._id, text } })
      })
    )
    const done = yield* Effect.promise(() => waitForSource(url, token, source.id, corpus.length))
    const seconds = (performance.now() - started) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    const cpuSeconds = (cpu.user + cpu.system) / 1e6
    console.log(
      `${extractor}: ${done.document_count} documents, ${done.chunk_count} chunks in ${seconds.toFixed(1)} s ` +
        `(this process's CPU ${cpuSeconds.toFixed(1)} s, all threads)`
    )
    // The stage histograms live as long as the process, across instances: this run's share is the difference.
    const stagesAfter = yield* Effect.promise(() => stageSeconds(url))
    const stages = Object.fromEntries(
      Object.entries(stagesAfter).map(([stage, total]) => [stage, total - (stagesBefore[stage] ?? 0)])
    )
    console.log(`  time in each stage, summed over documents: ${
      Object.entries(stages).map(([stage, total]) => `${stage} ${total.toFixed(1)} s`).join(", ")
    }`)
    pairs[pairs.length - 1]![extractor] = { seconds, cpuSeconds, chunks: done.chunk_count, stages }
    const ratio = writeResult()
    if (ratio !== null) console.log(`rules / off: ${ratio.toFixed(2)}`)
  }))

const program = Effect.gen(function*() {
  for (let run = 1; run <= runs; run++) {
    pairs.push({})
    if (runs > 1) console.log(`pair ${run} of ${runs}`)
    if (only !== "rules") yield* ingest("off")
    if (only !== "off") yield* ingest("rules")
  }
  if (runs > 1) {
    const show = (values: ReadonlyArray<number>, digits: number) =>
      `${values.map((v) => v.toFixed(digits)).join(", ")} (median ${median(values)?.toFixed(digits) ?? "-"})`
    console.log(`off: ${show(secondsOf("off"), 1)} s`)
    console.log(`rules: ${show(secondsOf("rules"), 1)} s`)
    if (ratios().length > 0) console.log(`rules / off per pair: ${show(ratios(), 2)}`)
  }
})

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
