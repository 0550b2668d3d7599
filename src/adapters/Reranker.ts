import { Context, Deferred, Effect, Layer, Option, Ref, Schema, type Scope, Semaphore } from "effect"
import * as Path from "node:path"
import { EngramConfig } from "../config.ts"
import { startModelThread } from "./modelThread.ts"

export type RerankerState =
  | { readonly _tag: "Off" }
  | { readonly _tag: "Loading" }
  | { readonly _tag: "Ready"; readonly name: string }
  | { readonly _tag: "Unavailable"; readonly reason: string }

export class RerankError extends Schema.TaggedError<RerankError>()("RerankError", { message: Schema.String }) {}

type Score = (query: string, passages: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<number>, RerankError>

/**
 * A cross-encoder in the transformers.js layout (config, tokenizer, onnx/model.onnx with a `logits` output of one
 * relevance logit per query–passage pair, e.g. an export of cross-encoder/ms-marco-MiniLM-L-6-v2), run locally on a
 * thread of its own (src/adapters/modelWorker.ts), as the embedder is.
 */
const loadCrossEncoder = (directory: string): Effect.Effect<{ name: string; score: Score }, string, Scope.Scope> =>
  Effect.gen(function*() {
    // Loaded by absolute path: transformers.js reads it from disk and never asks a hub.
    const absolute = Path.resolve(directory)
    const thread = yield* startModelThread({ kind: "rerank", directory: absolute }).pipe(
      Effect.mapError((reason) => `cannot load the reranker model directory: ${reason}`)
    )
    const score: Score = (query, passages) =>
      Effect.tryPromise({
        try: () => thread.run<ReadonlyArray<number>>({ query, passages }),
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
