import { Context, Deferred, Effect, Layer, Metric, Option, Redacted, Ref, Schema, type Scope, Semaphore } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { EngramConfig, type EngramSettings } from "../config.ts"
import { modelAnswerAttributes, type ModelCall, modelCallSpan, modelErrorAttributes } from "../observability/GenAi.ts"
import { embeddedPassages, embeddingSeconds } from "../observability/Metrics.ts"
import { errorText } from "../errorText.ts"
import { type ModelJob, modelOnDemand, startModelThread } from "./modelThread.ts"

export interface EmbeddingModel {
  /** Identifies the vectors: a different name (or dimension) never shares an index. */
  readonly name: string
  readonly dimension: number
  readonly provider: "onnx" | "openai"
}

export type EmbedderState =
  | { readonly _tag: "Loading"; readonly detail: string }
  | { readonly _tag: "Ready"; readonly model: EmbeddingModel }
  | { readonly _tag: "Unavailable"; readonly reason: string }

export type EmbedPurpose = "query" | "passage"

/** Embedding failed; `transient` failures (a provider timeout, a 5xx) are worth retrying. */
export class EmbedError extends Schema.TaggedError<EmbedError>()("EmbedError", {
  message: Schema.String,
  transient: Schema.Boolean
}) {}

type Vectors = ReadonlyArray<ReadonlyArray<number>>

interface Backend {
  readonly model: EmbeddingModel
  /** A batch as a GenAI model call, for its span. */
  readonly call: ModelCall
  readonly embedBatch: (texts: ReadonlyArray<string>, purpose: EmbedPurpose) => Effect.Effect<Vectors, EmbedError>
}

/** BGE English models are trained with an instruction in front of queries (not passages). */
const queryPrefixFor = (name: string) =>
  /bge-[a-z]+-en/i.test(name) ? "Represent this sentence for searching relevant passages: " : ""

/** The pooling a model was trained with when ENGRAM_EMBED_POOLING does not say: CLS for BGE models, mean otherwise. */
export const defaultPooling = (modelId: string): "cls" | "mean" => /bge/i.test(modelId) ? "cls" : "mean"

/** The file of the ONNX graph transformers.js loads for a dtype. */
const onnxFile = (dtype: EngramSettings["embedDtype"]) =>
  dtype === "q8" ? "onnx/model_quantized.onnx" : "onnx/model.onnx"

/**
 * The dimension of a model's vectors, read from its files (`hidden_size` in config.json: what the feature-extraction
 * pipeline pools); none when they are not all there (a hub model not downloaded yet) or the config does not say.
 */
const dimensionOnDisk = (directory: string, dtype: EngramSettings["embedDtype"]): Option.Option<number> => {
  const files = ["config.json", "tokenizer.json", onnxFile(dtype)]
  if (!files.every((file) => Fs.existsSync(Path.join(directory, file)))) return Option.none()
  try {
    const hidden: unknown = JSON.parse(Fs.readFileSync(Path.join(directory, "config.json"), "utf8")).hidden_size
    return typeof hidden === "number" && Number.isInteger(hidden) && hidden > 0 ? Option.some(hidden) : Option.none()
  } catch {
    return Option.none()
  }
}

/**
 * A local ONNX sentence-embedding model through transformers.js and onnxruntime-node, on a thread of its own that
 * runs only while the model is used (src/adapters/modelThread.ts `modelOnDemand`): a batch holds that thread for as
 * long as it runs. When the model's files are on disk their config gives the dimension and nothing is loaded at
 * start; otherwise (a hub model's first start) the model is downloaded, loaded and probed once, then let go.
 */
const onnxBackend = (
  settings: EngramSettings,
  progress: { detail: string },
  onLoadFailure: (reason: string) => Effect.Effect<void>
): Effect.Effect<Backend, string, Scope.Scope> =>
  Effect.gen(function*() {
    const local = Option.isSome(settings.embedModelDir)
    const modelId = Option.match(settings.embedModelDir, {
      onSome: (dir) => Path.basename(Path.resolve(dir)),
      onNone: () => settings.embedModel
    })
    const cacheDir = Path.join(Path.resolve(settings.dataDir), "models")
    const location = Option.match(settings.embedModelDir, { onSome: (dir) => Path.resolve(dir), onNone: () => modelId })
    const job: ModelJob = {
      kind: "embed",
      location,
      local,
      cacheDir,
      dtype: settings.embedDtype,
      pooling: Option.getOrElse(settings.embedPooling, () => defaultPooling(modelId))
    }
    const cannotLoad = (reason: string) => `cannot load the embedding model ${local ? "directory" : modelId}: ${reason}`
    const onProgress = (detail: string) => {
      progress.detail = detail
    }
    const filesDir = local ? location : Path.join(cacheDir, modelId)
    const dimension = yield* Option.match(dimensionOnDisk(filesDir, settings.embedDtype), {
      onSome: Effect.succeed,
      onNone: () =>
        Effect.scoped(Effect.gen(function*() {
          const thread = yield* startModelThread(job, onProgress)
          const flat = yield* Effect.tryPromise({
            try: () => thread.run<Float32Array>({ texts: ["dimension probe"] }),
            catch: errorText
          })
          return flat.length
        })).pipe(Effect.mapError(cannotLoad))
    })
    const model = yield* modelOnDemand(job, {
      keepAliveSeconds: settings.modelKeepAliveSeconds,
      onProgress,
      onLoadFailure: (reason) => onLoadFailure(cannotLoad(reason))
    })
    const name = `${modelId}:${settings.embedDtype}`
    const prefix = queryPrefixFor(modelId)
    return {
      model: { name, dimension, provider: "onnx" as const },
      call: { operation: "embeddings" as const, provider: "onnx", model: modelId, dimensions: dimension },
      embedBatch: (texts: ReadonlyArray<string>, purpose: EmbedPurpose) =>
        model.run<Float32Array>({ texts: purpose === "query" ? texts.map((t) => prefix + t) : texts }).pipe(
          Effect.filterOrFail(
            (flat) => flat.length === texts.length * dimension,
            (flat) =>
              `the model gave ${flat.length / texts.length} numbers per vector, its config.json says ${dimension}`
          ),
          Effect.map((flat) => texts.map((_, i) => Array.from(flat.subarray(i * dimension, (i + 1) * dimension)))),
          Effect.mapError((reason) => new EmbedError({ message: `embedding failed: ${reason}`, transient: false }))
        )
    }
  })

const EmbeddingsResponse = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.Int, embedding: Schema.Array(Schema.Number) })),
  model: Schema.optional(Schema.String),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({ prompt_tokens: Schema.optional(Schema.NullOr(Schema.Number)) })))
})

/** Any OpenAI-compatible /v1/embeddings endpoint (Ollama, vLLM, TEI, OpenAI). */
const openAiBackend = (settings: EngramSettings, baseUrl: string): Effect.Effect<Backend, string> =>
  Effect.gen(function*() {
    const client = (yield* HttpClient.HttpClient).pipe(
      HttpClient.mapRequest((request) =>
        Option.match(settings.embedApiKey, {
          onNone: () => request,
          onSome: (key) => HttpClientRequest.bearerToken(request, Redacted.value(key))
        })
      ),
      HttpClient.filterStatusOk,
      HttpClient.retryTransient({ times: 3 })
    )
    const url = `${baseUrl.replace(/\/$/, "")}/embeddings`
    const run = (texts: ReadonlyArray<string>) =>
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.bodyJsonUnsafe({ model: settings.embedModel, input: texts }),
        client.execute,
        Effect.flatMap(HttpClientResponse.schemaBodyJson(EmbeddingsResponse)),
        Effect.tap((body) =>
          Effect.annotateCurrentSpan(
            modelAnswerAttributes({ model: body.model, inputTokens: body.usage?.prompt_tokens })
          )
        ),
        Effect.map((body) => [...body.data].sort((a, b) => a.index - b.index).map((item) => item.embedding)),
        Effect.timeout("60 seconds"),
        Effect.mapError((error) =>
          new EmbedError({
            message: `the embedding endpoint failed: ${error._tag === "TimeoutError" ? "timed out" : error.message}`,
            transient: true
          })
        )
      )
    const probe = yield* run(["dimension probe"]).pipe(Effect.mapError((error) => error.message))
    const dimension = probe[0]!.length
    return {
      model: { name: `${settings.embedModel}@openai`, dimension, provider: "openai" as const },
      call: {
        operation: "embeddings" as const,
        provider: "openai",
        model: settings.embedModel,
        url,
        dimensions: dimension
      },
      embedBatch: run
    }
  }).pipe(Effect.provide(FetchHttpClient.layer))

export class Embedder extends Context.Service<Embedder, {
  readonly state: Effect.Effect<EmbedderState>
  /** Waits until loading has finished; the model, or none when there is no model to use. */
  readonly loaded: Effect.Effect<Option.Option<EmbeddingModel>>
  /** Embeds in batches; fails when no model is available. */
  readonly embed: (texts: ReadonlyArray<string>, purpose: EmbedPurpose) => Effect.Effect<Vectors, EmbedError>
}>()("engram/Embedder") {
  /** Loads the configured model in the background: start-up never waits for a download. */
  static readonly layer = Layer.effect(
    Embedder,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      const progress = { detail: "starting" }
      const state = yield* Ref.make<EmbedderState>({ _tag: "Loading", detail: "starting" })
      const done = yield* Deferred.make<Option.Option<Backend>>()
      const oneAtATime = yield* Semaphore.make(1)

      const disabled = settings.embedModel === "none" && Option.isNone(settings.embedModelDir) &&
        Option.isNone(settings.embedBaseUrl)
      const load: Effect.Effect<Backend, string, Scope.Scope> = disabled
        ? Effect.fail("dense retrieval is disabled (ENGRAM_EMBED_MODEL=none)")
        : Option.match(settings.embedBaseUrl, {
          onSome: (baseUrl) => openAiBackend(settings, baseUrl),
          onNone: () =>
            onnxBackend(settings, progress, (reason) =>
              Ref.set(state, { _tag: "Unavailable", reason }).pipe(
                Effect.andThen(
                  Effect.logWarning("the embedding model cannot be loaded: dense retrieval is unavailable", reason)
                )
              ))
        })
      yield* load.pipe(
        Effect.tap((backend) =>
          Ref.set(state, { _tag: "Ready", model: backend.model }).pipe(
            Effect.andThen(Effect.logInfo("embedding model ready").pipe(
              Effect.annotateLogs({ model: backend.model.name, dimension: backend.model.dimension })
            ))
          )
        ),
        Effect.map(Option.some),
        Effect.catch((reason: string) =>
          Ref.set(state, { _tag: "Unavailable", reason }).pipe(
            Effect.andThen(Effect.logWarning("no embedding model: dense retrieval is unavailable", reason)),
            Effect.as(Option.none<Backend>())
          )
        ),
        Effect.raceFirst(
          Effect.forever(
            Effect.sleep("5 seconds").pipe(
              Effect.andThen(Effect.sync(() => progress.detail)),
              Effect.flatMap((detail) =>
                Ref.set(state, { _tag: "Loading", detail }).pipe(
                  Effect.andThen(Effect.logInfo("loading the embedding model", detail))
                )
              )
            )
          )
        ),
        Effect.flatMap((backend) => Deferred.succeed(done, backend)),
        Effect.forkScoped
      )

      const embed = Effect.fn("Embedder.embed")(function*(texts: ReadonlyArray<string>, purpose: EmbedPurpose) {
        const backend = yield* Deferred.await(done)
        if (Option.isNone(backend)) {
          return yield* new EmbedError({ message: "no embedding model is available", transient: false })
        }
        yield* Effect.annotateCurrentSpan({ "engram.embed.passages": texts.length })
        const vectors: Array<ReadonlyArray<number>> = []
        const started = performance.now()
        for (let i = 0; i < texts.length; i += settings.embedBatchSize) {
          const batch = texts.slice(i, i + settings.embedBatchSize)
          // Each batch is one model call, with a GenAI span of its own.
          vectors.push(...(yield* oneAtATime.withPermits(1)(backend.value.embedBatch(batch, purpose).pipe(
            Effect.tapError(() => Effect.annotateCurrentSpan(modelErrorAttributes("EmbedError"))),
            Effect.withSpan(...modelCallSpan(backend.value.call))
          ))))
        }
        yield* Metric.update(embeddedPassages, texts.length)
        yield* Metric.update(embeddingSeconds, (performance.now() - started) / 1000)
        return vectors
      })

      return Embedder.of({
        state: Ref.get(state),
        loaded: Effect.map(Deferred.await(done), Option.map((backend) => backend.model)),
        embed
      })
    })
  )
}
