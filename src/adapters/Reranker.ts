import { Context, Deferred, Effect, Layer, Option, Ref, Schema, Semaphore } from "effect"
import * as Path from "node:path"
import { EngramConfig } from "../config.ts"
import { onnxSessionOptions } from "./onnxSession.ts"

export type RerankerState =
  | { readonly _tag: "Off" }
  | { readonly _tag: "Loading" }
  | { readonly _tag: "Ready"; readonly name: string }
  | { readonly _tag: "Unavailable"; readonly reason: string }

export class RerankError extends Schema.TaggedError<RerankError>()("RerankError", { message: Schema.String }) {}

type Score = (query: string, passages: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<number>, RerankError>

/** Pairs scored per forward pass. */
const batchSize = 16

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x))

/**
 * A cross-encoder in the transformers.js layout (config, tokenizer, onnx/model.onnx with a `logits` output of one
 * relevance logit per query–passage pair, e.g. an export of cross-encoder/ms-marco-MiniLM-L-6-v2), run locally.
 */
const loadCrossEncoder = (directory: string): Effect.Effect<{ name: string; score: Score }, string> =>
  Effect.gen(function*() {
    const { AutoModelForSequenceClassification, AutoTokenizer, env } = yield* Effect.promise(() =>
      import("@huggingface/transformers")
    )
    // Loaded by absolute path: transformers.js reads it from disk and never asks a hub.
    const absolute = Path.resolve(directory)
    env.allowLocalModels = true
    const [tokenizer, model] = yield* Effect.tryPromise({
      try: () =>
        Promise.all([
          AutoTokenizer.from_pretrained(absolute, { local_files_only: true }),
          AutoModelForSequenceClassification.from_pretrained(absolute, {
            dtype: "fp32",
            local_files_only: true,
            session_options: onnxSessionOptions
          })
        ]),
      catch: (error) => `cannot load the reranker model directory: ${(error as Error).message ?? error}`
    })
    const score: Score = (query, passages) =>
      Effect.tryPromise({
        try: async () => {
          const scores: Array<number> = []
          for (let i = 0; i < passages.length; i += batchSize) {
            const batch = passages.slice(i, i + batchSize)
            const inputs = tokenizer(batch.map(() => query), { text_pair: [...batch], padding: true, truncation: true })
            const { logits } = await model(inputs)
            const values = Array.from(logits.data as Float32Array)
            const width = logits.dims[1] ?? 1
            // One logit: relevance. Two (not relevant, relevant): the second.
            for (let row = 0; row < batch.length; row++) scores.push(sigmoid(values[row * width + width - 1]!))
          }
          return scores
        },
        catch: (error) => new RerankError({ message: `reranking failed: ${(error as Error).message}` })
      })
    const probe = yield* score("probe", ["probe"]).pipe(Effect.mapError((error) => error.message))
    if (probe.length !== 1 || !Number.isFinite(probe[0])) {
      return yield* Effect.fail("the reranker model does not give one relevance score per pair")
    }
    return { name: Path.basename(absolute), score }
  })

/** The optional cross-encoder that reorders the top fused candidates (ENGRAM_RERANK_MODEL_DIR). */
export class Reranker extends Context.Service<Reranker, {
  readonly state: Effect.Effect<RerankerState>
  /** Relevance of each passage to the query, 0..1, in the passages' order; fails when no reranker is usable. */
  readonly score: Score
}>()("engram/Reranker") {
  /** Loads the configured model in the background, like the embedder. */
  static readonly layer = Layer.effect(
    Reranker,
    Effect.gen(function*() {
      const settings = yield* EngramConfig
      if (Option.isNone(settings.rerankModelDir)) {
        return Reranker.of({
          state: Effect.succeed({ _tag: "Off" }),
          score: () => Effect.fail(new RerankError({ message: "no reranker is configured (ENGRAM_RERANK_MODEL_DIR)" }))
        })
      }
      const state = yield* Ref.make<RerankerState>({ _tag: "Loading" })
      const done = yield* Deferred.make<Option.Option<Score>>()
      const oneAtATime = yield* Semaphore.make(1)
      yield* loadCrossEncoder(settings.rerankModelDir.value).pipe(
        Effect.tap((model) =>
          Ref.set(state, { _tag: "Ready", name: model.name }).pipe(
            Effect.andThen(Effect.logInfo("reranker ready").pipe(Effect.annotateLogs({ model: model.name })))
          )
        ),
        Effect.map((model) => Option.some(model.score)),
        Effect.catch((reason: string) =>
          Ref.set(state, { _tag: "Unavailable", reason }).pipe(
            Effect.andThen(Effect.logWarning("no reranker: results are not reranked", reason)),
            Effect.as(Option.none<Score>())
          )
        ),
        Effect.flatMap((score) => Deferred.succeed(done, score)),
        Effect.forkScoped
      )
      return Reranker.of({
        state: Ref.get(state),
        score: (query, passages) =>
          Deferred.await(done).pipe(
            Effect.flatMap(Option.match({
              onNone: () => Effect.fail(new RerankError({ message: "the reranker model could not be loaded" })),
              onSome: (score) => oneAtATime.withPermits(1)(score(query, passages))
            }))
          )
      })
    })
  )
}
