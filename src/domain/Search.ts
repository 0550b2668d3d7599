import { Schema } from "effect"
import { ChunkMessages } from "./Chunk.ts"
import { characters, IdText, Text } from "./Text.ts"

export const Strategy = Schema.Literals(["vector", "lexical", "multi"]).annotate({
  description: "vector: dense similarity; lexical: BM25 over stemmed words; multi (default): those and the " +
    "event–entity graph, fused by rank"
})
export type Strategy = typeof Strategy.Type

export const Query = Text.check(
  characters(1, 4000),
  Schema.makeFilter((s: string) => s.trim().length >= 1, { message: "must not be empty" })
).annotate({ description: "1 to 4,000 characters (Unicode code points), not only whitespace" })

export const TopK = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 50 }, { message: "must be an integer from 1 to 50" }))

export const SourceSearchRequest = Schema.Struct({
  query: Query,
  strategy: Schema.optionalKey(Strategy),
  top_k: Schema.optionalKey(TopK).annotate({ description: "1 to 50, default 10" }),
  rerank: Schema.optionalKey(Schema.Boolean).annotate({
    description: "strategy multi only: reorder the top fused candidates (ENGRAM_RERANK_CANDIDATES, default 30) " +
      "with the cross-encoder of ENGRAM_RERANK_MODEL_DIR. Default: true when a reranker is configured. " +
      "true without a usable reranker is 503 rerank_unavailable; true with another strategy is 422."
  })
}).annotate({ identifier: "SourceSearchRequest" })

export const SearchRequest = Schema.Struct({
  ...SourceSearchRequest.fields,
  source_ids: Schema.optionalKey(
    Schema.Array(IdText).check(
      Schema.isMaxLength(256, { message: "must have at most 256 ids" })
    )
  ).annotate({ description: "At most 256; default: every source of the caller. A source you do not own is 404." }),
  save_exploration: Schema.optionalKey(Schema.Boolean).annotate({
    description: "Store the query and its results as an exploration record; its id is returned"
  })
}).annotate({ identifier: "SearchRequest" })

export const ListContribution = Schema.Struct({
  list: Schema.String.annotate({ description: "vector, lexical or graph" }),
  rank: Schema.Int,
  score: Schema.Number.annotate({
    description: "The list's own score: cosine similarity, BM25, or the graph's event score (query entities an " +
      "event involves, one-hop neighbours at half weight, plus a boost inside the query's time)"
  })
})

export const SearchResult = Schema.Struct({
  chunk_id: Schema.String,
  document_id: Schema.String,
  source_id: Schema.String,
  document_title: Schema.String,
  text: Schema.String,
  score: Schema.Number.annotate({
    description: "vector: cosine similarity; lexical: BM25; multi: the fused reciprocal-rank score, or the " +
      "reranker's relevance (0..1) when reranked"
  }),
  section_path: Schema.Array(Schema.String),
  char_start: Schema.Int,
  char_end: Schema.Int,
  ...ChunkMessages,
  explanation: Schema.NullOr(Schema.Struct({
    fused_score: Schema.Number,
    lists: Schema.Array(ListContribution),
    rerank: Schema.NullOr(Schema.Struct({
      score: Schema.Number.annotate({ description: "The cross-encoder's relevance, 0..1" }),
      fused_rank: Schema.Int.annotate({ description: "The rank fusion gave this result before reranking" })
    })).annotate({ description: "null when the results were not reranked" })
  })).annotate({
    description: "multi only: each contributing list's rank and score, the fused score and the rerank, if any"
  }),
  duplicates: Schema.Array(Schema.String).annotate({
    description: "Chunks with (nearly) the same text that were collapsed into this result"
  })
}).annotate({ identifier: "SearchResult" })

export const SearchResponse = Schema.Struct({
  query: Schema.String,
  strategy: Strategy,
  took_ms: Schema.Number,
  searched_source_ids: Schema.Array(Schema.String),
  lists: Schema.Array(Schema.String).annotate({
    description: "The ranked lists that produced the results. multi has a graph list for questions and requests " +
      "(\"Where…\", \"Who…\", \"…?\", \"List…\") that name a known entity or a time, and for other queries " +
      "whose time holds dated events; a statement or keyword query without such a time is answered by the text lists"
  }),
  reranked: Schema.Boolean.annotate({ description: "The results were reordered by the cross-encoder" }),
  notices: Schema.Array(Schema.String).annotate({
    description: "What limited this search, e.g. that dense retrieval is unavailable and why"
  }),
  exploration_id: Schema.NullOr(Schema.String).annotate({
    description: "The saved exploration with save_exploration; null otherwise, or when every searched source was " +
      "deleted while the search ran"
  }),
  results: Schema.Array(SearchResult)
}).annotate({ identifier: "SearchResponse" })
export type SearchResponse = typeof SearchResponse.Type
