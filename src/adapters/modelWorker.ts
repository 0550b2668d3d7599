/**
 * A local ONNX model's own thread. onnxruntime-node runs a model synchronously on the thread that calls it, for as
 * long as a batch takes (seconds for a real encoder on a small machine), so the embedder and the reranker run here
 * and the service's thread keeps answering meanwhile.
 * In: workerData ModelJob (src/adapters/modelThread.ts). Out: {progress} while loading, then {ready: true} or
 * {failed: message}; then for each {id, texts} (embed) or {id, query, passages} (rerank) one {id, ok} or
 * {id, error}. An embedding batch comes back as one Float32Array of its vectors, row after row. {stop: true}, at
 * any time: the thread ends itself, between two batches (a batch runs synchronously, so no message comes in during
 * one).
 */
import { parentPort, workerData } from "node:worker_threads"
import { shrinkHeap } from "../heap.ts"
import type { ModelJob, ModelRequest } from "./modelThread.ts"
import { onnxSessionOptions } from "./onnxSession.ts"

const job = workerData as ModelJob
const port = parentPort!
const { AutoModelForSequenceClassification, AutoTokenizer, env, pipeline } = await import("@huggingface/transformers")

const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error)

/** Pairs a cross-encoder scores per forward pass. */
const rerankBatch = 16
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x))

type Run = (request: ModelRequest) => Promise<Float32Array | ReadonlyArray<number>>

const load = async (): Promise<Run> => {
  env.allowLocalModels = true
  if (job.kind === "embed") {
    // A local directory is loaded by its absolute path, which transformers.js never resolves against a hub.
    env.allowRemoteModels = !job.local
    env.cacheDir = job.cacheDir
    const extractor = await pipeline("feature-extraction", job.location, {
      dtype: job.dtype as "fp32",
      session_options: onnxSessionOptions,
      progress_callback: (info: { status: string; file?: string; progress?: number }) => {
        if (info.status === "progress" && info.file !== undefined) {
          port.postMessage({ progress: `downloading ${info.file}: ${Math.round(info.progress ?? 0)}%` })
        }
      }
    })
    return async (request) => {
      const output = await extractor([...(request as { texts: ReadonlyArray<string> }).texts], {
        pooling: job.pooling,
        normalize: true
      })
      return Float32Array.from(output.data as Float32Array)
    }
  }
  env.allowRemoteModels = false
  const [tokenizer, model] = await Promise.all([
    AutoTokenizer.from_pretrained(job.directory, { local_files_only: true }),
    AutoModelForSequenceClassification.from_pretrained(job.directory, {
      dtype: "fp32",
      local_files_only: true,
      session_options: onnxSessionOptions
    })
  ])
  return async (request) => {
    const { passages, query } = request as { query: string; passages: ReadonlyArray<string> }
    const scores: Array<number> = []
    for (let i = 0; i < passages.length; i += rerankBatch) {
      const batch = passages.slice(i, i + rerankBatch)
      const inputs = tokenizer(batch.map(() => query), { text_pair: [...batch], padding: true, truncation: true })
      const { logits } = await model(inputs)
      const values = logits.data as Float32Array
      const width = logits.dims[1] ?? 1
      // One logit: relevance. Two (not relevant, relevant): the second.
      for (let row = 0; row < batch.length; row++) scores.push(sigmoid(values[row * width + width - 1]!))
    }
    return scores
  }
}

type Message = { readonly stop: true } | ({ readonly id: number } & ModelRequest)

let run: Run | undefined
port.on("message", (message: Message) => {
  if ("stop" in message) return process.exit(0)
  run!(message).then(
    (ok) => port.postMessage({ id: message.id, ok }, ok instanceof Float32Array ? [ok.buffer as ArrayBuffer] : []),
    (error) => port.postMessage({ id: message.id, error: messageOf(error) })
  )
})

try {
  run = await load()
  shrinkHeap()
  port.postMessage({ ready: true })
} catch (error) {
  port.postMessage({ failed: messageOf(error) })
}
