import { Context, Deferred, Effect, Layer, Option, Ref, Schema, type Scope, Semaphore } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { EngramConfig } from "../config.ts"
import { modelOnDemand } from "./modelThread.ts"

export type RerankerState =
  | { readonly _tag: "Off" }
  | { readonly _tag: "Loading" }
  | { readonly _tag: "Ready"; readonly name: string }
  | { readonly _tag: "Unavailable"; readonly reason: string }

export class RerankError extends Schema.TaggedError<RerankError>()("RerankError", { message: Schema.String }) {}

type Score = (query: string, passages: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<number>, RerankError>

/** The files of a cross-encoder in the transformers.js layout. */
const crossEncoderFiles = ["config.json", "tokenizer.json", "onnx/model.onnx"]

/**
 * A cross-encoder in the transformers.js layout (config, tokenizer, onnx/model.onnx with a `logits` output of one
 * relevance logit per query–passage pair, e.g. an export of cross-encoder/ms-marco-MiniLM-L-6-v2), run locally on a
 * thread of its own while it is used (src/adapters/modelThread.ts `modelOnDemand`), as the embedder is. At start only
 * its files are checked; the model is loaded by the first search that reranks.
 */
const loadCrossEncoder = (
  directory: string,
  keepAliveSeconds: number,
  onLoadFailure: (reason: string) => Effect.Effect<void>
): Effect.Effect<{ name: string; score: Score }, string, Scope.Scope> =>
  Effect.gen(function*() {
    // Loaded by absolute path: transformers.js reads it from disk and never asks a hub.
    const absolute = Path.resolve(directory)
    const missing = crossEncoderFiles.filter((file) => !Fs.existsSync(Path.join(absolute, file)))
    if (missing.length > 0) {
      return yield* Effect.fail(`the reranker model directory has no ${missing.join(", ")}`)
    }
    const model = yield* modelOnDemand({ kind: "rerank", directory: absolute }, {
      keepAliveSeconds,
      onLoadFailure: (reason) => onLoadFailure(`cannot load the reranker model directory: ${reason}`)
    })
    const score: Score = (query, passages) =>
      model.run<ReadonlyArray<number>>({ query, passages }).pipe(
        Effect.filterOrFail(
          (scores) => scores.length === passages.length && scores.every(Number.isFinite),
          () => "the reranker model does not give one relevance score per pair"
        ),
        Effect.mapError((reason) => new RerankError({ message: `reranking failed: ${reason}` }))
      )
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
      const unavailable = (reason: string) =>
        Ref.set(state, { _tag: "Unavailable", reason }).pipe(
          Effect.andThen(Effect.logWarning("no reranker: results are not reranked", reason))
        )
      yield* loadCrossEncoder(settings.rerankModelDir.value, settings.modelKeepAliveSeconds, unavailable).pipe(
        Effect.tap((model) =>
          Ref.set(state, { _tag: "Ready", name: model.name }).pipe(
            Effect.andThen(Effect.logInfo("reranker ready").pipe(Effect.annotateLogs({ model: model.name })))
          )
        ),
        Effect.map((model) => Option.some(model.score)),
        Effect.catch((reason: string) => unavailable(reason).pipe(Effect.as(Option.none<Score>()))),
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
