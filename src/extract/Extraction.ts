/**
 * What extraction finds in one document: entities and the events they take part in. Extractors (rule-based,
 * LLM) produce it; the graph store (stores/Graph.ts) resolves its entities against the source's and stores it.
 * Pure data, no I/O.
 */

export type EntityKind = "person" | "organization" | "place" | "product" | "work" | "concept" | "other"

export const entityKinds: ReadonlyArray<EntityKind> = [
  "person",
  "organization",
  "place",
  "product",
  "work",
  "concept",
  "other"
]

export type ParticipantRole = "actor" | "object" | "place" | "participant"

/** A normalised time: ISO 8601 instants, start inclusive, end exclusive, at the precision the text gave. */
export interface TimeValue {
  readonly start: string
  readonly end: string
  readonly precision: "minute" | "hour" | "day" | "week" | "month" | "quarter" | "year" | "decade"
  /** The words in the text, e.g. "last Tuesday", "in 2019". */
  readonly text: string
  /** Resolved against an anchor (message or document date) rather than stated absolutely. */
  readonly relative: boolean
}

export interface ExtractedEntity {
  /** Identifies the entity within this extraction; participants refer to it. */
  readonly key: string
  /** The fullest name the document uses, e.g. "Dr. Jane Smith" → "Jane Smith" (titles dropped). */
  readonly name: string
  readonly kind: EntityKind
  /** Other surface forms in this document (e.g. "Smith", "J. Smith", "IBM" for International Business Machines). */
  readonly aliases: ReadonlyArray<string>
  readonly mentions: number
  /** A sentence of the document that says something about it, or null. */
  readonly description: string | null
}

export interface ExtractedEvent {
  /** A short statement of what happened (at most 300 characters). */
  readonly statement: string
  /** The main verb's lemma, e.g. "acquire", "meet", "announce". */
  readonly kind: string
  /** The ordinals of the chunks the statement comes from. */
  readonly chunkOrdinals: ReadonlyArray<number>
  readonly participants: ReadonlyArray<{ readonly entity: string; readonly role: ParticipantRole }>
  readonly time: TimeValue | null
  /** Key of the place entity, when the event names one. */
  readonly place: string | null
  /** 0..1 */
  readonly confidence: number
}

export interface Extraction {
  readonly entities: ReadonlyArray<ExtractedEntity>
  readonly events: ReadonlyArray<ExtractedEvent>
}

export interface ExtractionChunk {
  readonly ordinal: number
  readonly text: string
  /** Chat messages: who said it (an entity, a person) … */
  readonly speaker: string | null
  /** … and when (ISO), which anchors the message's relative times. */
  readonly spokenAt: string | null
  /**
   * The chat messages in the chunk, offsets in its text: each anchors the relative times said in it to its own
   * time and makes its speaker the "I" of its lines. Absent or empty: the chunk's speaker and time hold throughout.
   */
  readonly messages?: ReadonlyArray<ExtractionMessage> | undefined
}

export interface ExtractionMessage {
  readonly speaker: string
  readonly spokenAt: string | null
  readonly start: number
  readonly end: number
}

export interface ExtractionInput {
  readonly title: string
  readonly chunks: ReadonlyArray<ExtractionChunk>
  /** The document's own date when known (ISO); anchors relative times of non-message text. Null: unanchored. */
  readonly documentDate: string | null
}
