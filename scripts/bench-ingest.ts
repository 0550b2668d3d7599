/**
 * Ingest benchmark: chunks/second through the whole pipeline against the raw throughput of the same embedding
 * model on the same machine, in one run, and the service's peak RSS while ingesting.
 *   npm run bench:ingest -- [--chunks 100000] [--docs-chunks 200]
 *                           [--model-dir DIR | --random-weights-of DIR]   (DATABASE_URL for PostgreSQL)
 * --model-dir: a model directory, int8 (default: the tiny random BERT fixture, far cheaper than any real model).
 * --random-weights-of: a real model's config and tokenizer (e.g. ../shared/models/_tokenizers/bge-small-en-v1.5);
 * an encoder of exactly that shape with random weights is built (lib/encoder-model.ts) and run in fp32, so
 * embedding costs what the real model costs.
 * The service runs as its own process, as `npm start` runs it; peak RSS is its VmHWM from /proc.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"
import { defaultPooling } from "../src/adapters/Embedder.ts"
import { settingsConfig } from "../src/config.ts"
import { buildEncoderModel } from "./lib/encoder-model.ts"
import { argument, call, machine, peakResidentBytes, pool, waitForSource } from "./lib/instance.ts"
import { startCommand } from "./lib/startCommand.ts"
import { syntheticDocument } from "./lib/synthetic.ts"

const root = Path.resolve(import.meta.dirname, "..")
const targetChunks = Number(argument("chunks") ?? 100_000)
const chunksPerDocument = Number(argument("docs-chunks") ?? 200)
const architecture = argument("random-weights-of")
const scratchDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-bench-ingest-"))
const modelDir = architecture === undefined
  ? Path.resolve(argument("model-dir") ?? Path.join(root, "../shared/models/_fixtures/tiny-random-bert"))
  : Path.join(scratchDir, "models", `${Path.basename(architecture)}-random-weights`)
if (architecture !== undefined) buildEncoderModel(Path.resolve(architecture), modelDir)
const dtype = architecture === undefined ? "q8" : "fp32"
const pooling = defaultPooling(Path.basename(modelDir))
/** The service's batch size: ENGRAM_EMBED_BATCH_SIZE, which its process inherits, or the default. */
const batchSize = Effect.runSync(Effect.map(settingsConfig, (settings) => settings.embedBatchSize))
const start = startCommand(root)

const documents = Math.ceil(targetChunks / chunksPerDocument)
const texts = Array.from({ length: documents }, (_, i) => syntheticDocument(i, chunksPerDocument))

/** The raw model: the same files, dtype, pooling and batch size as the service's embedder. */
const rawThroughput = async (passages: ReadonlyArray<string>) => {
  const { env, pipeline } = await import("@huggingface/transformers")
  env.allowRemoteModels = false
  env.localModelPath = Path.dirname(modelDir) + "/"
  const extractor = await pipeline("feature-extraction", Path.basename(modelDir), { dtype })
  await extractor(passages.slice(0, batchSize), { pooling, normalize: true })
  const started = performance.now()
  for (let i = 0; i < passages.length; i += batchSize) {
    await extractor(passages.slice(i, i + batchSize), { pooling, normalize: true })
  }
  return passages.length / ((performance.now() - started) / 1000)
}

const startService = (dataDir: string) =>
  new Promise<{ url: string; pid: number; stop: () => Promise<void> }>((resolve, reject) => {
    const child = spawn(process.execPath, start.args, {
      cwd: root,
      env: {
        ...process.env,
        ...start.env,
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

const main = async () => {
  const sampleSize = Math.min(4000, targetChunks)
  const sample = texts.slice(0, Math.max(1, Math.ceil(sampleSize / chunksPerDocument)))
    .flatMap((text) => text.split("\n\n").filter((block) => !block.startsWith("#")))
    .slice(0, sampleSize)
  const raw = await rawThroughput(sample)
  console.log(`raw embedding: ${raw.toFixed(0)} passages/s (${sample.length} passages, batch ${batchSize}, ${dtype})`)

  const dataDir = Path.join(scratchDir, "data")
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
    const rss = peakResidentBytes(service.pid) / 1024 ** 2
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
    Fs.writeFileSync(Path.join(outDir, `ingest-${result.engine}-${Path.basename(modelDir)}.json`), JSON.stringify(result, null, 2) + "\n")
  } finally {
    await service.stop()
    Fs.rmSync(scratchDir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
