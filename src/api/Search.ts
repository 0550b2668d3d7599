import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { SearchRequest, SearchResponse, SourceSearchRequest } from "../domain/Search.ts"
import { NotFound, ServiceUnavailable } from "./Errors.ts"
import { Authentication } from "./Security.ts"
import { SourceParams } from "./Sources.ts"

const description = "Only chunks of documents whose status is ready are returned. strategy vector embeds the query " +
  "with the index's model and searches the HNSW index (503 dense_unavailable when no model is usable — never an " +
  "empty list that looks like no knowledge); lexical is BM25 (k1 1.2, b 0.75 by default) over English-stemmed " +
  "words, with websearch-style terms; multi (the default) fuses the available lists by weighted reciprocal rank " +
  "(k 60), collapses near-duplicate chunks, explains each result's ranks and says in notices when a list was " +
  "unavailable, and in which year a month or day named without one was read (the latest the searched sources have " +
  "events in up to now, else the next). Unknown fields and out-of-range values are 422."

export class SearchApi extends HttpApiGroup.make("search")
  .add(
    HttpApiEndpoint.post("search", "/search", {
      payload: SearchRequest,
      success: SearchResponse,
      error: [NotFound, ServiceUnavailable]
    }).annotateMerge(OpenApi.annotations({ summary: "Search the caller's sources", description })),
    HttpApiEndpoint.post("searchSource", "/sources/:source_id/search", {
      params: SourceParams,
      payload: SourceSearchRequest,
      success: SearchResponse,
      error: [NotFound, ServiceUnavailable]
    }).annotateMerge(OpenApi.annotations({ summary: "Search one source", description }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Search", description: "Retrieval over sources" }))
{}
