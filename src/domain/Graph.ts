import { Schema } from "effect"
import { readInstant } from "./Instant.ts"
import { PageQuery } from "./Page.ts"
import { characters, IdText, Text } from "./Text.ts"

/** The kinds of extract/Extraction.ts. */
export const EntityKind = Schema.Literals(["person", "organization", "place", "product", "work", "concept", "other"])
export type EntityKind = typeof EntityKind.Type

export const ParticipantRole = Schema.Literals(["actor", "object", "place", "participant"])
export type ParticipantRole = typeof ParticipantRole.Type

const Id = IdText

/**
 * An ISO 8601 date (midnight UTC) or date-time with an offset, of a real day in the years 1 to 9999 (`readInstant`).
 * Local times would be ambiguous.
 */
export const IsoInstant = Text.check(
  Schema.makeFilter((s: string) => readInstant(s)?.floating === false, {
    message: "must be an ISO 8601 date (2024-05-01) or date-time with offset (2024-05-01T10:00:00Z) of a real day " +
      "in the years 0001 to 9999"
  })
)

export const EventTime = Schema.Struct({
  start: Schema.String.annotate({ description: "ISO 8601 UTC, inclusive" }),
  end: Schema.String.annotate({ description: "ISO 8601 UTC, exclusive" }),
  precision: Schema.String.annotate({ description: "minute, hour, day, week, month, quarter, year or decade" }),
  text: Schema.NullOr(Schema.String).annotate({ description: "The words of the document, e.g. \"last Tuesday\"" }),
  relative: Schema.Boolean.annotate({ description: "Resolved against the message or document date" })
}).annotate({ identifier: "EventTime" })
export type EventTime = typeof EventTime.Type

export const EntityOut = Schema.Struct({
  id: Schema.String,
  source_id: Schema.String,
  name: Schema.String.annotate({ description: "The canonical name: the first full name the source used" }),
  kind: EntityKind,
  aliases: Schema.Array(Schema.String).annotate({ description: "Other surface forms, sorted" }),
  description: Schema.NullOr(Schema.String),
  mention_count: Schema.Int.annotate({ description: "Mentions in the current versions of the source's documents" }),
  event_count: Schema.Int.annotate({ description: "Searchable events it takes part in" }),
  first_seen: Schema.NullOr(Schema.String).annotate({ description: "Earliest start of its dated events" }),
  last_seen: Schema.NullOr(Schema.String).annotate({ description: "Latest start of its dated events" }),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "EntityOut" })
export type EntityOut = typeof EntityOut.Type

export const EntityRef = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  kind: EntityKind
}).annotate({ identifier: "EntityRef" })

export const EventParticipant = Schema.Struct({
  entity_id: Schema.String,
  name: Schema.String,
  kind: EntityKind,
  role: ParticipantRole
}).annotate({ identifier: "EventParticipant" })

export const EventOut = Schema.Struct({
  id: Schema.String,
  source_id: Schema.String,
  document_id: Schema.String,
  statement: Schema.String,
  kind: Schema.String.annotate({ description: "The main verb's lemma, e.g. acquire, meet" }),
  time: Schema.NullOr(EventTime),
  place: Schema.NullOr(EntityRef),
  participants: Schema.Array(EventParticipant).annotate({ description: "By role (actor, object, place, participant)" }),
  chunk_ids: Schema.Array(Schema.String).annotate({ description: "The chunks the statement comes from, in order" }),
  confidence: Schema.Number,
  created_at: Schema.String
}).annotate({ identifier: "EventOut" })
export type EventOut = typeof EventOut.Type

export const RelatedEntity = Schema.Struct({
  entity: Schema.Struct({ ...EntityRef.fields, mention_count: Schema.Int }),
  evidence_count: Schema.Int.annotate({ description: "Searchable events both take part in" }),
  event_ids: Schema.Array(Schema.String).annotate({ description: "Up to 10 of those events, in time order" })
}).annotate({ identifier: "RelatedEntity" })

export const EntityChunk = Schema.Struct({
  chunk_id: Schema.String,
  document_id: Schema.String,
  ordinal: Schema.Int,
  mentions: Schema.Int.annotate({ description: "Occurrences of the name or an alias in the chunk" }),
  excerpt: Schema.String.annotate({ description: "About 240 characters around the first occurrence" })
}).annotate({ identifier: "EntityChunk" })

export const EntityDetail = Schema.Struct({
  ...EntityOut.fields,
  events: Schema.Array(EventOut).annotate({ description: "Up to 100, in time order, undated last" }),
  related: Schema.Array(RelatedEntity).annotate({
    description: "Up to 50 entities sharing events with it, most shared first"
  }),
  chunks: Schema.Array(EntityChunk).annotate({ description: "Up to 20 chunks naming it, most mentions first" })
}).annotate({ identifier: "EntityDetail" })
export type EntityDetail = typeof EntityDetail.Type

export const GraphNode = Schema.Struct({
  id: Schema.String.annotate({ description: "entity:<entity id> or event:<event id>; stable across calls" }),
  type: Schema.Literals(["entity", "event"]),
  ref_id: Schema.String.annotate({ description: "The entity's or event's own id" }),
  label: Schema.String.annotate({ description: "The entity's name or the event's statement" }),
  kind: Schema.String,
  source_id: Schema.String,
  mention_count: Schema.NullOr(Schema.Int).annotate({ description: "Entities only" }),
  time: Schema.NullOr(EventTime).annotate({ description: "Dated events only" })
}).annotate({ identifier: "GraphNode" })
export type GraphNode = typeof GraphNode.Type

export const GraphEdge = Schema.Struct({
  id: Schema.String.annotate({
    description: "participation:<event id>:<entity id>:<role> or relation:<entity id>:<entity id> (smaller id first)"
  }),
  type: Schema.Literals(["participation", "relation"]),
  source: Schema.String.annotate({
    description: "A node id: the event of a participation, the first entity of a relation"
  }),
  target: Schema.String,
  role: Schema.NullOr(ParticipantRole),
  weight: Schema.Int.annotate({
    description: "1 for a participation; for a relation, the searchable events both share"
  })
}).annotate({ identifier: "GraphEdge" })
export type GraphEdge = typeof GraphEdge.Type

export const GraphOut = Schema.Struct({
  nodes: Schema.Array(GraphNode),
  edges: Schema.Array(GraphEdge),
  truncated: Schema.Boolean.annotate({ description: "true when the node limit left out nodes that would belong" })
}).annotate({ identifier: "GraphOut" })
export type GraphOut = typeof GraphOut.Type

export const EntitySort = Schema.Literals(["mentions", "recent"])
export type EntitySort = typeof EntitySort.Type

export const EntitiesQuery = {
  kind: Schema.optionalKey(EntityKind),
  q: Schema.optionalKey(Text.check(characters(1, 200))).annotate({
    description: "Case-insensitive substring of the name or an alias"
  }),
  sort: Schema.optionalKey(EntitySort).annotate({
    description: "mentions (default: most mentioned first) or recent (latest last_seen first, undated last)"
  }),
  ...PageQuery
}

export const EventsQuery = {
  from: Schema.optionalKey(IsoInstant).annotate({ description: "Events whose time ends after this instant" }),
  to: Schema.optionalKey(IsoInstant).annotate({ description: "Events whose time starts before this instant" }),
  entity_id: Schema.optionalKey(Id).annotate({ description: "Events this entity takes part in" }),
  kind: Schema.optionalKey(Text.check(characters(1, 100))).annotate({
    description: "The event kind (verb lemma), exactly"
  }),
  ...PageQuery
}

export const GraphQuery = {
  source_ids: Schema.optionalKey(Schema.Array(Text.check(characters(0, 10_000)))).annotate({
    description: "Comma-separated and/or repeated (source_ids=a,b or source_ids=a&source_ids=b), at most 256; " +
      "default: every source of the caller"
  }),
  seed_entity_id: Schema.optionalKey(Id),
  seed_event_id: Schema.optionalKey(Id),
  depth: Schema.optionalKey(
    Schema.NumberFromString.check(
      Schema.isInt(),
      Schema.isBetween({ minimum: 1, maximum: 3 }, { message: "must be an integer from 1 to 3" })
    )
  ).annotate({ description: "With a seed: event hops, 1 to 3 (default 1)" }),
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(
      Schema.isInt(),
      Schema.isBetween({ minimum: 1, maximum: 500 }, { message: "must be an integer from 1 to 500" })
    )
  ).annotate({ description: "At most this many nodes, 1 to 500 (default 100)" })
}
