import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  EntitiesQuery,
  EntityDetail,
  EntityOut,
  EventOut,
  EventsQuery,
  GraphOut,
  GraphQuery
} from "../domain/Graph.ts"
import { Page } from "../domain/Page.ts"
import { IdText } from "../domain/Text.ts"
import { BadRequest, NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"
import { SourceParams } from "./Sources.ts"

const EntityParams = { ...SourceParams, entity_id: IdText }

const visibility = "Only events of ready documents (their current version) count, as in search; an entity is " +
  "listed while such a document mentions it."

export class GraphApi extends HttpApiGroup.make("graph")
  .add(
    HttpApiEndpoint.get("entities", "/sources/:source_id/entities", {
      params: SourceParams,
      query: EntitiesQuery,
      success: Page(EntityOut),
      error: [NotFound, BadRequest]
    }).annotateMerge(OpenApi.annotations({
      summary: "The source's entities",
      description: `Filter by kind and q (case-insensitive substring of the name or an alias); sort mentions ` +
        `(default, most mentioned first) or recent (latest last_seen first, undated last); ties by id. ${visibility}`
    })),
    HttpApiEndpoint.get("entity", "/sources/:source_id/entities/:entity_id", {
      params: EntityParams,
      success: EntityDetail,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "An entity with its events, related entities and chunks",
      description: "events: up to 100 in time order (undated last). related: up to 50 entities sharing events " +
        "with it, with the number of shared events and up to 10 of their ids. chunks: up to 20 chunks naming it. " +
        `404 entity_not_found for an entity of another source or user. ${visibility}`
    })),
    HttpApiEndpoint.get("events", "/sources/:source_id/events", {
      params: SourceParams,
      query: EventsQuery,
      success: Page(EventOut),
      error: [NotFound, BadRequest]
    }).annotateMerge(OpenApi.annotations({
      summary: "The source's events in time order",
      description: "Oldest first, undated events last, ties by id. from/to keep events whose [start, end) " +
        "overlaps [from, to) (undated events never match); from must be before to (422). entity_id keeps the " +
        `events the entity takes part in (404 entity_not_found if it is not in the source); kind is the verb ` +
        `lemma. ${visibility}`
    })),
    HttpApiEndpoint.get("graph", "/graph", {
      query: GraphQuery,
      success: GraphOut,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "Entities and events as a graph for visualisation",
      description: "Nodes are entities (entity:<id>) and events (event:<id>); edges are participations " +
        "(event → entity, with the role) and relations (two entities sharing events, weight = how many). " +
        "Without a seed: the most mentioned entities (up to half the limit), the events among them, then further " +
        "entities. With seed_entity_id or seed_event_id (not both, 422): breadth-first, each depth level adds the " +
        "events of the entities found so far and those events' participants (depth 1: the seed's events and " +
        "their participants, or the seed event's participants). At most limit nodes; truncated says when some " +
        "were left out. source_ids: comma-separated and/or repeated; a source you do not own is 404; a seed " +
        "outside the sources is 404 entity_not_found / event_not_found."
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Events and entities",
    description: "The event–entity structure extracted from each source's documents"
  }))
{}
