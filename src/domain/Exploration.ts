import { Schema } from "effect"
import { EntityKind, IsoInstant } from "./Graph.ts"
import { Page, PageQuery } from "./Page.ts"
import { Query, SearchResult, Strategy, TopK } from "./Search.ts"
import { IdText, Text, textOf, trimmedTextOf } from "./Text.ts"

/** A node of the knowledge universe: `<type>:<id>`, as the graph and the universe name them. */
export const NodeId = Text.check(
  Schema.isPattern(/^(entity|event|document|community):\S{1,100}$/, {
    message: "must be entity:<id>, event:<id>, document:<id> or community:<id>"
  })
).annotate({ description: "entity:<id>, event:<id>, document:<id> or community:<id>", examples: ["entity:3f2a…"] })

export const maxSeedNodes = 100
export const maxExpandedNodes = 1000

export const ExplorationKind = Schema.Literals(["search", "universe"]).annotate({
  description: "search: saved by POST /search with save_exploration; universe: saved here"
})

export const ExplorationFilters = Schema.Struct({
  node_kinds: Schema.optionalKey(
    Schema.Array(Schema.Literals(["entity", "event", "document", "community"])).check(Schema.isMaxLength(4))
  ),
  entity_kinds: Schema.optionalKey(Schema.Array(EntityKind).check(Schema.isMaxLength(7))),
  event_kinds: Schema.optionalKey(
    Schema.Array(textOf(1, 100)).check(Schema.isMaxLength(50, { message: "must have at most 50 kinds" }))
  ).annotate({ description: "Event kinds (verb lemmas), at most 50" })
}).annotate({ identifier: "ExplorationFilters", description: "What the view showed; stored as given" })

export const ExplorationWindow = Schema.Struct({
  from: Schema.optionalKey(IsoInstant),
  to: Schema.optionalKey(IsoInstant)
}).annotate({ identifier: "ExplorationWindow", description: "The time window of the view; from before to (422)" })

export const ExplorationCreate = Schema.Struct({
  title: trimmedTextOf(1, 200).annotate({ description: "1 to 200 characters, trimmed" }),
  query: Schema.optionalKey(Query).annotate({
    description: "A search to keep: run now (strategy, top_k, source_ids as in POST /search) and its hits stored, " +
      "so a replay can say what changed"
  }),
  strategy: Schema.optionalKey(Strategy),
  top_k: Schema.optionalKey(TopK).annotate({ description: "1 to 50, default 10" }),
  source_ids: Schema.optionalKey(Schema.Array(IdText).check(
    Schema.isMaxLength(256, { message: "must have at most 256 ids" })
  )).annotate({ description: "At most 256; default every source of the caller. A source you do not own is 404." }),
  seed_node_ids: Schema.optionalKey(Schema.Array(NodeId).check(
    Schema.isMaxLength(maxSeedNodes, { message: `must have at most ${maxSeedNodes} nodes` })
  )).annotate({ description: "The nodes the view started from" }),
  expanded_node_ids: Schema.optionalKey(Schema.Array(NodeId).check(
    Schema.isMaxLength(maxExpandedNodes, { message: `must have at most ${maxExpandedNodes} nodes` })
  )).annotate({ description: "The nodes the view opened" }),
  filters: Schema.optionalKey(ExplorationFilters),
  window: Schema.optionalKey(ExplorationWindow)
}).annotate({
  identifier: "ExplorationCreate",
  examples: [{
    title: "Acme's acquisitions",
    query: "Which companies did Acme acquire?",
    strategy: "multi",
    top_k: 10,
    seed_node_ids: ["entity:5f1c2b9e-0d4e-4c55-9a3e-6b7f8a9b0c1d"],
    expanded_node_ids: ["event:9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"],
    filters: { node_kinds: ["entity", "event"], entity_kinds: ["organization"] },
    window: { from: "2020-01-01", to: "2025-01-01" }
  }]
})
export type ExplorationCreate = typeof ExplorationCreate.Type

export const ExplorationUpdate = Schema.Struct({
  title: trimmedTextOf(1, 200).annotate({ description: "1 to 200 characters, trimmed" })
}).annotate({ identifier: "ExplorationUpdate", examples: [{ title: "Acme, 2020–2024" }] })

const explorationFields = {
  id: Schema.String,
  title: Schema.String.annotate({ description: "For a search-saved exploration, the query until renamed" }),
  kind: ExplorationKind,
  query: Schema.NullOr(Schema.String),
  strategy: Schema.NullOr(Strategy),
  top_k: Schema.NullOr(Schema.Int),
  source_ids: Schema.Array(Schema.String).annotate({ description: "The sources searched or viewed that still exist" }),
  seed_node_ids: Schema.Array(Schema.String),
  expanded_node_ids: Schema.Array(Schema.String),
  filters: ExplorationFilters,
  window: Schema.Struct({ from: Schema.NullOr(Schema.String), to: Schema.NullOr(Schema.String) }),
  hit_count: Schema.Int.annotate({ description: "Hits stored" }),
  erased_hits: Schema.Int.annotate({
    description: "Hits removed since saving because their documents or sources were deleted"
  }),
  created_at: Schema.String,
  updated_at: Schema.String
}

export const ExplorationSummary = Schema.Struct(explorationFields).annotate({ identifier: "ExplorationSummary" })
export type ExplorationSummary = typeof ExplorationSummary.Type

const exampleSummary: ExplorationSummary = {
  id: "7d5e0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
  title: "Acme's acquisitions",
  kind: "universe",
  query: "Which companies did Acme acquire?",
  strategy: "multi",
  top_k: 10,
  source_ids: ["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"],
  seed_node_ids: ["entity:5f1c2b9e-0d4e-4c55-9a3e-6b7f8a9b0c1d"],
  expanded_node_ids: [],
  filters: { node_kinds: ["entity", "event"] },
  window: { from: "2020-01-01T00:00:00.000Z", to: null },
  hit_count: 1,
  erased_hits: 0,
  created_at: "2025-05-01T09:30:00.000Z",
  updated_at: "2025-05-01T09:30:00.000Z"
}

const exampleHit: typeof SearchResult.Type = {
  chunk_id: "c0ffee00-1111-4222-8333-944455556666",
  document_id: "9a8b7c6d-5e4f-3a2b-1c0d-ef1234567890",
  source_id: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
  document_title: "deal",
  text: "On March 3, 2021, Acme Corporation acquired Globex in Berlin.",
  score: 0.0328,
  section_path: [],
  char_start: 0,
  char_end: 61,
  speaker: null,
  spoken_at: null,
  spoken_until: null,
  messages: [],
  explanation: null,
  duplicates: []
}

export const ExplorationOut = Schema.Struct({
  ...explorationFields,
  results: Schema.Array(SearchResult).annotate({ description: "The hits as stored when saved" })
}).annotate({ identifier: "ExplorationOut", examples: [{ ...exampleSummary, results: [exampleHit] }] })
export type ExplorationOut = typeof ExplorationOut.Type

export const ExplorationsQuery = { ...PageQuery }

export const ExplorationPage = Page(ExplorationSummary).annotate({
  identifier: "ExplorationPage",
  examples: [{ items: [exampleSummary], next_cursor: null }]
})

export const DeletedExploration = Schema.Struct({ id: Schema.String, deleted: Schema.Boolean })
  .annotate({ identifier: "DeletedExploration", examples: [{ id: exampleSummary.id, deleted: true }] })

export const VanishedHit = Schema.Struct({
  hit: SearchResult.annotate({ description: "The hit as stored" }),
  reason: Schema.Literals(["gone", "outranked"]).annotate({
    description: "gone: the chunk is no longer searchable (its document was reprocessed, changed or is not " +
      "ready); outranked: it is still there but no longer among the top_k"
  })
}).annotate({ identifier: "VanishedHit" })

export const ExplorationReplay = Schema.Struct({
  exploration_id: Schema.String,
  replayed_at: Schema.String,
  query: Schema.NullOr(Schema.String),
  strategy: Schema.NullOr(Strategy),
  top_k: Schema.NullOr(Schema.Int),
  searched_source_ids: Schema.Array(Schema.String),
  notices: Schema.Array(Schema.String),
  results: Schema.Array(SearchResult).annotate({ description: "The hits the query finds now" }),
  new_hits: Schema.Array(SearchResult).annotate({ description: "Hits now that were not stored (by chunk id)" }),
  vanished_hits: Schema.Array(VanishedHit).annotate({ description: "Stored hits not found now" }),
  kept_hits: Schema.Int.annotate({ description: "Stored hits found again" }),
  erased_hits: Schema.Int.annotate({
    description: "Stored hits removed since saving with their deleted documents or sources (their text and ids " +
      "went with them)"
  }),
  nodes: Schema.Struct({
    present: Schema.Array(Schema.String).annotate({ description: "Seed and expanded nodes that still exist" }),
    vanished: Schema.Array(Schema.String).annotate({
      description: "Seed and expanded nodes that no longer exist (or are no longer searchable)"
    }),
    unchecked: Schema.Array(Schema.String).annotate({ description: "Community nodes, not checked" })
  })
}).annotate({
  identifier: "ExplorationReplay",
  examples: [{
    exploration_id: exampleSummary.id,
    replayed_at: "2025-06-01T12:00:00.000Z",
    query: "Which companies did Acme acquire?",
    strategy: "multi",
    top_k: 10,
    searched_source_ids: exampleSummary.source_ids,
    notices: [],
    results: [exampleHit],
    new_hits: [exampleHit],
    vanished_hits: [],
    kept_hits: 0,
    erased_hits: 1,
    nodes: { present: ["entity:5f1c2b9e-0d4e-4c55-9a3e-6b7f8a9b0c1d"], vanished: [], unchecked: [] }
  }]
})
export type ExplorationReplay = typeof ExplorationReplay.Type
