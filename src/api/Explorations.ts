import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  DeletedExploration,
  ExplorationCreate,
  ExplorationOut,
  ExplorationPage,
  ExplorationReplay,
  ExplorationsQuery,
  ExplorationUpdate
} from "../domain/Exploration.ts"
import { IdText } from "../domain/Text.ts"
import { BadRequest, NotFound, ServiceUnavailable } from "./Errors.ts"
import { Authentication } from "./Security.ts"

const ExplorationParams = { exploration_id: IdText }

const owned = "Another user's exploration is 404 exploration_not_found, as a missing one."

export class ExplorationsApi extends HttpApiGroup.make("explorations")
  .add(
    HttpApiEndpoint.post("create", "/universe/explorations", {
      payload: ExplorationCreate,
      success: ExplorationOut.pipe(HttpApiSchema.status(201)),
      error: [NotFound, ServiceUnavailable]
    }).annotateMerge(OpenApi.annotations({
      summary: "Save an exploration",
      description: "Stores a universe view: its title, the nodes it started from (seed_node_ids) and opened " +
        "(expanded_node_ids), its filters and time window, and optionally a query, which is searched now " +
        "(strategy default multi, top_k default 10, over source_ids or every source of the caller) with its hits " +
        "stored. Entity, event and document nodes must belong to those sources (404 node_not_found); community " +
        "nodes are stored as given. A source you do not own is 404 source_not_found. window.from after window.to, " +
        "strategy or top_k without a query, and a title over 200 characters are 422."
    })),
    HttpApiEndpoint.get("list", "/universe/explorations", {
      query: ExplorationsQuery,
      success: ExplorationPage,
      error: BadRequest
    }).annotateMerge(OpenApi.annotations({
      summary: "The caller's saved explorations",
      description: "Newest first (created_at, then id), without the stored hits; includes those POST /search " +
        "saved with save_exploration (kind search, titled by their query until renamed)."
    })),
    HttpApiEndpoint.get("get", "/universe/explorations/:exploration_id", {
      params: ExplorationParams,
      success: ExplorationOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "A saved exploration with its stored hits",
      description: `What was saved, as saved, less what deletions erased since (counted in erased_hits). ${owned}`
    })),
    HttpApiEndpoint.patch("rename", "/universe/explorations/:exploration_id", {
      params: ExplorationParams,
      payload: ExplorationUpdate,
      success: ExplorationOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Rename a saved exploration",
      description: `Only the title changes (1 to 200 characters, trimmed). ${owned}`
    })),
    HttpApiEndpoint.delete("remove", "/universe/explorations/:exploration_id", {
      params: ExplorationParams,
      success: DeletedExploration,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a saved exploration", description: owned })),
    HttpApiEndpoint.post("replay", "/universe/explorations/:exploration_id/replay", {
      params: ExplorationParams,
      success: ExplorationReplay,
      error: [NotFound, ServiceUnavailable]
    }).annotateMerge(OpenApi.annotations({
      summary: "Replay a saved exploration against the current data",
      description: "Runs the saved query again (same strategy and top_k, over the saved sources that still exist) " +
        "and compares by chunk id: new_hits were not stored, vanished_hits were stored and are not found now " +
        "(gone from the searchable chunks, or outranked), erased_hits were removed with deleted documents. Seed and " +
        "expanded nodes are checked: entities and documents that still exist and events of searchable documents " +
        "are present, the others vanished; community nodes are unchecked. The saved exploration is not changed. " +
        `503 when the saved strategy cannot run now (vector without a model). ${owned}`
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Universe explorations",
    description: "Saved searches and universe views, read back and replayed"
  }))
{}
