/**
 * Ingest benchmark: chunks/second through the whole pipeline against the raw throughput of the same embedding
 * model on the same machine, in one run, and the service's peak RSS while ingesting.
 *   npm run bench:ingest -- [--chunks 100000] [--model-dir DIR] [--docs-chunks 200]   (DATABASE_URL for PostgreSQL)
 * The service runs as its own process (`node src/main.ts`); peak RSS is its VmHWM from /proc.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { argument, call, machine, pool, waitForSource } from "./lib/instance.ts"
import { syntheticDocument } from "./lib/synthetic.ts"

const root = Path.resolve(import.meta.dirname, "..")
const targetChunks = Number(argument("chunks") ?? 100_000)
const chunksPerDocument = Number(argument("docs-chunks") ?? 200)
const modelDir = Path.resolve(argument("model-dir") ?? Path.join(root, "../shared/models/_fixtures/tiny-random-bert"))
const dtype = "q8"
const batchSize = 32

const documents = Math.ceil(targetChunks / chunksPerDocument)
const texts = Array.from({ length: documents }, (_, i) => syntheticDocument(i, chunksPerDocument))

/** The raw model: the same files, dtype, pooling and batch size as the service's embedder. */
const rawThroughput = async (passages: ReadonlyArray<string>) => {
  const { env, pipeline } = await import("@huggingface/transformers")
  env.allowRemoteModels = false
  env.localModelPath = Path.dirname(modelDir) + "/"
  const extractor = await pipeline("feature-extraction", Path.basename(modelDir), { dtype })
  await extractor(passages.slice(0, batchSize), { pooling: "mean", normalize: true })
  const started = performance.now()
  for (let i = 0; i < passages.length; i += batchSize) {
    await extractor(passages.slice(i, i + batchSize), { pooling: "mean", normalize: true })
  }
  return passages.length / ((performance.now() - started) / 1000)
}

const startService = (dataDir: string) =>
  new Promise<{ url: string; pid: number; stop: () => Promise<void> }>((resolve, reject) => {
    const child = spawn(process.execPath, ["src/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        ENGRAM_DATA_DIR: dataDir,
        ENGRAM_HOST: "127.0.0.1",
        ENGRAM_PORT: "0",
        ENGRAM_EMBED_MODEL_DIR: modelDir,
        ENGRAM_EMBED_DTYPE: dtype,
        ENGRAM_LOG_LEVEL: "info"
      },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let output = ""
    child.stdout!.on("data", (chunk) => {
      output += chunk
      const match = output.match(/"address":"(http:\/\/[^"]+)"/)
      if (match) {
        resolve({
          url: match[1]!,
          pid: child.pid!,
          stop: () => new Promise((done) => {
            child.on("exit", () => done())
            child.kill("SIGTERM")
          })
        })
      }
    })
    child.on("exit", (code) => reject(new Error(`the service exited (${code})`)))
  })

const peakRssMiB = (pid: number) => {
  const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(status.match(/VmHWM:\s+(\d+) kB/)?.[1] ?? 0) / 1024
}

const main = async () => {
  const sample = texts.slice(0, Math.max(1, Math.ceil(4000 / chunksPerDocument)))
    .flatMap((text) => text.split("\n\n").filter((block) => !block.startsWith("#")))
    .slice(0, 4000)
  const raw = await rawThroughput(sample)
  console.log(`raw embedding: ${raw.toFixed(0)} passages/s (${sample.length} passages, batch ${batchSize}, ${dtype})`)

  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-bench-ingest-"))
  const service = await startService(dataDir)
  try {
    const session = await call(service.url, "/api/v1/auth/login", { json: { name: "bench" } })
    const token = session.access_token
    for (;;) {
      const ready = await call(service.url, "/api/v1/system/ready")
      if (ready.status === "ready") break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const source = await call(service.url, "/api/v1/sources", {
      token,
      json: { name: "bench", connector_kind: "file_upload", config: {} }
    })
    const started = performance.now()
    await pool(texts, 4, async (text, i) => {
      await call(service.url, `/api/v1/sources/${source.id}/documents/ingest`, {
        token,
        json: { title: `doc-${i}`, text }
      })
    })
    const done = await waitForSource(service.url, token, source.id, documents)
    const seconds = (performance.now() - started) / 1000
    const pipeline = done.chunk_count / seconds
    const rss = peakRssMiB(service.pid)
    const result = {
      engine: process.env.DATABASE_URL === undefined ? "pglite" : "postgres",
      model: `${Path.basename(modelDir)} (${dtype})`,
      documents,
      chunks: done.chunk_count,
      seconds,
      pipeline_chunks_per_second: pipeline,
      raw_embedding_passages_per_second: raw,
      ratio: pipeline / raw,
      peak_rss_mib: rss,
      machine: machine(),
      date: new Date().toISOString()
    }
    console.log(`pipeline: ${done.chunk_count} chunks in ${seconds.toFixed(1)} s = ${pipeline.toFixed(0)} chunks/s`)
    console.log(`ratio pipeline / raw embedding: ${result.ratio.toFixed(2)}`)
    console.log(`peak RSS of the service: ${rss.toFixed(0)} MiB`)
    const outDir = Path.join(root, "bench/results")
    Fs.mkdirSync(outDir, { recursive: true })
    Fs.writeFileSync(Path.join(outDir, `ingest-${result.engine}.json`), JSON.stringify(result, null, 2) + "\n")
  } finally {
    await service.stop()
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
