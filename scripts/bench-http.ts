/**
 * `npm run bench:http -- [--dataset ../shared/datasets/scifact] [--data-dir DIR] [--queries 300] [--rounds 2]`:
 * HTTP search against an HTTP no-op at a real corpus's size (issue 17, item 3). The service runs as `npm start`
 * runs it, as a child process on the embedded database (on PostgreSQL with DATABASE_URL), dense retrieval and
 * extraction off; the corpus of a BEIR dataset is ingested through the API into DIR (default: a folder in the
 * system's temporary directory) once, and reused by later runs: compare builds on one corpus. Then, for each of the
 * split's first queries, one after another: GET /system/health (the no-op), a lexical and a multi search at top 10 —
 * one warm-up round and `--rounds` measured, each request timed from its sending to the last byte of its response
 * (the client's JSON work outside); p50 of each and the ratios.
 * With CPU_PROFILE_DIR set the service writes V8 CPU profiles of its threads there.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, untilReady } from "./lib/childService.ts"
import { argument, call, percentile, pool, readJsonl, timed, waitForSource } from "./lib/instance.ts"
import { startCommand } from "./lib/startCommand.ts"

const root = Path.resolve(import.meta.dirname, "..")
const dataset = Path.resolve(argument("dataset") ?? Path.join(root, "../shared/datasets/scifact"))
const dataDir = Path.resolve(
  argument("data-dir") ?? Path.join(Os.tmpdir(), `engram-bench-http-${Path.basename(dataset)}`)
)
const queryCount = Number(argument("queries") ?? 300)
const rounds = Number(argument("rounds") ?? 2)
const profileDir = process.env.CPU_PROFILE_DIR

const { env: startEnv, args } = startCommand(root)
const port = await freePort()
const child = spawn(process.execPath, [
  ...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]),
  ...args
], {
  cwd: root,
  stdio: ["ignore", "ignore", "inherit"],
  env: {
    ...process.env,
    ...startEnv,
    ENGRAM_PORT: String(port),
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_EMBED_MODEL: "none",
    ENGRAM_EXTRACTOR: "off",
    ENGRAM_LOG_LEVEL: "warn"
  }
})
const exited = new Promise((resolve) => child.on("exit", resolve))
try {
  const url = `http://127.0.0.1:${port}`
  await untilReady(child, port, "the service")
  const token: string = (await call(url, "/api/v1/auth/login", { json: { name: "bench-http" } })).access_token
  const name = Path.basename(dataset)
  let source = (await call(url, "/api/v1/sources", { token })).items.find((s: { name: string }) => s.name === name)
  if (source === undefined) {
    const corpus = readJsonl(Path.join(dataset, "corpus.jsonl"))
    source = await call(url, "/api/v1/sources", { token, json: { name, connector_kind: "file_upload", config: {} } })
    const started = performance.now()
    await pool(corpus, 8, async (doc: { _id: string; title?: string; text: string }) => {
      const text = [doc.title, doc.text].filter((part) => part !== undefined && part.trim() !== "").join("\n\n")
      await call(url, `/api/v1/sources/${source.id}/documents/ingest`, { token, json: { title: doc._id, text } })
    })
    await waitForSource(url, token, source.id, corpus.length)
    console.log(`ingested ${corpus.length} documents in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  }
  const judged = new Set(
    Fs.readFileSync(Path.join(dataset, "qrels/test.tsv"), "utf8").split("\n").slice(1).map((line) => line.split("\t")[0])
  )
  const queries: Array<string> = readJsonl(Path.join(dataset, "queries.jsonl"))
    .filter((query: { _id: string }) => judged.has(query._id))
    .slice(0, queryCount)
    .map((query: { text: string }) => query.text)
  // Each request is timed alike, to the last byte of its response: the request's body is made before and the
  // response is checked after (200, and a search's results).
  const exchange = async (path: string, body?: string) => {
    const init = body === undefined
      ? {}
      : { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body }
    let status = 0
    let text = ""
    const took = await timed(async () => {
      const response = await fetch(url + path, init)
      status = response.status
      text = await response.text()
    })
    if (status !== 200) throw new Error(`${path}: ${status} ${text}`)
    if (body !== undefined && !Array.isArray(JSON.parse(text).results)) throw new Error(`${path}: answered ${text}`)
    return took
  }
  const search = (query: string, strategy: string) =>
    exchange("/api/v1/search", JSON.stringify({ query, strategy, top_k: 10, source_ids: [source.id] }))
  const health: Array<number> = []
  const lexical: Array<number> = []
  const multi: Array<number> = []
  for (let round = 0; round <= rounds; round++) {
    for (const query of queries) {
      const h = await exchange("/api/v1/system/health")
      const l = await search(query, "lexical")
      const m = await search(query, "multi")
      if (round === 0) continue
      health.push(h)
      lexical.push(l)
      multi.push(m)
    }
  }
  const [h, l, m] = [health, lexical, multi].map((values) => percentile(values, 50))
  console.log(
    `bench:http ${name}, ${queries.length} queries × ${rounds} rounds, p50: health ${h!.toFixed(2)} ms, ` +
      `lexical ${l!.toFixed(2)} ms (${(l! / h!).toFixed(1)}× health), multi ${m!.toFixed(2)} ms ` +
      `(${(m! / h!).toFixed(1)}× health, ${(m! / l!).toFixed(2)}× lexical)`
  )
} finally {
  child.kill("SIGTERM")
  await exited
}
