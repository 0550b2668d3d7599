import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ExpandOut, ExpandRequest, ManifestQuery, NodeDetail, NodeParams, UniverseManifest } from "../domain/Universe.ts"
import { BadRequest, NotFound } from "./Errors.ts"
import { Authentication } from "./Security.ts"

const nodeIds = "Node ids: community:<source id>:<number> (numbered by size in the source's last map), " +
  "entity:<id>, event:<id>, document:<id>; chunk:<id> appears as a leaf and is not expanded. A node of another " +
  "user, of a source outside source_ids, or no longer in the data is 404 node_not_found."

export class UniverseApi extends HttpApiGroup.make("universe")
  .add(
    HttpApiEndpoint.get("manifest", "/universe/manifest", {
      query: ManifestQuery,
      success: UniverseManifest,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "The overview of the caller's knowledge",
      description: "Per source: counts, entity kinds, the time span of dated events, and its map — communities " +
        "of entities (Louvain over the events they share; a community over 1,000 entities is split again; " +
        "entities with too few links form loose groups) with a label (the most central members), size, top " +
        "members, time span and a position (ForceAtlas2, the same while the data does not change), and the " +
        "weighted edges between communities (up to 5,000, heaviest first). Served from aggregates recomputed in " +
        "the background once ingestion settles, never per request: computed_at says when, pending whether a " +
        "recompute will follow. Each source is laid out in its own frame (bounds)."
    })),
    HttpApiEndpoint.post("expand", "/universe/expand", {
      payload: ExpandRequest,
      success: ExpandOut,
      error: [NotFound, BadRequest]
    }).annotateMerge(OpenApi.annotations({
      summary: "A node's neighbours, page by page",
      description: "community → its entities (member; evidence: shared events with other members). entity → " +
        "related entities (evidence: shared events), its events (participates; evidence: the event's " +
        "participants) and documents (mentioned_in; evidence: mentions). event → participants (evidence ranks " +
        "actor 4, object 3, place 2, other 1; role given), its chunks and document. document → the entities it " +
        "mentions, the events it states, its chunks. kinds picks and orders the kinds; within a kind the " +
        "strongest evidence comes first, ties by id; a page continues into the next kind. from/to keep events " +
        "overlapping the window (and count related entities' evidence within it; community members by their " +
        "first and last dated event). remaining says how many neighbours follow the page. Entities carry their " +
        "map position; events sit among their participants, documents among their entities, chunks by their " +
        `parent. ${nodeIds}`
    })),
    HttpApiEndpoint.get("node", "/universe/nodes/:node_id", {
      params: NodeParams,
      success: NodeDetail,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({
      summary: "One node with its provenance",
      description: "entity: aliases, description, time span, counts, community, the documents and chunks (quoted) " +
        "naming it. event: statement, time, participants, its document and chunks (quoted). community: members, " +
        "linked communities. document: counts and its first chunk. " + nodeIds
    }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Universe",
    description: "The knowledge universe: an overview map, then expansion on demand"
  }))
{}
