import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { EngramConfig } from "../config.ts"
import type { SearchResponse, Strategy } from "../domain/Search.ts"
import type { UserId } from "../domain/User.ts"
import {
  collapseNearDuplicates,
  type Fused,
  fuseRankings,
  nearDuplicateThreshold,
  type RankedList
} from "../retrieval/fusion.ts"
import { Embedder } from "../adapters/Embedder.ts"
import { Erasure } from "../stores/Erasure.ts"
import { GraphSearch } from "./GraphSearch.ts"
import { type LexicalHit, LexicalIndex } from "../stores/LexicalIndex.ts"
import { answersQuery } from "../retrieval/queryGraph.ts"
import { Reranker } from "../adapters/Reranker.ts"
import { type IndexedModel, VectorIndex } from "../stores/VectorIndex.ts"
import { searchable, type SearchableChunk, searchableChunkColumns } from "../stores/Searchable.ts"
import { searchDuration, timed } from "../observability/Metrics.ts"
import { ownedSources } from "../stores/SourceAccess.ts"

export type RetrieverError =
  | { readonly _tag: "SourceNotFound"; readonly sourceId: string }
  | { readonly _tag: "DenseUnavailable"; readonly reason: string }
  | { readonly _tag: "RerankUnavailable"; readonly reason: string }

export class RetrieverFailure extends Data.TaggedError("RetrieverFailure")<{ readonly reason: RetrieverError }> {}

export interface SearchInput {
  readonly owner: UserId
  readonly query: string
  readonly strategy: Strategy
  readonly topK: number
  /** undefined: every source of the owner */
  readonly sourceIds: ReadonlyArray<string> | undefined
  readonly saveExploration: boolean
  /** undefined: rerank multi results when a reranker is configured */
  readonly rerank?: boolean | undefined
  /** multi: include the graph list (default true; the evaluation turns it off to compare) */
  readonly graph?: boolean | undefined
}

/** How many candidates each list contributes to fusion, per result asked for. */
const candidatesPer = 3
const minimumCandidates = 50
/** Fused results looked at (loaded, de-duplicated) per result asked for. */
const shortlistPer = 2
/** BM25 alone is asked again at most this many times as deep as the results when near-duplicates thin them. */
const maxDeepening = 4

interface RerankNote {
  readonly score: number
  readonly fused_rank: number
}

export class Retriever extends Context.Service<Retriever, {
  readonly search: (input: SearchInput) => Effect.Effect<SearchResponse, RetrieverFailure>
  /** The dense list can run: a model is loaded and the index holds its vectors; otherwise why not. */
  readonly denseStatus: Effect.Effect<{ readonly model: Option.Option<IndexedModel>; readonly reason: string | null }>
}>()("engram/Retriever") {
  static readonly layer = Layer.effect(
    Retriever,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const erasure = yield* Erasure
      const settings = yield* EngramConfig
      const embedder = yield* Embedder
      const vectors = yield* VectorIndex
      const lexical = yield* LexicalIndex
      const reranker = yield* Reranker
      const graph = yield* GraphSearch

      /** Whether to rerank this search: asked for explicitly, or by default when a reranker is ready. */
      const rerankDecision = Effect.fn("Retriever.rerankDecision")(function*(input: SearchInput, notices: Array<string>) {
        if (input.strategy !== "multi" || input.rerank === false) return false
        const state = yield* reranker.state
        if (input.rerank === true) {
          if (state._tag === "Off" || state._tag === "Unavailable") {
            const reason = state._tag === "Off" ? "no reranker is configured (ENGRAM_RERANK_MODEL_DIR)" : state.reason
            return yield* Effect.fail(new RetrieverFailure({ reason: { _tag: "RerankUnavailable", reason } }))
          }
          return true
        }
        if (state._tag === "Loading") notices.push("the reranker is still loading, results are not reranked")
        if (state._tag === "Unavailable") notices.push(`results are not reranked: ${state.reason}`)
        return state._tag === "Ready"
      })

      const denseStatus = Effect.gen(function*() {
        const state = yield* embedder.state
        if (state._tag === "Loading") {
          return { model: Option.none<IndexedModel>(), reason: `the embedding model is loading (${state.detail})` }
        }
        if (state._tag === "Unavailable") {
          return { model: Option.none<IndexedModel>(), reason: `no embedding model: ${state.reason}` }
        }
        const active = yield* vectors.active
        if (Option.isNone(active)) return { model: active, reason: "the vector index is not built yet" }
        if (active.value.name !== state.model.name) {
          return {
            model: Option.none<IndexedModel>(),
            reason: `the index holds vectors of ${active.value.name}, not of the loaded ${state.model.name} ` +
              "(an administrator must run POST /api/v1/system/reindex)"
          }
        }
        return { model: active, reason: null }
      })

      const resolveSources = Effect.fn("Retriever.resolveSources")(function*(
        owner: UserId,
        requested: ReadonlyArray<string> | undefined
      ) {
        return yield* ownedSources(sql, owner, requested).pipe(
          Effect.catchTag("SourceNotOwned", ({ sourceId }) =>
            Effect.fail(new RetrieverFailure({ reason: { _tag: "SourceNotFound", sourceId } })))
        )
      })

      const vectorList = Effect.fn("Retriever.vectorList")(function*(
        model: IndexedModel,
        query: string,
        sourceIds: ReadonlyArray<string>,
        limit: number
      ) {
        const [embedding] = yield* embedder.embed([query], "query").pipe(
          Effect.mapError((error) =>
            new RetrieverFailure({ reason: { _tag: "DenseUnavailable", reason: error.message } })
          )
        )
        return yield* vectors.nearest(model, embedding!, sourceIds, limit)
      })

      /** The searchable chunks of these ids; those in `known` (read with BM25's list) are not read again. */
      const details = (ids: ReadonlyArray<string>, known: ReadonlyMap<string, SearchableChunk>) => {
        const missing = ids.filter((id) => !known.has(id))
        return missing.length === 0
          ? Effect.succeed(known)
          : sql<SearchableChunk>`
              SELECT ${searchableChunkColumns(sql)}
              FROM chunks c
              JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
              WHERE c.id IN ${sql.in(missing)}`.pipe(
            Effect.map((rows) => new Map([...known, ...rows.map((row) => [row.id, row] as const)])),
            Effect.orDie
          )
      }

      /** The cross-encoder reorders the first rerankCandidates results; the rest keep their fused order after them. */
      const rerankTop = <A extends { readonly score: number; readonly text: string; readonly reranked: RerankNote | null }>(
        query: string,
        ranked: ReadonlyArray<A>
      ) =>
        Effect.gen(function*() {
          const head = ranked.slice(0, settings.rerankCandidates)
          const scores = yield* reranker.score(query, head.map((item) => item.text)).pipe(
            Effect.mapError((error) => new RetrieverFailure({ reason: { _tag: "RerankUnavailable", reason: error.message } }))
          )
          const rescored = head
            .map((item, i): A => ({ ...item, score: scores[i]!, reranked: { score: scores[i]!, fused_rank: i + 1 } }))
            .sort((a, b) => b.score - a.score || a.reranked!.fused_rank - b.reranked!.fused_rank)
          return [...rescored, ...ranked.slice(head.length)]
        })

      const search = (input: SearchInput) => timed(searchDuration, { strategy: input.strategy }, searchOnce(input))

      /**
       * The lists fused (multi) or taken as they are, the shortlist loaded, reranked if asked, near-duplicates
       * collapsed until top k are kept.
       */
      const resultsOf = Effect.fnUntraced(function*(
        input: SearchInput,
        lists: ReadonlyArray<RankedList>,
        rerank: boolean,
        known: ReadonlyMap<string, SearchableChunk>
      ) {
        const fused: ReadonlyArray<Fused> = yield* Effect.sync(() =>
          input.strategy === "multi"
            ? fuseRankings(lists, settings.fusionK)
            : (lists[0]?.hits ?? []).map((hit, i) => ({
              id: hit.id,
              score: hit.score,
              contributions: [{ list: lists[0]!.name, rank: i + 1, score: hit.score }]
            }))
        ).pipe(Effect.withSpan("Retriever.fuse", { attributes: { "engram.search.lists": lists.length } }))
        const shortlist = fused.slice(0, Math.max(input.topK * shortlistPer, rerank ? settings.rerankCandidates : 0))
        const found = yield* details(shortlist.map((item) => item.id), known)
        const ranked = shortlist.flatMap((item) => {
          const detail = found.get(item.id)
          if (detail === undefined) return []
          const reranked: RerankNote | null = null
          return [{ ...item, fusedScore: item.score, reranked, text: detail.text, nearKey: detail.near_key, detail }]
        })
        const ordered = rerank ? yield* rerankTop(input.query, ranked).pipe(Effect.withSpan("Retriever.rerank")) : ranked
        return collapseNearDuplicates(ordered, nearDuplicateThreshold, input.topK)
      })

      const searchOnce = Effect.fn("Retriever.search")(function*(input: SearchInput) {
        const started = yield* Clock.currentTimeMillis
        const cues = input.strategy === "multi" && input.graph !== false ? yield* graph.cues(input.query) : undefined
        // Where BM25's first statement is the search's first (no vector list, no question for the graph), it checks
        // that the sources the request names are the caller's: one round trip less. Otherwise the caller's sources
        // and the vector index's state are asked first, at once.
        const named = input.sourceIds === undefined ? [] : [...new Set(input.sourceIds)]
        const bm25First = named.length > 0 && input.strategy !== "vector" && (cues === undefined || !answersQuery(cues))
        const early = bm25First && input.strategy === "multi" ? yield* denseStatus : undefined
        let unchecked = bm25First && (early === undefined || Option.isNone(early.model))
        const [sourceIds, dense] = unchecked
          ? [named, early]
          : yield* Effect.all([
            resolveSources(input.owner, input.sourceIds),
            input.strategy === "lexical" ? Effect.undefined : early === undefined ? denseStatus : Effect.succeed(early)
          ], { concurrency: "unbounded" })
        const notices: Array<string> = []
        const candidates = Math.max(minimumCandidates, input.topK * candidatesPer)
        const lists: Array<RankedList> = []
        const rerankNotices: Array<string> = []
        const rerank = yield* rerankDecision(input, rerankNotices)
        let lexicalAlone = false
        let lexicalDepth = 0
        // BM25's list alone is the results: its chunks are read with it (`withChunks`) and kept here.
        const known = new Map<string, SearchableChunk>()
        const parameters = { k1: settings.bm25K1, b: settings.bm25B }
        const lexicalHits = (depth: number, withChunks = false): Effect.Effect<
          ReadonlyArray<{ readonly id: string; readonly score: number }>,
          RetrieverFailure
        > =>
          Effect.gen(function*() {
            let hits: ReadonlyArray<LexicalHit>
            if (unchecked) {
              unchecked = false
              const first = yield* lexical.searchMeasured(
                input.query,
                { ids: sourceIds, owner: input.owner },
                depth,
                parameters,
                withChunks
              )
              // A named source is not the caller's: refused as when asked first (404), else (it became theirs
              // meanwhile) asked again.
              if (first.owned < sourceIds.length) {
                yield* resolveSources(input.owner, input.sourceIds)
                return yield* lexicalHits(depth, withChunks)
              }
              hits = first.hits
            } else {
              hits = yield* lexical.search(input.query, sourceIds, depth, parameters, withChunks)
            }
            return hits.map((hit) => {
              if (hit.chunk !== undefined) known.set(hit.chunkId, hit.chunk)
              return { id: hit.chunkId, score: hit.score }
            })
          })

        if (sourceIds.length > 0) {
          const model = dense !== undefined && Option.isSome(dense.model) ? dense.model.value : undefined
          if (dense !== undefined && model === undefined) {
            if (input.strategy === "vector") {
              return yield* Effect.fail(
                new RetrieverFailure({ reason: { _tag: "DenseUnavailable", reason: dense.reason ?? "unavailable" } })
              )
            }
            notices.push(`dense retrieval is unavailable, results come from the other lists: ${dense.reason}`)
          }
          const withLexical = input.strategy !== "vector"
          // Beside a vector list, BM25's depth is fusion's: the lists are asked at once. Without one, it depends
          // on whether the graph list has hits, so BM25 is asked after it.
          const [vectorHits, graphList, lexicalBeside] = yield* Effect.all([
            model === undefined
              ? Effect.undefined
              : vectorList(model, input.query, sourceIds, input.strategy === "vector" ? input.topK : candidates),
            cues === undefined ? Effect.undefined : graph.search(cues, sourceIds, candidates),
            model !== undefined && withLexical ? lexicalHits(candidates) : Effect.undefined
          ], { concurrency: "unbounded" })
          if (vectorHits !== undefined) {
            lists.push({ name: "vector", weight: settings.fusionWeightVector, hits: vectorHits })
          }
          const graphHits = graphList !== undefined && graphList.confidence > 0 ? graphList.hits : []
          if (graphList?.notice !== undefined) notices.push(graphList.notice)
          if (withLexical) {
            lexicalAlone = lists.length === 0 && graphHits.length === 0
            // Fused with nothing else, BM25's list is the result: it need reach only as deep as the results (or
            // the rerank), and goes deeper below only when near-duplicates leave fewer than top k.
            lexicalDepth = input.strategy === "lexical"
              ? input.topK
              : lexicalAlone
              ? Math.max(input.topK, rerank ? settings.rerankCandidates : 0)
              : candidates
            const hits = lexicalBeside ?? (yield* lexicalHits(lexicalDepth, lexicalAlone))
            lists.push({ name: "lexical", weight: settings.fusionWeightLexical, hits })
          }
          if (graphList !== undefined && graphHits.length > 0) {
            lists.push({
              name: "graph",
              weight: settings.fusionWeightGraph * graphList.confidence,
              hits: graphHits.map((hit) => ({ id: hit.chunkId, score: hit.score }))
            })
          }
        } else {
          notices.push("there are no sources to search")
        }

        notices.push(...rerankNotices)
        let collapsed = yield* resultsOf(input, lists, rerank, known)
        // A list alone that near-duplicates thinned below top k is asked again, twice and four times as deep.
        const lexicalIndex = lists.findIndex((list) => list.name === "lexical")
        while (
          lexicalAlone && collapsed.length < input.topK && lists[lexicalIndex]!.hits.length === lexicalDepth &&
          lexicalDepth < input.topK * maxDeepening
        ) {
          lexicalDepth *= 2
          lists[lexicalIndex] = { ...lists[lexicalIndex]!, hits: yield* lexicalHits(lexicalDepth, true) }
          collapsed = yield* resultsOf(input, lists, rerank, known)
        }
        const results = collapsed.map((item) => ({
          chunk_id: item.id,
          document_id: item.detail.document_id,
          source_id: item.detail.source_id,
          document_title: item.detail.document_title,
          text: item.detail.text,
          score: item.score,
          section_path: item.detail.section_path,
          char_start: item.detail.char_start,
          char_end: item.detail.char_end,
          speaker: item.detail.speaker,
          spoken_at: item.detail.spoken_at?.toISOString() ?? null,
          spoken_until: item.detail.spoken_until?.toISOString() ?? null,
          messages: item.detail.messages,
          explanation: input.strategy === "multi"
            ? { fused_score: item.fusedScore, lists: item.contributions, rerank: item.reranked }
            : null,
          duplicates: item.duplicates
        }))
        const finished = yield* Clock.currentTimeMillis
        let explorationId: string | null = null
        if (input.saveExploration) {
          explorationId = yield* sql.withTransaction(Effect.gen(function*() {
            // What was deleted since it was retrieved must not come back through the saved exploration.
            const stored = yield* erasure.storableExploration({ sourceIds, hits: results })
            if (sourceIds.length > 0 && stored.sourceIds.length === 0) return null
            const [row] = yield* sql<{ id: string }>`
              INSERT INTO explorations (owner_id, kind, query, strategy, top_k, source_ids, results, saved_hit_count)
              VALUES (${input.owner}, 'search', ${input.query}, ${input.strategy}, ${input.topK},
                ${JSON.stringify(stored.sourceIds)}::jsonb, ${JSON.stringify(stored.hits)}::jsonb, ${stored.hits.length})
              RETURNING id`
            return row!.id
          })).pipe(Effect.orDie)
        }
        return {
          query: input.query,
          strategy: input.strategy,
          took_ms: finished - started,
          searched_source_ids: sourceIds,
          lists: lists.map((list) => list.name),
          reranked: rerank,
          notices,
          exploration_id: explorationId,
          results
        } satisfies SearchResponse
      })

      return Retriever.of({ search, denseStatus })
    })
  ).pipe(Layer.provide(Erasure.layer))
}
