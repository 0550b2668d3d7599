import { Array as Arr, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { createHash, randomUUID } from "node:crypto"
import type {
  EntityDetail,
  EntityKind,
  EntityOut,
  EntitySort,
  EventOut,
  EventTime,
  GraphEdge,
  GraphNode,
  GraphOut,
  ParticipantRole
} from "../domain/Graph.ts"
import { instantOf, storable } from "../domain/Instant.ts"
import { CursorTime, cursorTimeFormat, PageCursor, takePage } from "../domain/Page.ts"
import { truncateCharacters } from "../domain/Text.ts"
import type { UserId } from "../domain/User.ts"
import { entityKinds, type ExtractedEntity, type Extraction } from "../extract/Extraction.ts"
import {
  compatibleKinds,
  initialsOfBoth,
  matchKeys,
  normalizeName,
  personForShortForm,
  shortFormOf,
  shortFormPatterns,
  standsFor
} from "../extract/resolve.ts"
import type { Issue } from "../services/Sources.ts"
import { searchable } from "./Searchable.ts"
import { ownedSources } from "./SourceAccess.ts"
import { withGenericPlans } from "./writeTransaction.ts"

export type GraphError =
  | { readonly _tag: "SourceNotFound"; readonly sourceId?: string }
  | { readonly _tag: "EntityNotFound" }
  | { readonly _tag: "EventNotFound" }
  | { readonly _tag: "InvalidCursor" }
  | { readonly _tag: "InvalidQuery"; readonly issues: ReadonlyArray<Issue> }

export class GraphFailure extends Data.TaggedError("GraphFailure")<{ readonly reason: GraphError }> {}

const fail = (reason: GraphError) => Effect.fail(new GraphFailure({ reason }))

export interface EntityListOptions {
  readonly kind?: EntityKind | undefined
  readonly q?: string | undefined
  readonly sort?: EntitySort | undefined
  readonly limit: number
  readonly cursor?: string | undefined
}

export interface EventListOptions {
  /** ISO instants; an event matches when its [start, end) overlaps [from, to). */
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly entityId?: string | undefined
  readonly kind?: string | undefined
  readonly limit: number
  readonly cursor?: string | undefined
}

export interface GraphOptions {
  /** Each element may itself be comma-separated; undefined means every source of the owner. */
  readonly sourceIds?: ReadonlyArray<string> | undefined
  readonly seedEntityId?: string | undefined
  readonly seedEventId?: string | undefined
  /** 1..3, default 1. */
  readonly depth?: number | undefined
  /** 1..500 nodes, default 100. */
  readonly limit?: number | undefined
}

export interface PageOf<A> {
  readonly items: ReadonlyArray<A>
  readonly next_cursor: string | null
}

const maxEntityEvents = 100
const maxRelated = 50
const maxEvidence = 10
const maxEntityChunks = 20
const maxGraphSources = 256
const excerptLength = 240

const roles: ReadonlyArray<ParticipantRole> = ["actor", "object", "place", "participant"]

interface EntityRow {
  readonly id: string
  readonly source_id: string
  readonly name: string
  readonly kind: EntityKind
  readonly description: string | null
  readonly mention_count: number
  readonly first_seen: Date | null
  readonly last_seen: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  /** last_seen as a cursor carries it. */
  readonly last_seen_position: string | null
}

interface EventRow {
  readonly id: string
  readonly source_id: string
  readonly document_id: string
  readonly statement: string
  readonly kind: string
  readonly time_start: Date | null
  readonly time_end: Date | null
  readonly time_precision: string | null
  readonly time_text: string | null
  readonly time_relative: boolean
  readonly place_entity_id: string | null
  readonly confidence: number
  readonly created_at: Date
  /** time_start as a cursor carries it. */
  readonly time_start_position: string | null
}

const iso = (date: Date | null) => date === null ? null : date.toISOString()

export const eventTime = (
  row: Pick<EventRow, "time_start" | "time_end" | "time_precision" | "time_text" | "time_relative">
): EventTime | null =>
  row.time_start === null
    ? null
    : {
      start: row.time_start.toISOString(),
      end: (row.time_end ?? row.time_start).toISOString(),
      precision: row.time_precision ?? "day",
      text: row.time_text,
      relative: row.time_relative
    }

/**
 * The entities a document's rows of any version mention or involve in an event, with the version. A plain join: with
 * statistics it reads the participants of the document's events through the key, and with old ones (a plan cached
 * while the tables were small) at worst scans them once into a hash join. Filtering the participants by
 * `= ANY(ARRAY(SELECT …))` instead compared every participant row with every event id of the document under such a
 * plan: a 5,882-message conversation held the embedded database's only connection for over half an hour.
 */
export const documentReferences = (sql: SqlClient.SqlClient, documentId: string) =>
  sql<{ entity_id: string; version: number }>`
    SELECT entity_id, version FROM entity_mentions WHERE document_id = ${documentId}
    UNION
    SELECT p.entity_id, ev.version FROM events ev JOIN event_participants p ON p.event_id = ev.id
    WHERE ev.document_id = ${documentId}`

/** Event ids derive from (document, version, position), so storing the same extraction again keeps them. */
const eventId = (documentId: string, version: number, ordinal: number) =>
  createHash("sha256").update(`${documentId}\u0000${version}\u0000${ordinal}`).digest("hex").slice(0, 32)

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Whole-word, case-insensitive occurrences of any of the forms, longest first so "Jane Smith" is one. */
export const surfacePattern = (forms: ReadonlyArray<string>): RegExp | undefined => {
  const alternatives = [...new Set(forms.map((form) => form.trim()).filter((form) => form.length > 0))]
    .sort((a, b) => b.length - a.length || (a < b ? -1 : 1))
    .map(escapeRegExp)
  return alternatives.length === 0
    ? undefined
    : new RegExp(`(?<![\\p{L}\\p{N}])(?:${alternatives.join("|")})(?![\\p{L}\\p{N}])`, "giu")
}

const countOccurrences = (pattern: RegExp, text: string) => text.match(pattern)?.length ?? 0

const ascii = /^[\x00-\x7f]*$/
const isAsciiWordChar = (code: number) =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122)
const letterOrDigit = /^[\p{L}\p{N}]$/u

/** Whether the code point ending just before `at` (before) or starting at `at` (after) is a letter or a digit. */
const wordCharAt = (text: string, at: number, side: "before" | "after") => {
  const code = text.charCodeAt(at)
  if (code < 128) return isAsciiWordChar(code)
  const pairEnd = side === "before" && code >= 0xdc00 && code <= 0xdfff && at > 0 &&
    text.charCodeAt(at - 1) >= 0xd800 && text.charCodeAt(at - 1) <= 0xdbff
  const point = text.codePointAt(pairEnd ? at - 1 : at)!
  return letterOrDigit.test(String.fromCodePoint(point))
}

/**
 * The forms for `countSurfaces`: ASCII forms lower-cased in `surfacePattern`'s order (longest first), or undefined
 * when a form is not ASCII (its case-insensitive matches need Unicode case folding, and `surfacePattern`).
 */
export const surfaceForms = (forms: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  const alternatives = [...new Set(forms.map((form) => form.trim()).filter((form) => form.length > 0))]
    .sort((a, b) => b.length - a.length || (a < b ? -1 : 1))
  return alternatives.every((form) => ascii.test(form)) ? alternatives.map((form) => form.toLowerCase()) : undefined
}

/**
 * How many times `surfacePattern(forms)` matches a text, without the regular expression (`forms` from
 * `surfaceForms`, `lowerText` from `countingText`): at each place where a form starts (found with indexOf) and no
 * letter or digit stands before, the first form in order that matches with no letter or digit after counts and the
 * search goes on after it, as the expression's scan does. Building and running one Unicode expression per entity
 * per document was about 2 ms a SciFact abstract.
 */
export const countSurfaces = (forms: ReadonlyArray<string>, lowerText: string): number => {
  const starts: Array<number> = []
  for (const form of forms) {
    for (let at = lowerText.indexOf(form); at !== -1; at = lowerText.indexOf(form, at + 1)) starts.push(at)
  }
  if (starts.length === 0) return 0
  starts.sort((a, b) => a - b)
  let count = 0
  let from = 0
  for (const at of starts) {
    if (at < from || (at > 0 && wordCharAt(lowerText, at - 1, "before"))) continue
    for (const form of forms) {
      const end = at + form.length
      if (!lowerText.startsWith(form, at) || (end < lowerText.length && wordCharAt(lowerText, end, "after"))) continue
      count++
      from = end
      break
    }
  }
  return count
}

/** Characters the expression's case folding matches to an ASCII letter: the long s (s) and the Kelvin sign (k). */
const foldsToAscii = /[\u017f\u212a]/

/**
 * A text as `countSurfaces` reads it: its ASCII letters lower-cased and every other character kept, so positions are
 * the text's. An ASCII form can match only ASCII characters, except the two that fold to ASCII letters: a text with
 * one of those is undefined (the expression counts it).
 */
export const countingText = (text: string) =>
  ascii.test(text)
    ? text.toLowerCase()
    : foldsToAscii.test(text)
    ? undefined
    : text.replace(/[A-Z]+/g, (upper) => upper.toLowerCase())

/**
 * Counts `countOccurrences(surfacePattern(forms), text)`, through `countSurfaces` where the forms are ASCII and the
 * text allows it (`lower` the text's `countingText`); the regular expression is built only for a text that needs it.
 */
export const mentionCounter = (forms: ReadonlyArray<string>) => {
  const lowerForms = surfaceForms(forms)
  let pattern: RegExp | undefined | null = null
  return (text: string, lower: string | undefined): number => {
    if (lowerForms !== undefined && lower !== undefined) {
      return lowerForms.length === 0 ? 0 : countSurfaces(lowerForms, lower)
    }
    if (pattern === null) pattern = surfacePattern(forms)
    return pattern === undefined ? 0 : countOccurrences(pattern, text)
  }
}

/** About `excerptLength` characters of the text around the first occurrence, with ellipses where cut. */
export const excerptAround = (pattern: RegExp | undefined, text: string) => {
  if (text.length <= excerptLength) return text
  const at = pattern === undefined ? -1 : text.search(pattern)
  const start = Math.max(0, Math.min(Math.round(at - excerptLength / 3), text.length - excerptLength))
  const end = Math.min(text.length, start + excerptLength)
  return `${start > 0 ? "…" : ""}${text.slice(start, end).trim()}${end < text.length ? "…" : ""}`
}

const knownKind = (kind: string): EntityKind =>
  (entityKinds as ReadonlyArray<string>).includes(kind) ? kind as EntityKind : "other"

const knownRole = (role: string): ParticipantRole =>
  (roles as ReadonlyArray<string>).includes(role) ? role as ParticipantRole : "participant"

/** An entity of the source as resolution sees it. */
interface SourceEntity {
  readonly id: string
  readonly name: string
  readonly kind: EntityKind
  readonly mention_count: number
  readonly created_at: Date
  /** Whether it has a description already. */
  readonly described: boolean
}

/** The rows resolving a document's entities adds, and the entity each of them became. */
interface Resolution {
  readonly entityIds: ReadonlyArray<string>
  readonly created: ReadonlyArray<{
    id: string
    source_id: string
    name: string
    kind: EntityKind
    description: string | null
  }>
  /** Descriptions for entities that existed before, to set where they have none. */
  readonly described: ReadonlyMap<string, string>
  /** Entities that existed before as `other`, and the kind a mention of this document gives them. */
  readonly rekinded: ReadonlyMap<string, EntityKind>
  /** One-word persons that existed before and the full name of this document they turned out to be. */
  readonly renamed: ReadonlyMap<string, string>
  readonly keys: ReadonlyArray<{ source_id: string; key: string; entity_id: string }>
  readonly aliases: ReadonlyArray<{ entity_id: string; alias: string }>
  /** Every match key the document's forms give each entity (not only the new ones), for its mention row. */
  readonly keysOf: ReadonlyMap<string, ReadonlySet<string>>
}

/** What a version's mention row (the one without a chunk) says of its entity; null where stored before 0021. */
interface GivenRow {
  readonly entity_id: string
  readonly version: number
  readonly forms: ReadonlyArray<string> | null
  readonly keys: ReadonlyArray<string> | null
  readonly description: string | null
}

/**
 * Resolves the entities in order, each to the source's entity it is (a shared key, compatible kinds) or to a new
 * one created at `now`; each sees the entities and keys the ones before it added. `found` must hold every key row
 * (with its entity) of the source under any match key of the entities. A one-word name no key matches joins the
 * one person of the source whose first name it is or fits as a short form (`persons`: the key rows of the source's
 * persons starting with its letter that match its shortFormPatterns), so "Mel" in one document is the Melanie of
 * another. The other way round, a full name no key matches joins the one-word person of the source its first name
 * is or fits ("Mel" stored before "Melanie Brown" was met; `oneWord`: the source's one-word persons starting with its
 * letter), which takes the full name, when that word fits no other person of the source or of the document: the
 * graph does not depend on which document came first.
 */
const resolveEntities = (
  sourceId: string,
  entities: ReadonlyArray<{ readonly extracted: ExtractedEntity; readonly name: string }>,
  found: ReadonlyArray<SourceEntity & { readonly key: string }>,
  now: Date,
  persons: ReadonlyArray<SourceEntity & { readonly key: string }> = [],
  oneWord: ReadonlyArray<SourceEntity & { readonly key: string }> = []
): Resolution => {
  const known = new Map<string, SourceEntity>()
  // By key as the database has it: the driver replaces lone surrogates, hence toWellFormed on our own keys.
  const keyed = new Map<string, Set<string>>()
  const addKey = (key: string, entityId: string) => {
    const ids = keyed.get(key) ?? new Set<string>()
    keyed.set(key, ids)
    if (ids.has(entityId)) return false
    ids.add(entityId)
    return true
  }
  for (const row of found) {
    known.set(row.id, row)
    addKey(row.key, row.id)
  }
  const personKeys: Array<{ id: string; key: string }> = []
  for (const row of persons) {
    if (!known.has(row.id)) known.set(row.id, row)
    personKeys.push({ id: row.id, key: row.key })
  }
  for (const row of oneWord) if (!known.has(row.id)) known.set(row.id, row)
  const entityIds: Array<string> = []
  const created = new Map<string, Resolution["created"][number]>()
  const described = new Map<string, string>()
  const rekinded = new Map<string, EntityKind>()
  const renamed = new Map<string, string>()
  // The persons the document names, by key: a word two of them fit stands for neither.
  const documentPersons = new Set(
    entities.filter(({ extracted }) => knownKind(extracted.kind) === "person").map(({ name }) => normalizeName(name))
  )
  /** The one-word person of the source this full name's first name is or fits, when it fits no other person. */
  const oneWordFor = (key: string): SourceEntity | null => {
    const first = key.split(" ")[0]!
    const candidates = oneWord.filter((row) =>
      standsFor(row.key, first) && !normalizeName(known.get(row.id)!.name).includes(" ") &&
      personKeys.every((person) => person.id === row.id || !standsFor(row.key, person.key.split(" ")[0]!)) &&
      [...documentPersons].every((other) => other === key || other === row.key || !standsFor(row.key, other.split(" ")[0]!))
    )
    const ids = new Set(candidates.map((row) => row.id))
    return ids.size === 1 ? known.get([...ids][0]!)! : null
  }
  const keys: Array<Resolution["keys"][number]> = []
  const aliases = new Map<string, Resolution["aliases"][number]>()
  const keysOf = new Map<string, Set<string>>()
  for (const { extracted, name } of entities) {
    const kind = knownKind(extracted.kind)
    const matchBy = matchKeys({ name, kind, aliases: extracted.aliases })
    const scored = new Map<string, { entity: SourceEntity; shared: number; byName: boolean }>()
    for (const key of new Set(matchBy.map((key) => key.toWellFormed()))) {
      for (const id of keyed.get(key) ?? []) {
        const entity = known.get(id)!
        if (!compatibleKinds(entity.kind, kind) || initialsOfBoth(key, entity.name, name)) continue
        const entry = scored.get(id) ?? { entity, shared: 0, byName: false }
        entry.shared++
        if (key === matchBy[0]) entry.byName = true
        scored.set(id, entry)
      }
    }
    // Prefer the same kind, then a match on the name itself, more shared keys, more mentions, the oldest.
    const best = [...scored.values()].sort((a, b) =>
      Number(b.entity.kind === kind) - Number(a.entity.kind === kind) ||
      Number(b.byName) - Number(a.byName) ||
      b.shared - a.shared ||
      b.entity.mention_count - a.entity.mention_count ||
      a.entity.created_at.getTime() - b.entity.created_at.getTime() ||
      (a.entity.id < b.entity.id ? -1 : 1)
    )[0]
    const description = extracted.description?.trim() || null
    const short = best === undefined ? shortFormOf({ name, kind }) : null
    const person = short === null ? null : personForShortForm(short, personKeys)
    const fullKey = normalizeName(name)
    const shorter = best === undefined && person === null && kind === "person" && fullKey.includes(" ")
      ? oneWordFor(fullKey)
      : null
    /** The first description wins, and only where the entity has none. */
    const describe = (target: SourceEntity) => {
      if (description === null) return
      const fresh = created.get(target.id)
      if (fresh !== undefined) fresh.description ??= description
      else if (!target.described && !described.has(target.id)) described.set(target.id, description)
    }
    let entity: SourceEntity
    if (best === undefined && person !== null) {
      entity = known.get(person)!
      describe(entity)
    } else if (shorter !== null) {
      aliases.set(`${shorter.id}\u0000${shorter.name}`, { entity_id: shorter.id, alias: shorter.name })
      entity = { ...shorter, name }
      known.set(entity.id, entity)
      renamed.set(entity.id, name)
      describe(entity)
    } else if (best === undefined) {
      entity = { id: randomUUID(), name, kind, mention_count: 0, created_at: now, described: description !== null }
      known.set(entity.id, entity)
      created.set(entity.id, { id: entity.id, source_id: sourceId, name, kind, description })
    } else {
      entity = best.entity
      const fresh = created.get(entity.id)
      // `other` is no kind, only none known yet: the first mention that gives one sets it.
      if (entity.kind === "other" && kind !== "other" && kind !== "concept") {
        entity = { ...entity, kind }
        known.set(entity.id, entity)
        if (fresh !== undefined) fresh.kind = kind
        else rekinded.set(entity.id, kind)
      }
      describe(entity)
    }
    const given = keysOf.get(entity.id) ?? new Set<string>()
    keysOf.set(entity.id, given)
    for (const key of matchKeys({ name, kind: entity.kind, aliases: extracted.aliases })) {
      given.add(key)
      if (addKey(key.toWellFormed(), entity.id)) keys.push({ source_id: sourceId, key, entity_id: entity.id })
      if (entity.kind === "person") personKeys.push({ id: entity.id, key })
    }
    const canonical = normalizeName(entity.name)
    for (const alias of [name, ...extracted.aliases].map((alias) => alias.trim())) {
      if (alias.length === 0 || alias === entity.name || normalizeName(alias) === canonical) continue
      aliases.set(`${entity.id}\u0000${alias}`, { entity_id: entity.id, alias })
    }
    entityIds.push(entity.id)
  }
  return {
    entityIds,
    created: [...created.values()],
    described,
    rekinded,
    renamed,
    keys,
    aliases: [...aliases.values()],
    keysOf
  }
}

const wordCount = (text: string) => text.split(/\s+/).length

/** The fullest of an entity's forms: most words, then most characters, then the first given. */
const fullestForm = (forms: ReadonlyArray<string>): string =>
  forms.reduce((best, form) =>
    wordCount(form) > wordCount(best) || (wordCount(form) === wordCount(best) && form.length > best.length)
      ? form
      : best
  )

/**
 * What an entity's remaining documents say of it (their mention rows, oldest document first): its name if one of
 * them gives it (or none gives a form), else their fullest form; their other forms as its aliases; its description
 * if one of them gives it, else the first one given. (takeBack asks only for entities no row from before forms
 * were recorded speaks for: such a row counts as saying everything, so nothing of theirs is lost.)
 */
const remainingForms = (
  entity: { readonly name: string; readonly description: string | null },
  rows: ReadonlyArray<GivenRow>
) => {
  const forms = [...new Set(rows.flatMap((row) => row.forms ?? []))]
  const canonical = normalizeName(entity.name)
  const name = forms.length === 0 || forms.some((form) => normalizeName(form) === canonical)
    ? entity.name
    : fullestForm(forms)
  const given = rows.flatMap((row) => row.description === null ? [] : [row.description])
  const named = normalizeName(name)
  return {
    name,
    description: entity.description !== null && given.includes(entity.description)
      ? entity.description
      : given[0] ?? null,
    aliases: forms.filter((form) => form !== name && normalizeName(form) !== named)
  }
}

/**
 * An event's resolved time as stored: null outside the years 1 to 9999 ("in two weeks" said on 31 December 9999 is
 * no time a timeline or a map can hold).
 */
const eventInstant = (text: string): Date | null => storable(new Date(text)) ?? null

/** Times may be unknown (null, listed last), so the time keys are nullable. */
const TimeOrNullKey = Schema.Struct({ at: Schema.NullOr(CursorTime), id: Schema.String })
const entitiesByMentionsCursor = PageCursor("entities.mentions", Schema.Struct({ count: Schema.Int, id: Schema.String }))
const entitiesByRecencyCursor = PageCursor("entities.recent", TimeOrNullKey)
const eventsCursor = PageCursor("events", TimeOrNullKey)

/**
 * The event–entity structure of each source. Extraction output is stored per (document, version) and becomes
 * visible with the version: reads see only events of documents that are ready, in their active version (the
 * rule search follows), and entities with a mention there. Relations between entities are not stored: they are
 * the events two entities share, so every edge has its evidence.
 */
export class Graph extends Context.Service<Graph, {
  /**
   * Resolves the extraction's entities against the source's and stores them with its events for this document
   * version, replacing what an earlier run stored for it (idempotent). Needs the version's chunks.
   */
  readonly store: (documentId: string, version: number, extraction: Extraction) => Effect.Effect<void>
  /**
   * In the transaction that makes `version` the document's active version, after active_version is set: removes
   * the events and mentions of its other versions, recounts the entities they touched, deletes orphans. The caller
   * marks the source's universe changed.
   */
  readonly activate: (documentId: string, version: number) => Effect.Effect<void>
  /**
   * Before the document rows are deleted (same transaction): removes their events and mentions, fixes entities.
   * The caller marks the source's universe changed.
   */
  readonly removeDocuments: (documentIds: ReadonlyArray<string>) => Effect.Effect<void>
  readonly listEntities: (owner: UserId, sourceId: string, options: EntityListOptions) => Effect.Effect<
    PageOf<EntityOut>,
    GraphFailure
  >
  readonly getEntity: (owner: UserId, sourceId: string, entityId: string) => Effect.Effect<EntityDetail, GraphFailure>
  readonly listEvents: (owner: UserId, sourceId: string, options: EventListOptions) => Effect.Effect<
    PageOf<EventOut>,
    GraphFailure
  >
  readonly graph: (owner: UserId, options: GraphOptions) => Effect.Effect<GraphOut, GraphFailure>
}>()("engram/Graph") {
  static readonly layer = Layer.effect(
    Graph,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const visibleEvent = () =>
        sql`JOIN documents d ON d.id = ev.document_id AND ${searchable(sql, "d", "ev.version")}`

      const visibleEntity = () =>
        sql`EXISTS (SELECT 1 FROM entity_mentions vm
          JOIN documents vd ON vd.id = vm.document_id AND ${searchable(sql, "vd", "vm.version")}
          WHERE vm.entity_id = e.id)`

      /**
       * Graph writers of one source take turns, so two documents never create the same entity twice. Answers the
       * transaction's start, the creation time of the entities it adds.
       */
      const lockSource = (sourceId: string) =>
        sql<{ now: Date }>`SELECT pg_advisory_xact_lock(hashtext(${`engram.graph:${sourceId}`})), now() AS now`.pipe(
          Effect.map(([row]) => row!.now)
        )

      /** The counted version, with its number of events (documents.event_count, summed for the source's count). */
      const setCountedVersion = (documentId: string, version: number | null) =>
        sql`
          UPDATE documents SET graph_version = ${version},
            event_count = (SELECT count(*) FROM events WHERE document_id = ${documentId} AND version = ${version})
          WHERE id = ${documentId}`

      /**
       * Entity counts and times include exactly the rows of each document's counted version (documents.graph_version,
       * the active one once activated), kept by adding or taking away one version's rows at a time: the work follows
       * the document, never every document that mentions its entities. A first or last time taken away is looked up
       * again for that entity alone. Adding comes after the version is counted, taking away after it no longer is.
       */
      const shiftCounts = Effect.fnUntraced(function*(documentId: string, version: number, direction: "add" | "remove") {
        const times = direction === "add"
          ? sql`first_seen = least(e.first_seen, d.first), last_seen = greatest(e.last_seen, d.last)`
          : sql`
            first_seen = CASE WHEN d.first <= e.first_seen THEN (
              SELECT min(ev.time_start) FROM event_participants p JOIN events ev ON ev.id = p.event_id
              JOIN documents cd ON cd.id = ev.document_id AND cd.graph_version = ev.version
              WHERE p.entity_id = e.id) ELSE e.first_seen END,
            last_seen = CASE WHEN d.last >= e.last_seen THEN (
              SELECT max(ev.time_start) FROM event_participants p JOIN events ev ON ev.id = p.event_id
              JOIN documents cd ON cd.id = ev.document_id AND cd.graph_version = ev.version
              WHERE p.entity_id = e.id) ELSE e.last_seen END`
        yield* sql`
          UPDATE entities e SET
            mention_count = e.mention_count ${direction === "add" ? sql`+` : sql`-`} d.mentions,
            ${times},
            updated_at = now()
          FROM (
            SELECT entity_id, sum(mentions)::int AS mentions, min(at) AS first, max(at) AS last FROM (
              SELECT entity_id, count AS mentions, NULL::timestamptz AS at FROM entity_mentions
              WHERE document_id = ${documentId} AND version = ${version} AND chunk_id IS NULL
              UNION ALL
              SELECT p.entity_id, 0, ev.time_start FROM events ev JOIN event_participants p ON p.event_id = ev.id
              WHERE ev.document_id = ${documentId} AND ev.version = ${version}
            ) version_rows GROUP BY entity_id
          ) d
          WHERE e.id = d.entity_id`
      })

      /** Of the entities, those no version of any document mentions or involves any more are deleted (keys, aliases too). */
      const deleteOrphans = Effect.fnUntraced(function*(entityIds: ReadonlyArray<string>) {
        const ids = [...new Set(entityIds)].sort()
        if (ids.length === 0) return
        yield* sql`
          DELETE FROM entities e
          WHERE e.id = ANY(${ids}::text[])
            AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)
            AND NOT EXISTS (SELECT 1 FROM event_participants p WHERE p.entity_id = e.id)`
      })

      /**
       * What the removed versions' mention rows said of the entities that the kept rows (the same documents' kept
       * version) do not, taken back where no remaining row of the entity says it either: its keys and aliases, and
       * when its name or description was among them, the name, aliases and description its remaining rows give
       * (remainingForms). A remaining row stored before forms were recorded (null) counts as saying everything.
       * Each thing is looked for until one row says it, so a common form of an entity with many documents costs a
       * few rows, not a read of them all. Runs in the source's turn, with the entities locked.
       */
      const takeBack = Effect.fnUntraced(function*(removed: ReadonlyArray<GivenRow>, kept: ReadonlyArray<GivenRow>) {
        const keptBy = new Map<string, Set<string>>()
        for (const row of kept) {
          const said = keptBy.get(row.entity_id) ?? new Set<string>()
          keptBy.set(row.entity_id, said)
          for (const form of row.forms ?? []) said.add(`form\u0000${form}`)
          for (const key of row.keys ?? []) said.add(`key\u0000${key}`)
          if (row.description !== null) said.add(`description\u0000${row.description}`)
        }
        const candidates = new Map<string, { entity_id: string; kind: string; value: string }>()
        const consider = (entityId: string, kind: string, value: string) => {
          const id = `${kind}\u0000${value}`
          if (keptBy.get(entityId)?.has(id) === true) return
          candidates.set(`${entityId}\u0000${id}`, { entity_id: entityId, kind, value })
        }
        for (const row of removed) {
          for (const form of row.forms ?? []) consider(row.entity_id, "form", form)
          for (const key of row.keys ?? []) consider(row.entity_id, "key", key)
          if (row.description !== null) consider(row.entity_id, "description", row.description)
        }
        if (candidates.size === 0) return
        const lost = yield* sql<
          { entity_id: string; kind: string; value: string; name: string; current: string | null }
        >`
          SELECT c.entity_id, c.kind, c.value, e.name, e.description AS current
          FROM jsonb_to_recordset(${JSON.stringify([...candidates.values()])}::jsonb)
            AS c (entity_id text, kind text, value text)
          JOIN entities e ON e.id = c.entity_id
          WHERE NOT EXISTS (
            SELECT 1 FROM entity_mentions m
            WHERE m.entity_id = c.entity_id AND m.chunk_id IS NULL AND (m.forms IS NULL OR CASE c.kind
              WHEN 'form' THEN c.value = ANY(m.forms)
              WHEN 'key' THEN c.value = ANY(m.keys)
              ELSE m.description = c.value END))`
        if (lost.length === 0) return
        const pairs = (kind: string) => {
          const rows = lost.filter((row) => row.kind === kind)
          return JSON.stringify(rows.map((row) => ({ entity_id: row.entity_id, value: row.value })))
        }
        yield* sql`
          DELETE FROM entity_keys k
          USING jsonb_to_recordset(${pairs("key")}::jsonb) AS l (entity_id text, value text)
          WHERE k.entity_id = l.entity_id AND k.key = l.value`
        yield* sql`
          DELETE FROM entity_aliases a
          USING jsonb_to_recordset(${pairs("form")}::jsonb) AS l (entity_id text, value text)
          WHERE a.entity_id = l.entity_id AND a.alias = l.value`
        // An entity whose name or description went is made again from all its remaining rows.
        const remade = [...new Set(lost.filter((row) =>
          (row.kind === "form" && row.value === row.name) || (row.kind === "description" && row.value === row.current)
        ).map((row) => row.entity_id))].sort()
        if (remade.length === 0) return
        const rows = yield* sql<GivenRow & { name: string; current: string | null }>`
          SELECT m.entity_id, m.version, m.forms, m.keys, m.description, e.name, e.description AS current
          FROM entity_mentions m
          JOIN entities e ON e.id = m.entity_id
          JOIN documents d ON d.id = m.document_id
          WHERE m.entity_id = ANY(${remade}::text[]) AND m.chunk_id IS NULL
          ORDER BY m.entity_id, d.created_at, d.id, m.version`
        const entities = Object.entries(Arr.groupBy(rows, (row) => row.entity_id)).map(([id, group]) => ({
          id,
          ...remainingForms({ name: group[0]!.name, description: group[0]!.current }, group)
        }))
        const named = entities.map(({ description, id, name }) => ({ id, name, description }))
        yield* sql`
          UPDATE entities e SET name = r.name, description = r.description, updated_at = now()
          FROM jsonb_to_recordset(${JSON.stringify(named)}::jsonb) AS r (id text, name text, description text)
          WHERE e.id = r.id`
        yield* sql`DELETE FROM entity_aliases WHERE entity_id = ANY(${entities.map((entity) => entity.id)}::text[])`
        const aliases = entities.flatMap((entity) => entity.aliases.map((alias) => ({ entity_id: entity.id, alias })))
        for (const batch of Arr.chunksOf(aliases, 1000)) yield* sql`INSERT INTO entity_aliases ${sql.insert(batch)}`
      })

      /**
       * Locks the entities' rows in id order. Every transaction that changes entity rows some other transaction may
       * change too (counts, descriptions, kinds) locks them this way first, once, so that two of them wait for each
       * other instead of deadlocking; the source's turn (lockSource), when taken, comes before.
       */
      const lockEntities = (entityIds: ReadonlyArray<string>) => {
        const ids = [...new Set(entityIds)].sort()
        return ids.length === 0 ? Effect.void : sql`
          SELECT 1 FROM entities WHERE id = ANY(${ids}::text[]) ORDER BY id FOR NO KEY UPDATE`.pipe(Effect.asVoid)
      }

      const store = Effect.fn("Graph.store")(function*(documentId: string, version: number, extraction: Extraction) {
        yield* withGenericPlans(sql, Effect.gen(function*() {
          // The document row first, then the source lock: the order Documents.remove takes them in.
          const [document] = yield* sql<{ source_id: string; graph_version: number | null }>`
            SELECT source_id, graph_version FROM documents WHERE id = ${documentId} FOR KEY SHARE`
          if (document === undefined) return
          const sourceId = document.source_id
          // The document's own rows are read before the source's turn is taken: only this job writes them.
          const before = (yield* documentReferences(sql, documentId)).filter((row) => row.version === version)
            .map((row) => row.entity_id)
          const chunks = yield* sql<{ id: string; ordinal: number; text: string }>`
            SELECT id, ordinal, text FROM chunks WHERE document_id = ${documentId} AND version = ${version}
            ORDER BY ordinal`
          const now = yield* lockSource(sourceId)
          // Storing the counted version again (not done by the pipeline) takes its old rows out of the counts first.
          const counted = document.graph_version === version
          if (counted) {
            yield* lockEntities(before)
            yield* setCountedVersion(documentId, null)
            yield* shiftCounts(documentId, version, "remove")
          }
          yield* sql`DELETE FROM events WHERE document_id = ${documentId} AND version = ${version}`
          yield* sql`DELETE FROM entity_mentions WHERE document_id = ${documentId} AND version = ${version}`
          const chunkByOrdinal = new Map(chunks.map((chunk) => [chunk.ordinal, chunk.id]))

          const named = new Map<string, { extracted: ExtractedEntity; name: string }>()
          for (const extracted of extraction.entities) {
            const name = extracted.name.trim()
            if (name.length > 0 && !named.has(extracted.key)) named.set(extracted.key, { extracted, name })
          }
          const entities = [...named.values()]
          const keys = new Set(entities.flatMap(({ extracted, name }) =>
            matchKeys({ name, kind: knownKind(extracted.kind), aliases: extracted.aliases })
          ))
          // Every entity any of them can resolve to; the ones the document itself adds are resolved in memory.
          const found = keys.size === 0 ? [] : yield* sql<SourceEntity & { key: string }>`
            SELECT e.id, k.key, e.name, e.kind, e.mention_count, e.created_at, e.description IS NOT NULL AS described
            FROM unnest(${[...keys]}::text[]) AS q (key)
            JOIN entity_keys k ON k.source_id = ${sourceId} AND k.key = q.key
            JOIN entities e ON e.id = k.entity_id`
          // The source's persons a one-word name may be a short form of: keys with its first letter (a range of the
          // key index) that match its short-form patterns, so that only the few keys that may fit are joined to their
          // entities; reading every person of the source per document grew with the source. (`e.source_id`, implied
          // by the key's, leaves the planner the persons' partial index of migration 0018 for a letter with many.)
          const patternsByLetter = new Map<string, Set<string>>()
          for (const { extracted, name } of entities) {
            const short = shortFormOf({ name, kind: knownKind(extracted.kind) })
            if (short === null) continue
            const letter = String.fromCodePoint(short.codePointAt(0)!)
            const patterns = patternsByLetter.get(letter) ?? new Set<string>()
            for (const pattern of shortFormPatterns(short)) patterns.add(pattern)
            patternsByLetter.set(letter, patterns)
          }
          // The source's one-word persons a full name of the document may be ("Mel" before "Melanie Brown"): the
          // letter's one-word keys of one-word persons, kept where they fit the first name; the persons they may
          // also fit are read with the short forms'.
          const firstNames = new Set(entities.flatMap(({ extracted, name }) => {
            const key = normalizeName(name)
            return knownKind(extracted.kind) === "person" && key.includes(" ") ? [key.split(" ")[0]!] : []
          }))
          const oneWord: Array<SourceEntity & { key: string }> = []
          for (const letter of new Set([...firstNames].map((first) => String.fromCodePoint(first.codePointAt(0)!)))) {
            const next = String.fromCodePoint(letter.codePointAt(0)! + 1)
            const rows = yield* sql<SourceEntity & { key: string }>`
              SELECT e.id, k.key, e.name, e.kind, e.mention_count, e.created_at, e.description IS NOT NULL AS described
              FROM entity_keys k JOIN entities e ON e.id = k.entity_id
              WHERE k.source_id = ${sourceId} AND k.key >= ${letter} AND k.key < ${next} AND strpos(k.key, ' ') = 0
                AND e.source_id = ${sourceId} AND e.kind = 'person' AND strpos(e.name, ' ') = 0`
            for (const row of rows) {
              if (![...firstNames].some((first) => standsFor(row.key, first))) continue
              oneWord.push(row)
              const patterns = patternsByLetter.get(letter) ?? new Set<string>()
              for (const pattern of shortFormPatterns(row.key)) patterns.add(pattern)
              patternsByLetter.set(letter, patterns)
            }
          }
          const persons: Array<SourceEntity & { key: string }> = []
          for (const [letter, patterns] of patternsByLetter) {
            const next = String.fromCodePoint(letter.codePointAt(0)! + 1)
            persons.push(...yield* sql<SourceEntity & { key: string }>`
              SELECT e.id, k.key, e.name, e.kind, e.mention_count, e.created_at, e.description IS NOT NULL AS described
              FROM entity_keys k JOIN entities e ON e.id = k.entity_id
              WHERE k.source_id = ${sourceId} AND k.key >= ${letter} AND k.key < ${next}
                AND k.key LIKE ANY(${[...patterns]}::text[]) AND e.source_id = ${sourceId} AND e.kind = 'person'`)
          }
          const resolution = resolveEntities(sourceId, entities, found, now, persons, oneWord)
          for (const batch of Arr.chunksOf(resolution.created, 1000)) {
            yield* sql`INSERT INTO entities ${sql.insert(batch)}`
          }
          yield* lockEntities([
            ...resolution.described.keys(),
            ...resolution.rekinded.keys(),
            ...resolution.renamed.keys()
          ])
          if (resolution.described.size > 0) {
            yield* sql`
              UPDATE entities e SET description = d.description
              FROM unnest(${[...resolution.described.keys()]}::text[], ${[...resolution.described.values()]}::text[])
                AS d (id, description)
              WHERE e.id = d.id AND e.description IS NULL`
          }
          if (resolution.rekinded.size > 0) {
            yield* sql`
              UPDATE entities e SET kind = k.kind
              FROM unnest(${[...resolution.rekinded.keys()]}::text[], ${[...resolution.rekinded.values()]}::text[])
                AS k (id, kind)
              WHERE e.id = k.id AND e.kind = 'other'`
          }
          if (resolution.renamed.size > 0) {
            yield* sql`
              UPDATE entities e SET name = r.name
              FROM unnest(${[...resolution.renamed.keys()]}::text[], ${[...resolution.renamed.values()]}::text[])
                AS r (id, name)
              WHERE e.id = r.id`
          }
          for (const batch of Arr.chunksOf(resolution.keys, 1000)) {
            yield* sql`INSERT INTO entity_keys ${sql.insert(batch)} ON CONFLICT DO NOTHING`
          }
          for (const batch of Arr.chunksOf(resolution.aliases, 1000)) {
            yield* sql`INSERT INTO entity_aliases ${sql.insert(batch)} ON CONFLICT DO NOTHING`
          }

          const byKey = new Map<string, string>()
          const resolved = new Map<string, { mentions: number; forms: Set<string>; description: string | null }>()
          for (const [index, { extracted, name }] of entities.entries()) {
            const id = resolution.entityIds[index]!
            byKey.set(extracted.key, id)
            const entry = resolved.get(id) ?? { mentions: 0, forms: new Set<string>(), description: null }
            entry.mentions += Number.isFinite(extracted.mentions) ? Math.max(0, Math.round(extracted.mentions)) : 0
            for (const form of [name, ...extracted.aliases]) entry.forms.add(form)
            entry.description ??= extracted.description?.trim() || null
            resolved.set(id, entry)
          }

          // The row without a chunk also records what this version says of the entity (takeBack reads it).
          const mentionRows: Array<{
            entity_id: string
            document_id: string
            version: number
            chunk_id: string | null
            count: number
            forms: ReadonlyArray<string> | null
            keys: ReadonlyArray<string> | null
            description: string | null
          }> = []
          const lowered = chunks.map((chunk) => countingText(chunk.text))
          for (const [entityId, { forms, mentions, description }] of resolved) {
            mentionRows.push({
              entity_id: entityId,
              document_id: documentId,
              version,
              chunk_id: null,
              count: mentions,
              forms: [...forms].map((form) => form.trim()).filter((form) => form.length > 0),
              keys: [...resolution.keysOf.get(entityId) ?? []],
              description
            })
            const countIn = mentionCounter([...forms])
            for (const [index, chunk] of chunks.entries()) {
              const count = countIn(chunk.text, lowered[index])
              if (count > 0) {
                mentionRows.push({
                  entity_id: entityId,
                  document_id: documentId,
                  version,
                  chunk_id: chunk.id,
                  count,
                  forms: null,
                  keys: null,
                  description: null
                })
              }
            }
          }
          for (const batch of Arr.chunksOf(mentionRows, 500)) {
            yield* sql`INSERT INTO entity_mentions ${sql.insert(batch)}`
          }

          const eventRows = extraction.events.map((event, ordinal) => {
            const start = event.time === null ? null : eventInstant(event.time.start)
            const end = event.time === null ? null : eventInstant(event.time.end)
            const timed = event.time !== null && start !== null
            return {
              id: eventId(documentId, version, ordinal),
              source_id: sourceId,
              document_id: documentId,
              version,
              ordinal,
              statement: truncateCharacters(event.statement.trim(), 300),
              kind: truncateCharacters(event.kind.trim(), 100),
              time_start: timed ? start : null,
              time_end: timed ? (end !== null && end > start ? end : start) : null,
              time_precision: timed ? event.time!.precision : null,
              time_text: timed ? event.time!.text : null,
              time_relative: timed ? event.time!.relative : false,
              place_entity_id: event.place === null ? null : byKey.get(event.place) ?? null,
              confidence: Number.isFinite(event.confidence) ? Math.min(1, Math.max(0, event.confidence)) : 0
            }
          })
          for (const batch of Arr.chunksOf(eventRows, 200)) yield* sql`INSERT INTO events ${sql.insert(batch)}`

          const chunkRows: Array<{ event_id: string; chunk_id: string }> = []
          const participantRows: Array<{ event_id: string; entity_id: string; role: ParticipantRole }> = []
          const seen = new Set<string>()
          extraction.events.forEach((event, ordinal) => {
            const id = eventRows[ordinal]!.id
            for (const chunkId of new Set(event.chunkOrdinals.flatMap((o) => chunkByOrdinal.get(o) ?? []))) {
              chunkRows.push({ event_id: id, chunk_id: chunkId })
            }
            const place = eventRows[ordinal]!.place_entity_id
            const participants = [
              ...event.participants.flatMap((p) => {
                const entityId = byKey.get(p.entity)
                return entityId === undefined ? [] : [{ entityId, role: knownRole(p.role) }]
              }),
              ...(place === null ? [] : [{ entityId: place, role: "place" as const }])
            ]
            for (const { entityId, role } of participants) {
              const key = `${id}\u0000${entityId}\u0000${role}`
              if (seen.has(key)) continue
              seen.add(key)
              participantRows.push({ event_id: id, entity_id: entityId, role })
            }
          })
          for (const batch of Arr.chunksOf(chunkRows, 1000)) yield* sql`INSERT INTO event_chunks ${sql.insert(batch)}`
          for (const batch of Arr.chunksOf(participantRows, 1000)) {
            yield* sql`INSERT INTO event_participants ${sql.insert(batch)}`
          }
          if (counted) {
            yield* setCountedVersion(documentId, version)
            yield* shiftCounts(documentId, version, "add")
          }
          // Counts follow the counted version, which activation sets; here only the entities a re-run of this
          // version left without rows are cleaned up.
          yield* deleteOrphans(before)
        })).pipe(Effect.orDie)
      })

      /**
       * Makes `keep` the documents' counted version (null: none), then removes their graph rows of every other version
       * and the entities left with none. A first activation takes nothing away, so it does not wait for the source's
       * turn: the entities it counts are locked in id order, as every writer of counts locks them, and concurrent
       * activations of a source's documents wait only for the rows they share.
       */
      const removeVersions = (documentIds: ReadonlyArray<string>, keep: number | null) =>
        sql.withTransaction(Effect.gen(function*() {
          // The callers hold the document rows (FOR UPDATE), so their counted versions stay as read.
          const documents = yield* sql<{ id: string; source_id: string; graph_version: number | null }>`
            SELECT id, source_id, graph_version FROM documents WHERE id = ANY(${documentIds}::text[]) ORDER BY id`
          if (documents.length === 0) return
          const ids = documents.map((document) => document.id)
          const referenced: Array<{ entity_id: string; version: number }> = []
          for (const id of ids) referenced.push(...yield* documentReferences(sql, id))
          const touched = referenced.filter((row) => row.version !== keep).map((row) => row.entity_id)
          if (touched.length > 0) {
            for (const sourceId of new Set(documents.map((document) => document.source_id).sort())) {
              yield* lockSource(sourceId)
            }
          }
          yield* lockEntities(referenced.map((row) => row.entity_id))
          for (const { id, graph_version: counted } of documents) {
            if (counted === keep) continue
            yield* setCountedVersion(id, keep)
            if (counted !== null) yield* shiftCounts(id, counted, "remove")
            if (keep !== null) yield* shiftCounts(id, keep, "add")
          }
          const others = keep === null ? sql`true` : sql`version <> ${keep}`
          const given = touched.length === 0 ? [] : yield* sql<GivenRow>`
            SELECT entity_id, version, forms, keys, description FROM entity_mentions
            WHERE document_id = ANY(${ids}::text[]) AND chunk_id IS NULL`
          yield* sql`DELETE FROM events WHERE document_id = ANY(${ids}::text[]) AND ${others}`
          yield* sql`DELETE FROM entity_mentions WHERE document_id = ANY(${ids}::text[]) AND ${others}`
          yield* deleteOrphans(touched)
          yield* takeBack(given.filter((row) => row.version !== keep), given.filter((row) => row.version === keep))
        })).pipe(Effect.orDie)

      const activate = Effect.fn("Graph.activate")(function*(documentId: string, version: number) {
        yield* removeVersions([documentId], version)
      })

      const removeDocuments = Effect.fn("Graph.removeDocuments")(function*(documentIds: ReadonlyArray<string>) {
        yield* removeVersions(documentIds, null)
      })

      const ownedSource = (owner: UserId, sourceId: string) =>
        ownedSources(sql, owner, [sourceId]).pipe(
          Effect.catchTag("SourceNotOwned", () => fail({ _tag: "SourceNotFound" })),
          Effect.asVoid
        )

      const selectEntities = (where: Statement.Fragment) =>
        sql<EntityRow>`
          SELECT e.id, e.source_id, e.name, e.kind, e.description, e.mention_count, e.first_seen, e.last_seen,
            e.created_at, e.updated_at,
            to_char(e.last_seen AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS last_seen_position
          FROM entities e
          WHERE ${visibleEntity()} AND ${where}`.pipe(Effect.orDie)

      /** Aliases and visible event counts of a page of entities. */
      const withDetails = Effect.fnUntraced(function*(rows: ReadonlyArray<EntityRow>) {
        const ids = rows.map((row) => row.id)
        if (ids.length === 0) return []
        const aliases = yield* sql<{ entity_id: string; alias: string }>`
          SELECT entity_id, alias FROM entity_aliases WHERE entity_id = ANY(${ids}::text[])
          ORDER BY entity_id, alias`.pipe(Effect.orDie)
        const counts = yield* sql<{ entity_id: string; count: number }>`
          SELECT p.entity_id, count(DISTINCT ev.id)::int AS count
          FROM event_participants p JOIN events ev ON ev.id = p.event_id ${visibleEvent()}
          WHERE p.entity_id = ANY(${ids}::text[])
          GROUP BY p.entity_id`.pipe(Effect.orDie)
        const aliasesOf = Arr.groupBy(aliases, (row) => row.entity_id)
        const countOf = new Map(counts.map((row) => [row.entity_id, row.count]))
        return rows.map((row): EntityOut => ({
          id: row.id,
          source_id: row.source_id,
          name: row.name,
          kind: row.kind,
          aliases: (aliasesOf[row.id] ?? []).map((alias) => alias.alias),
          description: row.description,
          mention_count: row.mention_count,
          event_count: countOf.get(row.id) ?? 0,
          first_seen: iso(row.first_seen),
          last_seen: iso(row.last_seen),
          created_at: row.created_at.toISOString(),
          updated_at: row.updated_at.toISOString()
        }))
      })

      const selectEvents = (where: Statement.Fragment) =>
        sql<EventRow>`
          SELECT ev.id, ev.source_id, ev.document_id, ev.statement, ev.kind, ev.time_start, ev.time_end,
            ev.time_precision, ev.time_text, ev.time_relative, ev.place_entity_id, ev.confidence, ev.created_at,
            to_char(ev.time_start AT TIME ZONE 'UTC', ${cursorTimeFormat}) AS time_start_position
          FROM events ev ${visibleEvent()}
          WHERE ${where}`.pipe(Effect.orDie)

      /** Participants (by role, then name) and chunks (in order) of a page of events. */
      const withParticipants = Effect.fnUntraced(function*(rows: ReadonlyArray<EventRow>) {
        const ids = rows.map((row) => row.id)
        if (ids.length === 0) return []
        const participants = yield* sql<{
          event_id: string
          entity_id: string
          role: ParticipantRole
          name: string
          kind: EntityKind
        }>`
          SELECT p.event_id, p.entity_id, p.role, en.name, en.kind
          FROM event_participants p JOIN entities en ON en.id = p.entity_id
          WHERE p.event_id = ANY(${ids}::text[])
          ORDER BY p.event_id,
            CASE p.role WHEN 'actor' THEN 0 WHEN 'object' THEN 1 WHEN 'place' THEN 2 ELSE 3 END,
            en.name, p.entity_id`.pipe(Effect.orDie)
        const chunks = yield* sql<{ event_id: string; chunk_id: string }>`
          SELECT ec.event_id, ec.chunk_id FROM event_chunks ec JOIN chunks c ON c.id = ec.chunk_id
          WHERE ec.event_id = ANY(${ids}::text[])
          ORDER BY ec.event_id, c.ordinal`.pipe(Effect.orDie)
        const participantsOf = Arr.groupBy(participants, (row) => row.event_id)
        const chunksOf = Arr.groupBy(chunks, (row) => row.event_id)
        return rows.map((row): EventOut => {
          const involved = participantsOf[row.id] ?? []
          const place = involved.find((p) => p.entity_id === row.place_entity_id)
          return {
            id: row.id,
            source_id: row.source_id,
            document_id: row.document_id,
            statement: row.statement,
            kind: row.kind,
            time: eventTime(row),
            place: place === undefined ? null : { id: place.entity_id, name: place.name, kind: place.kind },
            participants: involved.map((p) => ({ entity_id: p.entity_id, name: p.name, kind: p.kind, role: p.role })),
            chunk_ids: (chunksOf[row.id] ?? []).map((chunk) => chunk.chunk_id),
            // real keeps 24 bits: 0.8 comes back as 0.800000011920929.
            confidence: Math.round(row.confidence * 1e6) / 1e6,
            created_at: row.created_at.toISOString()
          }
        })
      })

      const listEntities = Effect.fn("Graph.listEntities")(function*(
        owner: UserId,
        sourceId: string,
        options: EntityListOptions
      ) {
        yield* ownedSource(owner, sourceId)
        const sort = options.sort ?? "mentions"
        let page: Statement.Fragment
        if (sort === "mentions") {
          const after = options.cursor === undefined ? undefined : entitiesByMentionsCursor.decode(options.cursor)
          if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
          const key = after?.value
          page = sql`${
            key === undefined
              ? sql``
              : sql`AND (e.mention_count < ${key.count} OR (e.mention_count = ${key.count} AND e.id > ${key.id}))`
          } ORDER BY e.mention_count DESC, e.id`
        } else {
          const after = options.cursor === undefined ? undefined : entitiesByRecencyCursor.decode(options.cursor)
          if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
          const key = after?.value
          page = sql`${
            key === undefined
              ? sql``
              : key.at === null
              ? sql`AND e.last_seen IS NULL AND e.id > ${key.id}`
              : sql`AND (e.last_seen < ${key.at}::timestamptz
                  OR (e.last_seen = ${key.at}::timestamptz AND e.id > ${key.id}) OR e.last_seen IS NULL)`
          } ORDER BY e.last_seen DESC NULLS LAST, e.id`
        }
        const q = options.q?.toLowerCase()
        const rows = yield* selectEntities(sql`e.source_id = ${sourceId}
          ${options.kind === undefined ? sql`` : sql`AND e.kind = ${options.kind}`}
          ${
          q === undefined ? sql`` : sql`AND (strpos(lower(e.name), ${q}) > 0 OR EXISTS (
            SELECT 1 FROM entity_aliases a WHERE a.entity_id = e.id AND strpos(lower(a.alias), ${q}) > 0))`
        }
          ${page} LIMIT ${options.limit + 1}`)
        const taken = takePage(rows, options.limit, (last) =>
          sort === "mentions"
            ? entitiesByMentionsCursor.encode({ count: last.mention_count, id: last.id })
            : entitiesByRecencyCursor.encode({ at: last.last_seen_position, id: last.id }))
        return { items: yield* withDetails(taken.rows), next_cursor: taken.next_cursor }
      })

      /** A visible entity of the sources, or EntityNotFound. */
      const findEntity = (sourceIds: ReadonlyArray<string>, entityId: string) =>
        selectEntities(sql`e.source_id = ANY(${sourceIds}::text[]) AND e.id = ${entityId}`).pipe(
          Effect.flatMap(([row]) => row === undefined ? fail({ _tag: "EntityNotFound" }) : Effect.succeed(row))
        )

      const getEntity = Effect.fn("Graph.getEntity")(function*(owner: UserId, sourceId: string, entityId: string) {
        yield* ownedSource(owner, sourceId)
        const row = yield* findEntity([sourceId], entityId)
        const [entity] = yield* withDetails([row])
        const events = yield* withParticipants(
          yield* selectEvents(sql`ev.source_id = ${sourceId}
            AND EXISTS (SELECT 1 FROM event_participants p WHERE p.event_id = ev.id AND p.entity_id = ${entityId})
            ORDER BY ev.time_start ASC NULLS LAST, ev.id LIMIT ${maxEntityEvents}`)
        )
        const related = yield* sql<{
          id: string
          name: string
          kind: EntityKind
          mention_count: number
          evidence: number
        }>`
          SELECT r.id, r.name, r.kind, r.mention_count, count(DISTINCT ev.id)::int AS evidence
          FROM event_participants p1
          JOIN events ev ON ev.id = p1.event_id ${visibleEvent()}
          JOIN event_participants p2 ON p2.event_id = ev.id AND p2.entity_id <> p1.entity_id
          JOIN entities r ON r.id = p2.entity_id
          WHERE p1.entity_id = ${entityId}
          GROUP BY r.id
          ORDER BY evidence DESC, r.id
          LIMIT ${maxRelated}`.pipe(Effect.orDie)
        const evidence = related.length === 0 ? [] : yield* sql<{ id: string; event_id: string }>`
          SELECT id, event_id FROM (
            SELECT s.id, s.event_id,
              row_number() OVER (PARTITION BY s.id ORDER BY s.time_start ASC NULLS LAST, s.event_id) AS rank
            FROM (
              SELECT DISTINCT p2.entity_id AS id, ev.id AS event_id, ev.time_start
              FROM event_participants p1
              JOIN events ev ON ev.id = p1.event_id ${visibleEvent()}
              JOIN event_participants p2 ON p2.event_id = ev.id
              WHERE p1.entity_id = ${entityId} AND p2.entity_id = ANY(${related.map((r) => r.id)}::text[])
            ) s
          ) ranked
          WHERE rank <= ${maxEvidence}
          ORDER BY id, rank`.pipe(Effect.orDie)
        const evidenceOf = Arr.groupBy(evidence, (row) => row.id)
        const chunks = yield* sql<{
          chunk_id: string
          document_id: string
          ordinal: number
          text: string
          count: number
        }>`
          SELECT m.chunk_id, c.document_id, c.ordinal, c.text, m.count
          FROM entity_mentions m
          JOIN chunks c ON c.id = m.chunk_id
          JOIN documents d ON d.id = m.document_id AND ${searchable(sql, "d", "m.version")}
          WHERE m.entity_id = ${entityId}
          ORDER BY m.count DESC, d.created_at, c.document_id, c.ordinal
          LIMIT ${maxEntityChunks}`.pipe(Effect.orDie)
        const pattern = surfacePattern([entity!.name, ...entity!.aliases])
        return {
          ...entity!,
          events,
          related: related.map((r) => ({
            entity: { id: r.id, name: r.name, kind: r.kind, mention_count: r.mention_count },
            evidence_count: r.evidence,
            event_ids: (evidenceOf[r.id] ?? []).map((row) => row.event_id)
          })),
          chunks: chunks.map((c) => ({
            chunk_id: c.chunk_id,
            document_id: c.document_id,
            ordinal: c.ordinal,
            mentions: c.count,
            excerpt: excerptAround(pattern, c.text)
          }))
        }
      })

      const listEvents = Effect.fn("Graph.listEvents")(function*(
        owner: UserId,
        sourceId: string,
        options: EventListOptions
      ) {
        yield* ownedSource(owner, sourceId)
        const from = instantOf(options.from)
        const to = instantOf(options.to)
        if (from !== null && to !== null && from >= to) {
          return yield* fail({ _tag: "InvalidQuery", issues: [{ path: "query.to", message: "must be after from" }] })
        }
        if (options.entityId !== undefined) yield* findEntity([sourceId], options.entityId)
        const after = options.cursor === undefined ? undefined : eventsCursor.decode(options.cursor)
        if (after !== undefined && Option.isNone(after)) return yield* fail({ _tag: "InvalidCursor" })
        const key = after?.value
        const rows = yield* selectEvents(sql`ev.source_id = ${sourceId}
          ${options.kind === undefined ? sql`` : sql`AND ev.kind = ${options.kind}`}
          ${from === null ? sql`` : sql`AND ev.time_end > ${from}`}
          ${to === null ? sql`` : sql`AND ev.time_start < ${to}`}
          ${
          options.entityId === undefined ? sql`` : sql`AND EXISTS (
            SELECT 1 FROM event_participants p WHERE p.event_id = ev.id AND p.entity_id = ${options.entityId})`
        }
          ${
          key === undefined
            ? sql``
            : key.at === null
            ? sql`AND ev.time_start IS NULL AND ev.id > ${key.id}`
            : sql`AND (ev.time_start > ${key.at}::timestamptz
                OR (ev.time_start = ${key.at}::timestamptz AND ev.id > ${key.id}) OR ev.time_start IS NULL)`
        }
          ORDER BY ev.time_start ASC NULLS LAST, ev.id LIMIT ${options.limit + 1}`)
        const taken = takePage(rows, options.limit, (last) =>
          eventsCursor.encode({ at: last.time_start_position, id: last.id }))
        return { items: yield* withParticipants(taken.rows), next_cursor: taken.next_cursor }
      })

      /** The sources the graph spans: the requested ones, all owned (else SourceNotFound), or every owned one. */
      const graphSources = Effect.fnUntraced(function*(owner: UserId, requested: ReadonlyArray<string> | undefined) {
        if (requested === undefined) return [...yield* ownedSources(sql, owner, undefined).pipe(Effect.orDie)].sort()
        const ids = [...new Set(requested.flatMap((part) => part.split(",")).map((id) => id.trim()))]
          .filter((id) => id.length > 0)
        if (ids.length === 0 || ids.length > maxGraphSources) {
          return yield* fail({
            _tag: "InvalidQuery",
            issues: [{ path: "query.source_ids", message: `must name 1 to ${maxGraphSources} sources` }]
          })
        }
        yield* ownedSources(sql, owner, ids).pipe(
          Effect.catchTag("SourceNotOwned", ({ sourceId }) => fail({ _tag: "SourceNotFound", sourceId }))
        )
        return ids.sort()
      })

      type EntityNodeRow = Pick<EntityRow, "id" | "source_id" | "name" | "kind" | "mention_count">

      const entityNode = (row: EntityNodeRow): GraphNode => ({
        id: `entity:${row.id}`,
        type: "entity",
        ref_id: row.id,
        label: row.name,
        kind: row.kind,
        source_id: row.source_id,
        mention_count: row.mention_count,
        time: null
      })

      const eventNode = (row: EventRow): GraphNode => ({
        id: `event:${row.id}`,
        type: "event",
        ref_id: row.id,
        label: row.statement,
        kind: row.kind,
        source_id: row.source_id,
        mention_count: null,
        time: eventTime(row)
      })

      /** Visible events of the entities not yet taken, those involving more of them first. */
      const eventsAround = (entityIds: ReadonlyArray<string>, taken: ReadonlyArray<string>, limit: number) =>
        selectEvents(sql`ev.id IN (
            SELECT p.event_id FROM event_participants p WHERE p.entity_id = ANY(${entityIds}::text[]))
          AND NOT (ev.id = ANY(${taken}::text[]))
          ORDER BY (SELECT count(*) FROM event_participants p
              WHERE p.event_id = ev.id AND p.entity_id = ANY(${entityIds}::text[])) DESC,
            ev.confidence DESC, ev.time_start ASC NULLS LAST, ev.id
          LIMIT ${limit}`)

      /** Participants of the events not yet taken, those in more of them first, then the most mentioned. */
      const participantsOf = (eventIds: ReadonlyArray<string>, taken: ReadonlyArray<string>, limit: number) =>
        sql<EntityNodeRow>`
          SELECT en.id, en.source_id, en.name, en.kind, en.mention_count
          FROM entities en
          JOIN event_participants p ON p.entity_id = en.id AND p.event_id = ANY(${eventIds}::text[])
          WHERE NOT (en.id = ANY(${taken}::text[]))
          GROUP BY en.id
          ORDER BY count(DISTINCT p.event_id) DESC, en.mention_count DESC, en.id
          LIMIT ${limit}`.pipe(Effect.orDie)

      const graph = Effect.fn("Graph.graph")(function*(owner: UserId, options: GraphOptions) {
        if (options.seedEntityId !== undefined && options.seedEventId !== undefined) {
          return yield* fail({
            _tag: "InvalidQuery",
            issues: [{ path: "query.seed_event_id", message: "give seed_entity_id or seed_event_id, not both" }]
          })
        }
        const sourceIds = yield* graphSources(owner, options.sourceIds)
        const limit = options.limit ?? 100
        const depth = options.depth ?? 1
        // Nodes in the order they were reached: the seed first, then level by level.
        const nodes: Array<GraphNode> = []
        const entities = new Set<string>()
        const events = new Set<string>()
        let truncated = false
        const room = () => limit - nodes.length
        /** Adds as many of the rows as fit; notes when any was left out. */
        const take = <R extends { readonly id: string }>(
          rows: ReadonlyArray<R>,
          into: Set<string>,
          node: (row: R) => GraphNode
        ) => {
          const fitting = rows.slice(0, Math.max(0, room()))
          for (const row of fitting) {
            into.add(row.id)
            nodes.push(node(row))
          }
          if (fitting.length < rows.length) truncated = true
          return fitting.map((row) => row.id)
        }

        if (options.seedEntityId !== undefined || options.seedEventId !== undefined) {
          let frontierEvents: ReadonlyArray<string>
          let frontierEntities: ReadonlyArray<string> = []
          if (options.seedEntityId !== undefined) {
            const seed = yield* findEntity(sourceIds, options.seedEntityId)
            frontierEntities = take([seed], entities, entityNode)
            frontierEvents = []
          } else {
            const [seed] = yield* selectEvents(
              sql`ev.source_id = ANY(${sourceIds}::text[]) AND ev.id = ${options.seedEventId!}`
            )
            if (seed === undefined) return yield* fail({ _tag: "EventNotFound" })
            frontierEvents = take([seed], events, eventNode)
          }
          for (let level = 1; level <= depth && !truncated; level++) {
            if (frontierEntities.length > 0) {
              const found = yield* eventsAround(frontierEntities, [...events], room() + 1)
              frontierEvents = take(found, events, eventNode)
            }
            if (truncated || frontierEvents.length === 0) break
            const found = yield* participantsOf(frontierEvents, [...entities], room() + 1)
            frontierEntities = take(found, entities, entityNode)
            if (frontierEntities.length === 0) break
          }
        } else if (sourceIds.length > 0) {
          const top = yield* selectEntities(sql`e.source_id = ANY(${sourceIds}::text[])
            ORDER BY e.mention_count DESC, e.id LIMIT ${limit + 1}`)
          const half = Math.ceil(limit / 2)
          const chosen = take(top.slice(0, half), entities, entityNode)
          if (chosen.length > 0) {
            take(yield* eventsAround(chosen, [], room() + 1), events, eventNode)
          }
          take(top.slice(half), entities, entityNode)
        }

        const entityIds = [...entities]
        const eventIds = [...events]
        const participations = eventIds.length === 0 || entityIds.length === 0 ? [] : yield* sql<{
          event_id: string
          entity_id: string
          role: ParticipantRole
        }>`
          SELECT event_id, entity_id, role FROM event_participants
          WHERE event_id = ANY(${eventIds}::text[]) AND entity_id = ANY(${entityIds}::text[])`.pipe(Effect.orDie)
        const relations = entityIds.length < 2 ? [] : yield* sql<{ a: string; b: string; weight: number }>`
          SELECT pa.entity_id AS a, pb.entity_id AS b, count(DISTINCT ev.id)::int AS weight
          FROM event_participants pa
          JOIN event_participants pb ON pb.event_id = pa.event_id AND pa.entity_id < pb.entity_id
          JOIN events ev ON ev.id = pa.event_id ${visibleEvent()}
          WHERE pa.entity_id = ANY(${entityIds}::text[]) AND pb.entity_id = ANY(${entityIds}::text[])
          GROUP BY pa.entity_id, pb.entity_id`.pipe(Effect.orDie)
        const byId = (a: GraphEdge, b: GraphEdge) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0
        const edges: Array<GraphEdge> = [
          ...participations.map((row): GraphEdge => ({
            id: `participation:${row.event_id}:${row.entity_id}:${row.role}`,
            type: "participation",
            source: `event:${row.event_id}`,
            target: `entity:${row.entity_id}`,
            role: row.role,
            weight: 1
          })).sort(byId),
          ...relations.map((row): GraphEdge => {
            const [a, b] = row.a < row.b ? [row.a, row.b] : [row.b, row.a]
            return {
              id: `relation:${a}:${b}`,
              type: "relation",
              source: `entity:${a}`,
              target: `entity:${b}`,
              role: null,
              weight: row.weight
            }
          }).sort(byId)
        ]
        return { nodes, edges, truncated }
      })

      return Graph.of({
        store,
        activate,
        removeDocuments,
        listEntities,
        getEntity,
        listEvents,
        graph
      })
    })
  )
}
