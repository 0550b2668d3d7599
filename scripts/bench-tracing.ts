/**
 * What exporting traces costs: two Engram processes (`node src/main.ts`, PGlite, the same settings) — one exporting
 * over OTLP/HTTP to a receiver in this script that accepts and discards, one with no OTEL_* at all — ingest the same
 * SciFact abstracts in alternating rounds and answer the same SciFact queries, alternating which goes first, so that
 * machine load drifts over both alike. Prints ingest throughput and search p50/p95 of each and the overhead.
 *   npm run bench:tracing -- [--docs 300] [--rounds 10] [--queries 600] [--strategy multi|lexical] [--model-dir DIR]
 * --model-dir: the embedding model (default: the tiny random BERT fixture, int8, as bench:ingest uses).
 * The corpus is read from ../shared/datasets/scifact (ENGRAM_SHARED_DIR overrides ../shared), never copied.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { argument, call, machine, percentile, pool } from "./lib/instance.ts"

const root = Path.resolve(import.meta.dirname, "..")
const sharedDir = process.env.ENGRAM_SHARED_DIR ?? Path.join(root, "../shared")
const docCount = Number(argument("docs") ?? 300)
const rounds = Number(argument("rounds") ?? 10)
const queryCount = Number(argument("queries") ?? 600)
const strategy = argument("strategy") ?? "multi"
const modelDir = Path.resolve(argument("model-dir") ?? Path.join(sharedDir, "models/_fixtures/tiny-random-bert"))
const scratchDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-bench-tracing-"))

const jsonLines = (file: string, limit: number) =>
  Fs.readFileSync(Path.join(sharedDir, "datasets/scifact", file), "utf8").split("\n").filter((line) => line !== "")
    .slice(0, limit).map((line) => JSON.parse(line) as { _id: string; title?: string; text: string })

/** An OTLP/HTTP trace receiver that reads every export, counts its spans and discards it. */
const startReceiver = () =>
  new Promise<{ url: string; exports: () => { requests: number; bytes: number; spans: number }; close: () => void }>(
    (resolve) => {
      let requests = 0
      let bytes = 0
      let spans = 0
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const body = Buffer.concat(chunks)
          requests++
          bytes += body.length
          spans += body.toString("utf8").split('"spanId"').length - 1
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resolve({
          url: `http://127.0.0.1:${port}`,
          exports: () => ({ requests, bytes, spans }),
          close: () => server.close()
        })
      })
    }
  )

interface Service {
  readonly name: string
  readonly url: string
  readonly token: string
  readonly sourceId: string
  readonly stop: () => Promise<void>
}

/** `node src/main.ts` with the bench settings and `extra`; no OTEL_* variable is inherited. */
const startService = (name: string, extra: Record<string, string>) =>
  new Promise<{ url: string; stop: () => Promise<void> }>((resolve, reject) => {
    const inherited = Object.fromEntries(
      Object.entries(process.env)
        .filter(([key]) => !key.startsWith("OTEL_") && !key.startsWith("ENGRAM_") && key !== "DATABASE_URL")
    )
    const child = spawn(process.execPath, ["src/main.ts"], {
      cwd: root,
      env: {
        ...inherited,
        ENGRAM_DATA_DIR: Path.join(scratchDir, name),
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_EMBED_MODEL_DIR: modelDir,
        ENGRAM_EMBED_DTYPE: "q8",
        ENGRAM_LOG_LEVEL: "info",
        ...extra
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const exited = new Promise<void>((done) => child.on("exit", () => done()))
    let output = ""
    child.stdout!.on("data", (chunk) => {
      output += chunk
      const match = output.match(/"address":"(http:\/\/[^"]+)"/)
      if (match) {
        output = ""
        child.stdout!.removeAllListeners("data")
        child.stdout!.resume()
        resolve({
          url: match[1]!,
          stop: () => {
            if (child.exitCode === null) child.kill("SIGTERM")
            return exited
          }
        })
      }
    })
    child.on("exit", (code) => reject(new Error(`${name} exited (${code})`)))
  })

const ready = async (name: string, extra: Record<string, string>): Promise<Service> => {
  const { url, stop } = await startService(name, extra)
  for (;;) {
    const status = await call(url, "/api/v1/system/ready").catch(() => ({ status: "starting" }))
    if (status.status === "ready") break
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  const session = await call(url, "/api/v1/auth/login", { json: { name: "bench" } })
  const source = await call(url, "/api/v1/sources", {
    token: session.access_token,
    json: { name: "scifact", connector_kind: "file_upload", config: {} }
  })
  return { name, url, token: session.access_token, sourceId: source.id, stop }
}

/** Seconds from the first upload of `docs` until the source holds `total` documents, all processed. */
const ingestRound = async (service: Service, docs: ReadonlyArray<{ title?: string; text: string }>, total: number) => {
  const started = performance.now()
  await pool(docs, 4, async (doc) => {
    await call(service.url, `/api/v1/sources/${service.sourceId}/documents/ingest`, {
      token: service.token,
      json: { title: doc.title ?? "untitled", text: doc.text }
    })
  })
  for (;;) {
    const source = await call(service.url, `/api/v1/sources/${service.sourceId}`, { token: service.token })
    if (source.status === "ready" && source.document_count >= total) {
      return { seconds: (performance.now() - started) / 1000, chunks: source.chunk_count as number }
    }
    // Each poll is a traced request too: polled often, it would be the bench's own cost, not ingestion's.
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

const searchOnce = async (service: Service, query: string) => {
  const started = performance.now()
  await call(service.url, "/api/v1/search", { token: service.token, json: { query, strategy, top_k: 10 } })
  return performance.now() - started
}

const main = async () => {
  const corpus = jsonLines("corpus.jsonl", docCount)
  const queries = jsonLines("queries.jsonl", queryCount).map((query) => query.text)
  const receiver = await startReceiver()
  const load = [Os.loadavg()[0]!]
  const traced = await ready("traced", { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
  const plain = await ready("plain", {})
  try {
    const ingest = { traced: { seconds: 0, chunks: 0 }, plain: { seconds: 0, chunks: 0 } }
    const perRound = Math.ceil(corpus.length / rounds)
    for (let round = 0; round < rounds; round++) {
      const docs = corpus.slice(round * perRound, (round + 1) * perRound)
      const total = Math.min(corpus.length, (round + 1) * perRound)
      for (const service of round % 2 === 0 ? [traced, plain] : [plain, traced]) {
        const { seconds, chunks } = await ingestRound(service, docs, total)
        const side = ingest[service.name as "traced" | "plain"]
        side.seconds += seconds
        side.chunks = chunks
        console.log(`round ${round + 1}/${rounds} ${service.name}: ${docs.length} documents in ${seconds.toFixed(1)} s`)
      }
    }
    // Warm both, then alternate which answers first so that neither gains from the other's turn.
    for (const query of queries.slice(0, 20)) {
      await searchOnce(traced, query)
      await searchOnce(plain, query)
    }
    const latency = { traced: [] as Array<number>, plain: [] as Array<number> }
    for (const [i, query] of queries.entries()) {
      for (const service of i % 2 === 0 ? [traced, plain] : [plain, traced]) {
        latency[service.name as "traced" | "plain"].push(await searchOnce(service, query))
      }
    }
    load.push(Os.loadavg()[0]!)
    await traced.stop() // flushes what the exporter still holds
    const summary = (side: "traced" | "plain") => ({
      ingest_seconds: ingest[side].seconds,
      chunks: ingest[side].chunks,
      documents_per_second: corpus.length / ingest[side].seconds,
      search_ms: { p50: percentile(latency[side], 50), p95: percentile(latency[side], 95) }
    })
    const on = summary("traced")
    const off = summary("plain")
    const result = {
      engine: "pglite",
      model: `${Path.basename(modelDir)} (q8)`,
      documents: corpus.length,
      rounds,
      queries: queries.length,
      strategy,
      exporter_on: on,
      exporter_off: off,
      overhead: {
        ingest_throughput: 1 - on.documents_per_second / off.documents_per_second,
        search_p50: on.search_ms.p50 / off.search_ms.p50 - 1,
        search_p95: on.search_ms.p95 / off.search_ms.p95 - 1,
        // The same query on both, back to back: the median difference is the least disturbed by load swings.
        search_paired_median_ms: percentile(latency.traced.map((ms, i) => ms - latency.plain[i]!), 50)
      },
      exported: receiver.exports(),
      load_average_1m: { start: load[0], end: load[1] },
      machine: machine(),
      date: new Date().toISOString()
    }
    const percent = (ratio: number) => `${ratio >= 0 ? "+" : ""}${(ratio * 100).toFixed(1)} %`
    for (const [label, side] of [["exporter on ", on], ["exporter off", off]] as const) {
      console.log(
        `${label}: ingest ${side.documents_per_second.toFixed(1)} documents/s (${side.chunks} chunks), ` +
          `search p50 ${side.search_ms.p50.toFixed(1)} ms, p95 ${side.search_ms.p95.toFixed(1)} ms`
      )
    }
    console.log(
      `overhead: ingest throughput ${percent(result.overhead.ingest_throughput)}, ` +
        `search p50 ${percent(result.overhead.search_p50)}, p95 ${percent(result.overhead.search_p95)}, ` +
        `median paired difference ${result.overhead.search_paired_median_ms.toFixed(2)} ms`
    )
    console.log(`exported: ${result.exported.spans} spans in ${result.exported.requests} requests`)
    const outDir = Path.join(root, "bench/results")
    Fs.mkdirSync(outDir, { recursive: true })
    Fs.writeFileSync(Path.join(outDir, "tracing-pglite.json"), JSON.stringify(result, null, 2) + "\n")
  } finally {
    await Promise.all([traced.stop(), plain.stop()])
    receiver.close()
    Fs.rmSync(scratchDir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
