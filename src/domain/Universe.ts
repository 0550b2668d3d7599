import { Schema } from "effect"
import { EntityKind, EventTime, IsoInstant, ParticipantRole } from "./Graph.ts"
import { characters, Text } from "./Text.ts"

/**
 * A node of the universe: `community:<source id>:<number>`, `entity:<id>`, `event:<id>`, `document:<id>`; chunks
 * (`chunk:<id>`) appear as leaves of events and documents and are not expanded. Ids are stable while the data does not change (a community's
 * number is its rank by size in the source's last computed map).
 */
export const NodeId = Text.check(characters(1, 220)).check(
  Schema.makeFilter((s: string) => nodeIdPattern.test(s), {
    message: "must be community:<source id>:<number>, entity:<id>, event:<id> or document:<id>"
  })
).annotate({ examples: ["community:6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f:0", "entity:9b2c7d4e-1f3a-4b5c-8d6e-7f8091a2b3c4"] })

const nodeIdPattern = /^(?:community:[^\s:]{1,100}:\d{1,6}|(?:entity|event|document):[^\s:]{1,100})$/

export const NodeType = Schema.Literals(["community", "entity", "event", "document", "chunk"])
export type NodeType = typeof NodeType.Type

export const NeighbourKind = Schema.Literals(["entity", "event", "document", "chunk"])
export type NeighbourKind = typeof NeighbourKind.Type

export const Position = Schema.Struct({ x: Schema.Number, y: Schema.Number }).annotate({
  identifier: "UniversePosition",
  description: "2-D layout coordinates in the source's own frame; the same while the data does not change"
})

const TimeSpan = Schema.Struct({
  start: Schema.String.annotate({ description: "ISO 8601 UTC" }),
  end: Schema.String.annotate({ description: "ISO 8601 UTC" })
}).annotate({ identifier: "UniverseTimeSpan" })

const KindCount = Schema.Struct({ kind: Schema.String, count: Schema.Int }).annotate({ identifier: "KindCount" })

export const CommunityMember = Schema.Struct({
  id: Schema.String.annotate({ description: "The member's node id (entity:<id>)" }),
  entity_id: Schema.String,
  name: Schema.String,
  kind: Schema.String,
  score: Schema.Int.annotate({
    description: "Shared events with the other members (its centrality); mentions in a loose group"
  })
}).annotate({ identifier: "CommunityMember" })

export const CommunityOut = Schema.Struct({
  id: Schema.String.annotate({ description: "community:<source id>:<number>, numbered by size" }),
  source_id: Schema.String,
  label: Schema.String.annotate({ description: "Its most central members' names" }),
  loose: Schema.Boolean.annotate({
    description: "A group of entities with too few links to form a community (isolated entities, pairs)"
  }),
  size: Schema.Int.annotate({ description: "Entities in it" }),
  event_count: Schema.Int.annotate({ description: "Events any member takes part in" }),
  top_members: Schema.Array(CommunityMember).annotate({ description: "Up to 5, most central first" }),
  time_span: Schema.NullOr(TimeSpan).annotate({ description: "From the members' earliest to latest dated event" }),
  position: Position,
  radius: Schema.Number.annotate({ description: "Its members lie within this distance of its position" })
}).annotate({ identifier: "CommunityOut" })

export const CommunityEdge = Schema.Struct({
  source: Schema.String.annotate({ description: "A community node id (the lower number)" }),
  target: Schema.String,
  weight: Schema.Int.annotate({ description: "Events shared by members of the two communities" })
}).annotate({ identifier: "CommunityEdge" })

export const SourceUniverse = Schema.Struct({
  source_id: Schema.String,
  name: Schema.String,
  computed_at: Schema.NullOr(Schema.String).annotate({ description: "When the aggregates were last computed" }),
  pending: Schema.Boolean.annotate({ description: "The data changed since; a recompute will follow" }),
  counts: Schema.Struct({
    documents: Schema.Int.annotate({ description: "Ready documents" }),
    chunks: Schema.Int,
    entities: Schema.Int,
    events: Schema.Int,
    dated_events: Schema.Int,
    undated_events: Schema.Int
  }),
  entity_kinds: Schema.Array(KindCount),
  time_span: Schema.NullOr(TimeSpan).annotate({ description: "Of its dated events" }),
  bounds: Schema.NullOr(Schema.Struct({
    min_x: Schema.Number,
    min_y: Schema.Number,
    max_x: Schema.Number,
    max_y: Schema.Number
  })).annotate({
    description: "The extent of the source's map in the caller's plane: the caller's sources lie side by side, " +
      "left to right in the order they were created"
  })
}).annotate({ identifier: "SourceUniverse" })

export const UniverseManifest = Schema.Struct({
  computed_at: Schema.NullOr(Schema.String).annotate({
    description: "The oldest computation among the sources (null if one has never been computed)"
  }),
  pending: Schema.Boolean.annotate({ description: "A recompute is pending for at least one of the sources" }),
  sources: Schema.Array(SourceUniverse),
  entity_kinds: Schema.Array(KindCount).annotate({ description: "Over all the sources, most frequent first" }),
  time_span: Schema.NullOr(TimeSpan),
  communities: Schema.Array(CommunityOut).annotate({ description: "Per source, largest first" }),
  community_edges: Schema.Array(CommunityEdge).annotate({ description: "Heaviest first" })
}).annotate({
  identifier: "UniverseManifest",
  examples: [{
    computed_at: "2024-05-01T10:00:02.000Z",
    pending: false,
    sources: [{
      source_id: "6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f",
      name: "Notes",
      computed_at: "2024-05-01T10:00:02.000Z",
      pending: false,
      counts: { documents: 12, chunks: 40, entities: 35, events: 80, dated_events: 60, undated_events: 20 },
      entity_kinds: [{ kind: "person", count: 20 }, { kind: "organization", count: 15 }],
      time_span: { start: "2023-01-10T00:00:00.000Z", end: "2024-04-30T00:00:00.000Z" },
      bounds: { min_x: -120.5, min_y: -80, max_x: 140, max_y: 95.25 }
    }],
    entity_kinds: [{ kind: "person", count: 20 }, { kind: "organization", count: 15 }],
    time_span: { start: "2023-01-10T00:00:00.000Z", end: "2024-04-30T00:00:00.000Z" },
    communities: [{
      id: "community:6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f:0",
      source_id: "6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f",
      label: "Acme Corporation, Jane Smith, Globex",
      loose: false,
      size: 14,
      event_count: 31,
      top_members: [{
        id: "entity:9b2c7d4e-1f3a-4b5c-8d6e-7f8091a2b3c4",
        entity_id: "9b2c7d4e-1f3a-4b5c-8d6e-7f8091a2b3c4",
        name: "Acme Corporation",
        kind: "organization",
        score: 17
      }],
      time_span: { start: "2023-01-10T00:00:00.000Z", end: "2024-02-01T00:00:00.000Z" },
      position: { x: 12.5, y: -40 },
      radius: 47.4
    }],
    community_edges: [{
      source: "community:6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f:0",
      target: "community:6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f:1",
      weight: 3
    }]
  }]
})
export type UniverseManifest = typeof UniverseManifest.Type

export const SourceIdsQuery = Schema.optionalKey(Schema.Array(Text.check(characters(0, 10_000)))).annotate({
  description: "Comma-separated and/or repeated, at most 256; default: every source of the caller. A source that " +
    "is not yours is 404."
})

export const ManifestQuery = { source_ids: SourceIdsQuery }

export const ExpandRequest = Schema.Struct({
  node_id: NodeId,
  kinds: Schema.optionalKey(
    Schema.Array(NeighbourKind).check(
      Schema.isMinLength(1),
      Schema.isMaxLength(4),
      Schema.makeFilter((kinds: ReadonlyArray<string>) => new Set(kinds).size === kinds.length, {
        message: "must not repeat a kind"
      })
    )
  ).annotate({ description: "Which neighbours, in this order (default: every kind the node has)" }),
  from: Schema.optionalKey(IsoInstant).annotate({ description: "Time window start (see the endpoint)" }),
  to: Schema.optionalKey(IsoInstant).annotate({ description: "Time window end, after from" }),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }, { message: "must be an integer from 1 to 100" }))
  ).annotate({ description: "Neighbours per page, 1 to 100 (default 20)" }),
  cursor: Schema.optionalKey(Text.check(characters(1, 500))).annotate({
    description: "The next_cursor of the previous page of the same expansion"
  }),
  source_ids: Schema.optionalKey(Schema.Array(Text.check(characters(1, 100))).check(Schema.isMaxLength(256)))
    .annotate({ description: "Restrict to these sources (default: all of yours); the node must be in one of them" })
}).annotate({
  identifier: "ExpandRequest",
  examples: [{ node_id: "entity:9b2c7d4e-1f3a-4b5c-8d6e-7f8091a2b3c4", kinds: ["entity", "event"], limit: 20 }]
})
export type ExpandRequest = typeof ExpandRequest.Type

export const NodeRef = Schema.Struct({
  id: Schema.String,
  type: NodeType,
  label: Schema.String,
  source_id: Schema.String,
  position: Position
}).annotate({ identifier: "UniverseNodeRef" })
export type NodeRef = typeof NodeRef.Type

export const ExpandItem = Schema.Struct({
  id: Schema.String.annotate({ description: "The neighbour's node id" }),
  type: NodeType,
  ref_id: Schema.String.annotate({ description: "The entity's, event's, document's or chunk's own id" }),
  label: Schema.String.annotate({ description: "Name, statement, title, or the start of a chunk's text" }),
  kind: Schema.NullOr(Schema.String).annotate({ description: "Entity kind, event kind or document format" }),
  source_id: Schema.String,
  relation: Schema.String.annotate({
    description: "member, related, participates, mentioned_in, participant, source_chunk, from_document, mentions, " +
      "states or contains"
  }),
  role: Schema.NullOr(ParticipantRole).annotate({ description: "An event's participant's role" }),
  evidence: Schema.Int.annotate({ description: "What ranks it (see the endpoint)" }),
  time: Schema.NullOr(EventTime),
  position: Position
}).annotate({ identifier: "ExpandItem" })
export type ExpandItem = typeof ExpandItem.Type

export const ExpandOut = Schema.Struct({
  node: NodeRef,
  items: Schema.Array(ExpandItem),
  counts: Schema.Array(Schema.Struct({ kind: NeighbourKind, total: Schema.Int })).annotate({
    description: "Neighbours of each requested kind (within the window)"
  }),
  total: Schema.Int,
  remaining: Schema.Int.annotate({ description: "Neighbours after this page" }),
  next_cursor: Schema.NullOr(Schema.String)
}).annotate({
  identifier: "ExpandOut",
  examples: [{
    node: {
      id: "entity:9b2c7d4e-1f3a-4b5c-8d6e-7f8091a2b3c4",
      type: "entity",
      label: "Helen Marsh",
      source_id: "6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f",
      position: { x: 12.5, y: -3.25 }
    },
    items: [{
      id: "event:0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a",
      type: "event",
      ref_id: "0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f5a",
      label: "Helen Marsh chaired the board meeting",
      kind: "chair",
      source_id: "6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f",
      relation: "participates",
      role: "actor",
      evidence: 3,
      time: null,
      position: { x: 13.1, y: -2.9 }
    }],
    counts: [{ kind: "event", total: 7 }],
    total: 7,
    remaining: 6,
    next_cursor: "eyJrIjoiMyJ9"
  }]
})
export type ExpandOut = typeof ExpandOut.Type

const NodeParams = { node_id: NodeId }
export { NodeParams }

const Quote = Schema.Struct({
  chunk_id: Schema.String,
  document_id: Schema.String,
  document_title: Schema.String,
  ordinal: Schema.Int,
  quote: Schema.String.annotate({ description: "About 240 characters of the chunk, around the name where it occurs" })
}).annotate({ identifier: "UniverseQuote" })

const DocumentRef = Schema.Struct({
  id: Schema.String,
  document_id: Schema.String,
  title: Schema.String,
  mentions: Schema.Int
}).annotate({ identifier: "UniverseDocumentRef" })

export const EntityNode = Schema.Struct({
  type: Schema.Literal("entity"),
  id: Schema.String,
  ref_id: Schema.String,
  source_id: Schema.String,
  label: Schema.String,
  kind: EntityKind,
  aliases: Schema.Array(Schema.String),
  description: Schema.NullOr(Schema.String),
  time_span: Schema.NullOr(TimeSpan).annotate({ description: "Its first to last dated event" }),
  counts: Schema.Struct({ mentions: Schema.Int, events: Schema.Int, documents: Schema.Int, related: Schema.Int }),
  community: Schema.NullOr(Schema.String).annotate({ description: "Its community's node id in the last map" }),
  position: Position,
  provenance: Schema.Struct({
    documents: Schema.Array(DocumentRef).annotate({ description: "Up to 10, most mentions first" }),
    chunks: Schema.Array(Quote).annotate({ description: "Up to 5 chunks naming it, most mentions first" })
  })
}).annotate({ identifier: "UniverseEntityNode" })

export const EventNode = Schema.Struct({
  type: Schema.Literal("event"),
  id: Schema.String,
  ref_id: Schema.String,
  source_id: Schema.String,
  label: Schema.String.annotate({ description: "The statement" }),
  kind: Schema.String,
  time: Schema.NullOr(EventTime),
  confidence: Schema.Number,
  participants: Schema.Array(Schema.Struct({
    id: Schema.String,
    entity_id: Schema.String,
    name: Schema.String,
    kind: EntityKind,
    role: ParticipantRole
  })),
  counts: Schema.Struct({ participants: Schema.Int, chunks: Schema.Int }),
  position: Position,
  provenance: Schema.Struct({
    document: DocumentRef,
    chunks: Schema.Array(Quote).annotate({ description: "The chunks it was read from, in order (up to 5)" })
  })
}).annotate({ identifier: "UniverseEventNode" })

export const CommunityNode = Schema.Struct({
  type: Schema.Literal("community"),
  ...CommunityOut.fields,
  top_members: Schema.Array(CommunityMember).annotate({ description: "Up to 20, most central first" }),
  neighbours: Schema.Array(Schema.Struct({ id: Schema.String, label: Schema.String, weight: Schema.Int })).annotate({
    description: "Up to 20 linked communities, heaviest link first"
  }),
  computed_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "UniverseCommunityNode" })

export const DocumentNode = Schema.Struct({
  type: Schema.Literal("document"),
  id: Schema.String,
  ref_id: Schema.String,
  source_id: Schema.String,
  label: Schema.String.annotate({ description: "The title" }),
  format: Schema.String,
  document_date: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  counts: Schema.Struct({ chunks: Schema.Int, entities: Schema.Int, events: Schema.Int }),
  position: Position,
  provenance: Schema.Struct({ chunks: Schema.Array(Quote).annotate({ description: "Its first chunk, quoted" }) })
}).annotate({ identifier: "UniverseDocumentNode" })

export const NodeDetail = Schema.Union([EntityNode, EventNode, CommunityNode, DocumentNode]).annotate({
  identifier: "UniverseNodeDetail",
  examples: [{
    type: "document",
    id: "document:1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
    ref_id: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
    source_id: "6f1c2a40-0d1e-4a8e-9d5e-2b1f0c3d4e5f",
    label: "Board meeting, 12 January 2023",
    format: "markdown",
    document_date: "2023-01-12T00:00:00.000Z",
    created_at: "2026-11-24T10:00:00.000Z",
    counts: { chunks: 3, entities: 6, events: 9 },
    position: { x: 10.2, y: -4.75 },
    provenance: {
      chunks: [{
        chunk_id: "7c6b5a49-3827-4165-9e8d-7c6b5a493827",
        document_id: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        document_title: "Board meeting, 12 January 2023",
        ordinal: 0,
        quote: "Helen Marsh opened the meeting and Victor Lang presented the budget."
      }]
    }
  }]
})
export type NodeDetail = typeof NodeDetail.Type
