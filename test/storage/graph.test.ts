import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { UserId } from "../../src/domain/User.ts"
import type { Extraction } from "../../src/extract/Extraction.ts"
import { Graph } from "../../src/stores/Graph.ts"
import {
  addChunks,
  chunksA,
  chunksB,
  entity,
  event,
  extractionA,
  extractionB,
  makeReady,
  onDay,
  seedDocument,
  storeActiveDocument
} from "../support/graph.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

const chunksA2 = ["Jane Smith founded Acme Corp in Berlin in 2019."]
const extractionA2: Extraction = {
  entities: [
    entity("jane", "Jane Smith", "person"),
    entity("acme", "Acme Corp", "organization", { mentions: 1 }),
    entity("berlin", "Berlin", "place")
  ],
  events: [
    event("Jane Smith founded Acme Corp in 2019", "found", [["jane", "actor"], ["acme", "object"]], {
      chunks: [0],
      time: onDay("2019-03-01"),
      place: "berlin"
    })
  ]
}

interface EntitySnapshot {
  readonly id: string
  readonly name: string
  readonly kind: string
  readonly mention_count: number
  readonly first_seen: string | null
  readonly last_seen: string | null
  readonly aliases: ReadonlyArray<string>
}

/** Every entity row of the source (visible or not), by name and kind. */
const entityRows = (sourceId: string) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const rows = yield* sql<{
      id: string
      name: string
      kind: string
      mention_count: number
      first_seen: Date | null
      last_seen: Date | null
    }>`SELECT id, name, kind, mention_count, first_seen, last_seen FROM entities WHERE source_id = ${sourceId}
       ORDER BY name, kind`
    const aliases = yield* sql<{ entity_id: string; alias: string }>`
      SELECT a.entity_id, a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
      WHERE e.source_id = ${sourceId} ORDER BY a.alias`
    return rows.map((row): EntitySnapshot => ({
      id: row.id,
      name: row.name,
      kind: row.kind,
      mention_count: row.mention_count,
      first_seen: row.first_seen?.toISOString().slice(0, 10) ?? null,
      last_seen: row.last_seen?.toISOString().slice(0, 10) ?? null,
      aliases: aliases.filter((a) => a.entity_id === row.id).map((a) => a.alias)
    }))
  })

/** One document of the source (one chunk, `text`) with its extraction stored and active; answers its id. */
const storeDocument = (sourceId: string, title: string, text: string, extraction: Extraction) =>
  storeActiveDocument(sourceId, title, [text], extraction)

const summary = (rows: ReadonlyArray<EntitySnapshot>) =>
  rows.map((row) => `${row.name}/${row.kind}:${row.mention_count}:${row.first_seen ?? "-"}..${row.last_seen ?? "-"}`)

const rowCount = (table: "events" | "entity_mentions", documentId: string) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE document_id = ${documentId}`
    return row!.n
  })

/** A user with a source, and both documents stored and active. */
const setup = (name: string) =>
  Effect.gen(function*() {
    const { url, sql } = yield* TestServer
    const graph = yield* Graph
    const token = yield* login(url, name)
    const sourceId = yield* createSource(url, token)
    const [user] = yield* sql<{ id: UserId }>`SELECT owner_id AS id FROM sources WHERE id = ${sourceId}`
    const a = yield* seedDocument(sourceId, "a", chunksA)
    yield* graph.store(a, 1, extractionA)
    yield* graph.activate(a, 1)
    const b = yield* seedDocument(sourceId, "b", chunksB)
    yield* graph.store(b, 1, extractionB)
    yield* graph.activate(b, 1)
    return { url, token, sourceId, owner: user!.id, a, b }
  })

const eventCount = (url: string, token: string, sourceId: string) =>
  Effect.map(request(url, `/api/v1/sources/${sourceId}`, { token }), (reply) => reply.body.event_count as number)

/**
 * Every entity of the source whose stored count or times differ from a recount from scratch over the documents'
 * active versions (as "name: stored / recounted"), every entity that no row mentions or involves any more, and
 * every document whose stored chunk and event counts differ from a recount.
 */
const countsOffRecount = (sourceId: string) =>
  Effect.gen(function*() {
    const { sql } = yield* TestServer
    const rows = yield* sql<{
      name: string
      stored: string
      recounted: string
      orphan: boolean
    }>`
      SELECT e.name,
        concat_ws(' ', e.mention_count, e.first_seen, e.last_seen) AS stored,
        concat_ws(' ', coalesce((
          SELECT sum(m.count) FROM entity_mentions m JOIN documents d ON d.id = m.document_id AND d.active_version = m.version
          WHERE m.entity_id = e.id AND m.chunk_id IS NULL), 0), t.first_seen, t.last_seen) AS recounted,
        NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)
          AND NOT EXISTS (SELECT 1 FROM event_participants p WHERE p.entity_id = e.id) AS orphan
      FROM entities e,
      LATERAL (
        SELECT min(ev.time_start) AS first_seen, max(ev.time_start) AS last_seen
        FROM event_participants p JOIN events ev ON ev.id = p.event_id
        JOIN documents d ON d.id = ev.document_id AND d.active_version = ev.version
        WHERE p.entity_id = e.id) t
      WHERE e.source_id = ${sourceId}
      ORDER BY e.name, e.id`
    // Each document's counts, whose sums are the source's chunk_count and event_count.
    const documents = yield* sql<{ title: string; stored: string; recounted: string }>`
      SELECT d.title, concat_ws(' ', d.chunk_count, d.event_count) AS stored,
        concat_ws(' ',
          (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.version = d.active_version),
          (SELECT count(*) FROM events ev WHERE ev.document_id = d.id AND ev.version = d.graph_version)) AS recounted
      FROM documents d WHERE d.source_id = ${sourceId}
      ORDER BY d.title, d.id`
    return [
      ...rows.flatMap((row) => [
        ...(row.stored === row.recounted ? [] : [`${row.name}: ${row.stored} / ${row.recounted}`]),
        ...(row.orphan ? [`${row.name}: orphan`] : [])
      ]),
      ...documents.flatMap((row) =>
        row.stored === row.recounted ? [] : [`document ${row.title}: ${row.stored} / ${row.recounted}`]
      )
    ]
  })

for (const engine of engines) {
  layer(freshServer(engine, { workerConcurrency: 0 }))(`graph storage (${engine})`, (it) => {
    it.effect("entities resolve across documents: a shared key merges, an incompatible kind stays apart", () =>
      Effect.gen(function*() {
        const { url, token, sourceId } = yield* setup("Resa")
        const rows = yield* entityRows(sourceId)
        assert.deepStrictEqual(summary(rows), [
          "Acme Corp/organization:3:2019-03-01..2019-03-01",
          "Berlin/place:1:2019-03-01..2019-03-01",
          "Jane Smith/person:3:2019-03-01..2021-06-01",
          "Jordan/person:1:2020-05-10..2020-05-10",
          "Jordan/place:2:2021-06-01..2021-06-01"
        ])
        assert.deepStrictEqual(rows.find((r) => r.name === "Jane Smith")!.aliases, ["Smith"])
        assert.deepStrictEqual(rows.find((r) => r.name === "Acme Corp")!.aliases, ["Acme"])
        assert.strictEqual(yield* eventCount(url, token, sourceId), 4)
      }))

    it.effect("initials link a long name to its acronym, never two long names that share them", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Initials")
        const sourceId = yield* createSource(url, token)
        const store = (title: string, text: string, extraction: Extraction) =>
          storeDocument(sourceId, title, text, extraction)
        const one = (key: string, name: string): Extraction => ({
          entities: [entity(key, name, "organization")],
          events: [event(`${name} grew`, "grow", [[key, "actor"]], { chunks: [0] })]
        })
        yield* store("motors", "General Motors grew.", one("gmotors", "General Motors"))
        yield* store("mills", "General Mills grew.", one("gmills", "General Mills"))
        yield* store("acronym", "GM grew.", one("gm", "GM"))
        const rows = yield* entityRows(sourceId)
        assert.deepStrictEqual(rows.map((row) => row.name), ["General Mills", "General Motors"])
        assert.deepStrictEqual(rows.find((row) => row.name === "General Motors")!.aliases, ["GM"])
      }))

    it.effect("a one-word name joins the one person of the source it is a short form of; two that fit stay apart", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Nicknames")
        const sourceId = yield* createSource(url, token)
        const store = (title: string, text: string, extraction: Extraction) =>
          storeDocument(sourceId, title, text, extraction)
        const people = (...named: ReadonlyArray<readonly [string, "person" | "other"]>): Extraction => ({
          entities: named.map(([name, kind], i) => entity(`e${i}`, name, kind)),
          events: [event("They met", "meet", named.map((_, i) => [`e${i}`, "participant"] as const), { chunks: [0] })]
        })
        yield* store(
          "first",
          "Melanie, Deborah Okafor, Sam Hollis and Samira met.",
          people(["Melanie", "person"], ["Deborah Okafor", "person"], ["Sam Hollis", "person"], ["Samira", "person"])
        )
        yield* store("second", "Mel, Deb and Sam met.", people(["Mel", "person"], ["Deb", "other"], ["Sam", "person"]))
        yield* store("third", "Mel met Tom.", people(["Mel", "person"], ["Tom", "person"]))
        const rows = yield* entityRows(sourceId)
        assert.deepStrictEqual(rows.map((row) => row.name), ["Deborah Okafor", "Melanie", "Sam", "Sam Hollis", "Samira", "Tom"])
        assert.deepStrictEqual(rows.find((row) => row.name === "Melanie")!.aliases, ["Mel"])
        assert.deepStrictEqual(rows.find((row) => row.name === "Deborah Okafor")!.aliases, ["Deb"])
        assert.deepStrictEqual(rows.find((row) => row.name === "Sam Hollis")!.aliases, [])
        assert.strictEqual(rows.find((row) => row.name === "Melanie")!.mention_count, 3)
      }))

    it.effect("a one-word person stored before the full name it stands for becomes that person", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Reverse")
        const sourceId = yield* createSource(url, token)
        const store = (title: string, text: string, ...named: ReadonlyArray<string>) =>
          storeDocument(sourceId, title, text, {
            entities: named.map((name, i) => entity(`e${i}`, name, "person")),
            events: [event(text, "meet", named.map((_, i) => [`e${i}`, "participant"] as const), { chunks: [0] })]
          })
        yield* store("first", "Mel, Sam and Jo met.", "Mel", "Sam", "Jo")
        yield* store("second", "Melanie Brown, Sam Hollis and Samira met.", "Melanie Brown", "Sam Hollis", "Samira")
        yield* store("third", "Joanna Lee met Jonathan Price.", "Joanna Lee", "Jonathan Price")
        yield* store("fourth", "Mel met Melanie Brown.", "Mel", "Melanie Brown")
        const rows = yield* entityRows(sourceId)
        // "Sam" also fits Samira and "Jo" both of the third document's people: they stay apart, as when they come last.
        assert.deepStrictEqual(rows.map((row) => row.name), [
          "Jo",
          "Joanna Lee",
          "Jonathan Price",
          "Melanie Brown",
          "Sam",
          "Sam Hollis",
          "Samira"
        ])
        const melanie = rows.find((row) => row.name === "Melanie Brown")!
        assert.deepStrictEqual(melanie.aliases, ["Mel"])
        assert.strictEqual(melanie.mention_count, 4)
        assert.strictEqual(rows.find((row) => row.name === "Sam Hollis")!.aliases.length, 0)
      }))

    it.effect("a deleted document takes back the name, aliases, keys and description only it gave an entity", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const graph = yield* Graph
        const token = yield* login(url, "Takeback")
        const sourceId = yield* createSource(url, token)
        const store = (title: string, text: string, named: ReadonlyArray<readonly [string, string | undefined]>) =>
          storeDocument(sourceId, title, text, {
            entities: named.map(([name, description], i) =>
              entity(`e${i}`, name, "person", description === undefined ? {} : { description })
            ),
            events: [event(text, "meet", named.map((_, i) => [`e${i}`, "participant"] as const), { chunks: [0] })]
          })
        const remove = (documentId: string) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* graph.removeDocuments([documentId])
            yield* sql`DELETE FROM documents WHERE id = ${documentId}`
          }))
        const keysOf = (entityId: string) =>
          Effect.map(
            sql<{ key: string }>`SELECT key FROM entity_keys WHERE entity_id = ${entityId} ORDER BY key`,
            (rows) => rows.map((row) => row.key)
          )
        const person = (name: string) =>
          Effect.gen(function*() {
            const [row] = yield* sql<{ id: string; description: string | null }>`
              SELECT id, description FROM entities WHERE source_id = ${sourceId} AND name = ${name}`
            const snapshot = (yield* entityRows(sourceId)).find((entry) => entry.name === name)
            return row === undefined
              ? undefined
              : { id: row.id, description: row.description, aliases: snapshot!.aliases, keys: yield* keysOf(row.id) }
          })

        yield* store("first", "Mel met Tom.", [["Mel", undefined], ["Tom", undefined]])
        const second = yield* store("second", "Melanie Brown met Tom.", [
          ["Melanie Brown", "A pianist."],
          ["Tom", undefined]
        ])
        const joined = (yield* person("Melanie Brown"))!
        assert.deepStrictEqual(joined.aliases, ["Mel"])
        assert.deepStrictEqual(joined.keys, ["mel", "melanie brown"])
        assert.strictEqual(joined.description, "A pianist.")

        yield* remove(second)
        assert.strictEqual(yield* person("Melanie Brown"), undefined, "no document left names her so")
        const left = (yield* person("Mel"))!
        assert.strictEqual(left.id, joined.id, "the same entity")
        assert.deepStrictEqual(left.aliases, [])
        assert.deepStrictEqual(left.keys, ["mel"])
        assert.strictEqual(left.description, null)

        // Two documents give the full name; one of them goes: what the other says stays.
        const third = yield* store("third", "Melanie Brown waved.", [["Melanie Brown", "A pianist."]])
        yield* store("fourth", "Melanie Brown and Mel: one person.", [
          ["Melanie Brown", "A teacher."],
          ["Mel", undefined]
        ])
        yield* remove(third)
        const kept = (yield* person("Melanie Brown"))!
        assert.strictEqual(kept.id, joined.id)
        assert.deepStrictEqual(kept.aliases, ["Mel"])
        assert.deepStrictEqual(kept.keys, ["mel", "melanie brown"])
        assert.strictEqual(kept.description, "A teacher.", "the description only the deleted document gave went")

        // Reprocessed: what the new version no longer says goes, what it says again stays.
        const globex = (aliases: ReadonlyArray<string>, description?: string): Extraction => ({
          entities: [
            entity("g", "Globex", "organization", { aliases, ...(description === undefined ? {} : { description }) })
          ],
          events: [event("Globex grew", "grow", [["g", "actor"]], { chunks: [0] })]
        })
        const firm = yield* storeDocument(
          sourceId,
          "firm",
          "Globex Worldwide (Globex, GW) grew.",
          globex(["Globex Worldwide", "GW"], "A firm.")
        )
        yield* addChunks(firm, 2, ["Globex (GW) grew."])
        yield* graph.store(firm, 2, globex(["GW"]))
        yield* makeReady(firm, 2)
        yield* sql`DELETE FROM chunks WHERE document_id = ${firm} AND version <> 2`
        yield* graph.activate(firm, 2)
        const reprocessed = (yield* person("Globex"))!
        assert.deepStrictEqual(reprocessed.aliases, ["GW"])
        assert.deepStrictEqual(reprocessed.keys, ["globex", "gw"])
        assert.strictEqual(reprocessed.description, null)

        // Rows stored before the forms were recorded: the entity keeps what it has.
        const fifth = yield* store("fifth", "Mel met Tom Hardy.", [["Mel", undefined], ["Tom Hardy", undefined]])
        yield* sql`UPDATE entity_mentions SET forms = NULL WHERE chunk_id IS NULL AND document_id <> ${fifth}
          AND entity_id = (SELECT id FROM entities WHERE source_id = ${sourceId} AND name = 'Tom Hardy')`
        yield* remove(fifth)
        assert.deepStrictEqual((yield* person("Tom Hardy"))?.keys, ["tom", "tom hardy"])
      }))

    it.effect("an entity known only as other takes the first kind a later document gives it, and keeps it", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Kinds")
        const sourceId = yield* createSource(url, token)
        const store = (title: string, text: string, named: ReadonlyArray<readonly [string, "person" | "place" | "other"]>) =>
          storeDocument(sourceId, title, text, {
            entities: named.map(([name, kind], i) => entity(`e${i}`, name, kind)),
            events: [event(text, "meet", named.map((_, i) => [`e${i}`, "participant"] as const), { chunks: [0] })]
          })
        yield* store("first", "Ngozi and Juniper met.", [["Ngozi", "other"], ["Juniper", "other"]])
        yield* store("second", "Ngozi met Tom.", [["Ngozi", "person"], ["Tom", "person"]])
        yield* store("third", "Ngozi went to Juniper.", [["Ngozi", "place"], ["Juniper", "other"]])
        const rows = yield* entityRows(sourceId)
        // Ngozi became a person and stayed one: the place mention is another entity; Juniper has no kind yet.
        assert.deepStrictEqual(summary(rows).map((row) => row.split(":")[0]), [
          "Juniper/other",
          "Ngozi/person",
          "Ngozi/place",
          "Tom/person"
        ])
        assert.strictEqual(rows.find((row) => row.name === "Ngozi" && row.kind === "person")!.mention_count, 2)
      }))

    it.effect("store is idempotent per document version: same ids, no duplicate rows, same counts", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const graph = yield* Graph
        const { sourceId, a } = yield* setup("Idem")
        const events = () => sql<{ id: string }>`SELECT id FROM events WHERE document_id = ${a} ORDER BY id`
        const before = { events: yield* events(), mentions: yield* rowCount("entity_mentions", a) }
        const entitiesBefore = yield* entityRows(sourceId)
        yield* graph.store(a, 1, extractionA)
        yield* graph.store(a, 1, extractionA)
        yield* graph.activate(a, 1)
        assert.deepStrictEqual(yield* events(), before.events)
        assert.strictEqual(yield* rowCount("entity_mentions", a), before.mentions)
        assert.deepStrictEqual(yield* entityRows(sourceId), entitiesBefore)
        const [participants] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM event_participants p JOIN events e ON e.id = p.event_id
          WHERE e.document_id = ${a}`
        assert.strictEqual(participants!.n, 5, "2 + 2 participants and the place of the first event")
      }))

    it.effect("a large extraction is stored whole; a lone surrogate is stored as U+FFFD", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const token = yield* login(url, "Many")
        const sourceId = yield* createSource(url, token)
        // More entities, mentions and events than one insert statement takes (1,000, 500 and 200 rows).
        const names = Array.from({ length: 1_200 }, (_, i) => `Station ${i}`)
        const extraction: Extraction = {
          entities: [
            ...names.map((name, i) => entity(`s${i}`, name, "place")),
            entity("broken", "Lone \ud800 Name", "person")
          ],
          events: names.map((name, i) =>
            event(`${name} opened`, "open", [[`s${i}`, "object"]], { chunks: [0], time: onDay("2020-01-02") })
          )
        }
        const id = yield* storeDocument(sourceId, "many", `${names.join(", ")} and Lone \ud800 Name.`, extraction)
        const [counts] = yield* sql<{ entities: number; mentions: number; events: number; participants: number }>`
          SELECT (SELECT count(*) FROM entities WHERE source_id = ${sourceId})::int AS entities,
            (SELECT count(*) FROM entity_mentions WHERE document_id = ${id} AND chunk_id IS NOT NULL)::int AS mentions,
            (SELECT count(*) FROM events WHERE document_id = ${id})::int AS events,
            (SELECT count(*) FROM event_participants p JOIN events e ON e.id = p.event_id
              WHERE e.document_id = ${id})::int AS participants`
        assert.deepStrictEqual(counts, { entities: 1_201, mentions: 1_200, events: 1_200, participants: 1_200 })
        const [broken] = yield* sql<{ name: string }>`
          SELECT name FROM entities WHERE source_id = ${sourceId} AND kind = 'person'`
        assert.strictEqual(broken!.name, "Lone \ufffd Name")
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
      }))

    it.effect("reprocess: the new version is invisible until activated, then replaces exactly the old one", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const graph = yield* Graph
        const { url, token, sourceId, owner, a, b } = yield* setup("Repro")
        const bEvents = yield* sql<{ id: string }>`SELECT id FROM events WHERE document_id = ${b} ORDER BY id`
        yield* addChunks(a, 2, chunksA2)
        yield* graph.store(a, 2, extractionA2)
        const listed = yield* graph.listEvents(owner, sourceId, { limit: 100 })
        assert.strictEqual(listed.items.length, 4, "still the active version's events")
        assert.deepStrictEqual(summary(yield* entityRows(sourceId))[2], "Jane Smith/person:3:2019-03-01..2021-06-01")
        assert.strictEqual(yield* eventCount(url, token, sourceId), 4)

        // As Pipeline.index does: the version becomes active, the old chunks go, then the graph follows.
        yield* makeReady(a, 2)
        yield* sql`DELETE FROM chunks WHERE document_id = ${a} AND version <> 2`
        yield* graph.activate(a, 2)
        const [versions] = yield* sql<{ versions: Array<number> }>`
          SELECT array_agg(DISTINCT version) AS versions FROM events WHERE document_id = ${a}`
        assert.deepStrictEqual(versions!.versions, [2])
        assert.strictEqual(yield* rowCount("events", a), 1)
        assert.deepStrictEqual(
          yield* sql<{ id: string }>`SELECT id FROM events WHERE document_id = ${b} ORDER BY id`,
          bEvents,
          "the other document's events are untouched"
        )
        assert.deepStrictEqual(summary(yield* entityRows(sourceId)), [
          "Acme Corp/organization:2:2019-03-01..2019-03-01",
          "Berlin/place:1:2019-03-01..2019-03-01",
          "Jane Smith/person:2:2019-03-01..2021-06-01",
          "Jordan/place:2:2021-06-01..2021-06-01"
        ], "Jordan the person had evidence only in version 1")
        assert.strictEqual(yield* eventCount(url, token, sourceId), 3)
        const [mentionVersions] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM entity_mentions WHERE document_id = ${a} AND version <> 2`
        assert.strictEqual(mentionVersions!.n, 0)
      }))

    it.effect("deleting a document removes its events; orphans disappear, shared entities keep the rest", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const graph = yield* Graph
        const { url, token, sourceId, b } = yield* setup("Del")
        const before = yield* entityRows(sourceId)
        // As Documents.remove should: in its transaction, before the document row is deleted.
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* graph.removeDocuments([b])
          yield* sql`DELETE FROM documents WHERE id = ${b}`
        }))
        assert.strictEqual(yield* rowCount("events", b), 0)
        assert.strictEqual(yield* rowCount("entity_mentions", b), 0)
        const after = yield* entityRows(sourceId)
        assert.deepStrictEqual(summary(after), [
          "Acme Corp/organization:2:2019-03-01..2019-03-01",
          "Berlin/place:1:2019-03-01..2019-03-01",
          "Jane Smith/person:2:2019-03-01..2020-05-10",
          "Jordan/person:1:2020-05-10..2020-05-10"
        ])
        const id = (rows: ReadonlyArray<EntitySnapshot>, name: string, kind: string) =>
          rows.find((r) => r.name === name && r.kind === kind)!.id
        assert.strictEqual(id(after, "Jane Smith", "person"), id(before, "Jane Smith", "person"), "same entity kept")
        assert.deepStrictEqual(before.find((r) => r.name === "Acme Corp")!.aliases, ["Acme"])
        assert.deepStrictEqual(after.find((r) => r.name === "Acme Corp")!.aliases, [], "only the deleted document said Acme")
        assert.deepStrictEqual(after.find((r) => r.name === "Jane Smith")!.aliases, ["Smith"])
        const [orphans] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM entity_keys k WHERE k.source_id = ${sourceId}
            AND k.entity_id = ${id(before, "Jordan", "place")}`
        assert.strictEqual(orphans!.n, 0, "the orphan's keys went with it")
        assert.strictEqual(yield* eventCount(url, token, sourceId), 2)
      }))

    it.effect("counts kept by deltas equal a recount after ingest, a store again, reprocess and delete", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const graph = yield* Graph
        const { sourceId, a, b } = yield* setup("Delta")
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
        // The counted version stored again, with other counts and an earlier first time.
        yield* graph.store(a, 1, {
          ...extractionA,
          entities: extractionA.entities.map((one) => ({ ...one, mentions: one.mentions + 3 })),
          events: extractionA.events.map((one, i) => i === 0 ? { ...one, time: onDay("2018-01-15") } : one)
        })
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
        assert.strictEqual(summary(yield* entityRows(sourceId))[2], "Jane Smith/person:6:2018-01-15..2021-06-01")
        // Reprocess: a new version, stored while the old one counts, then activated.
        yield* addChunks(a, 2, chunksA2)
        yield* graph.store(a, 2, extractionA2)
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
        yield* makeReady(a, 2)
        yield* graph.activate(a, 2)
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
        // Deleting the document that holds Jane Smith's last time: looked up again from what is left.
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* graph.removeDocuments([b])
          yield* sql`DELETE FROM documents WHERE id = ${b}`
        }))
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
        assert.deepStrictEqual(summary(yield* entityRows(sourceId)), [
          "Acme Corp/organization:1:2019-03-01..2019-03-01",
          "Berlin/place:1:2019-03-01..2019-03-01",
          "Jane Smith/person:1:2019-03-01..2019-03-01"
        ])
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* graph.removeDocuments([a])
          yield* sql`DELETE FROM documents WHERE id = ${a}`
        }))
        assert.deepStrictEqual(yield* entityRows(sourceId), [])
      }))

    it.effect("activation removes an older version's events even when no entity took part in them", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const graph = yield* Graph
        const { a } = yield* setup("Bare")
        const versions = () =>
          sql<{ version: number }>`SELECT DISTINCT version FROM events WHERE document_id = ${a} ORDER BY version`
        yield* addChunks(a, 2, ["Something happened."])
        yield* graph.store(a, 2, { entities: [], events: [event("Something happened", "happen", [])] })
        yield* makeReady(a, 2)
        yield* graph.activate(a, 2)
        assert.deepStrictEqual((yield* versions()).map((row) => row.version), [2])
        yield* addChunks(a, 3, chunksA2)
        yield* graph.store(a, 3, extractionA2)
        yield* makeReady(a, 3)
        yield* graph.activate(a, 3)
        assert.deepStrictEqual((yield* versions()).map((row) => row.version), [3])
      }))

    it.effect("a document that is not ready contributes nothing visible until it is", () =>
      Effect.gen(function*() {
        const graph = yield* Graph
        const { url, token, sourceId, owner } = yield* setup("Vis")
        const c = yield* seedDocument(sourceId, "c", ["Ada Lovelace wrote the first program."], { ready: false })
        yield* graph.store(c, 1, {
          entities: [entity("ada", "Ada Lovelace", "person")],
          events: [event("Ada Lovelace wrote the first program", "write", [["ada", "actor"]])]
        })
        const names = (page: { readonly items: ReadonlyArray<{ readonly name: string }> }) =>
          page.items.map((e) => e.name)
        assert.notInclude(names(yield* graph.listEntities(owner, sourceId, { limit: 100 })), "Ada Lovelace")
        assert.strictEqual(yield* eventCount(url, token, sourceId), 4)
        yield* makeReady(c, 1)
        yield* graph.activate(c, 1)
        assert.include(names(yield* graph.listEntities(owner, sourceId, { limit: 100 })), "Ada Lovelace")
        assert.strictEqual(yield* eventCount(url, token, sourceId), 5)
      }))
  })

  layer(freshServer(engine, { embedModel: "none", extractor: "rules" }))(`graph counts through the pipeline (${engine})`, (it) => {
    it.effect("after ingest, reprocess and delete, every entity's counts and times equal a recount", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Pipeline counts")
        const sourceId = yield* createSource(url, token)
        const texts = [
          "Jane Smith founded Acme Corp in Berlin on 3 March 2019. Smith met Jordan Lee at the Acme office.",
          "On 1 June 2021 Dr. Jane Smith visited Acme in Madrid. Acme opened an office in Madrid.",
          "Jordan Lee joined Acme Corp in 2020. Lee met Jane Smith in Berlin on 10 May 2020.",
          "Acme hired Priya Nair in 2022. Priya Nair met Jordan Lee in Madrid."
        ]
        const ids: Array<string> = []
        for (const [i, text] of texts.entries()) {
          const accepted = yield* ingestText(url, token, sourceId, `doc ${i}`, text)
          ids.push(accepted.body.id)
          yield* waitForDocument(url, token, sourceId, accepted.body.id)
        }
        const entityCount = () =>
          Effect.map(request(url, `/api/v1/sources/${sourceId}/entities?limit=100`, { token }), (reply) =>
            reply.body.items.length as number)
        assert.isAbove(yield* entityCount(), 3)
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])

        const again = yield* request(url, `/api/v1/sources/${sourceId}/documents/${ids[0]}/reprocess`, {
          method: "POST",
          token
        })
        yield* waitForDocument(url, token, sourceId, ids[0]!, (d) => d.status === "ready" && d.job_id === again.body.job_id)
        assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])

        for (const id of [ids[1]!, ids[3]!]) {
          const removed = yield* request(url, `/api/v1/sources/${sourceId}/documents/${id}`, { method: "DELETE", token })
          assert.strictEqual(removed.status, 200)
          assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
        }
        assert.isAbove(yield* entityCount(), 0)
      }))
  })

  // Activations of one source's documents do not take the source's turn (a first one takes nothing away): they,
  // the stores, reprocessing and deletion lock the rows they share in one order. A deadlock PostgreSQL broke would
  // show as a retried or failed job.
  layer(freshServer(engine, { embedModel: "none", extractor: "rules", workerConcurrency: 6 }))(
    `graph counts with documents processed at once (${engine})`,
    (it) => {
      it.effect("ingest, reprocess and delete at once: every job succeeds first time, counts equal a recount", () =>
        Effect.gen(function*() {
          const { sql, url } = yield* TestServer
          const token = yield* login(url, "Concurrent counts")
          const sourceId = yield* createSource(url, token)
          const people = ["Jane Smith", "Jordan Lee", "Priya Nair", "Tomas Berg", "Ana Silva", "Kenji Mori"]
          const places = ["Berlin", "Madrid", "Lisbon", "Oslo"]
          const textOf = (n: number) =>
            `${people[n % 6]} met ${people[(n + 1) % 6]} at Acme Corp in ${places[n % 4]} ` +
            `on ${1 + (n % 27)} May 2021. ` +
            `${people[(n + 2) % 6]} joined Globex in ${places[(n + 1) % 4]} in ${2000 + n}. Report ${n}.`
          const ingest = (n: number) =>
            Effect.map(ingestText(url, token, sourceId, `doc ${n}`, textOf(n)), (reply) => reply.body.id as string)
          const ready = (ids: ReadonlyArray<string>) =>
            Effect.forEach(ids, (id) => waitForDocument(url, token, sourceId, id, undefined, 120_000), {
              concurrency: "unbounded"
            })
          const first = yield* Effect.forEach(Array.from({ length: 18 }, (_, n) => n), ingest, { concurrency: 6 })
          yield* ready(first)
          const reprocessed = first.slice(0, 6)
          const removed = first.slice(6, 12)
          const [added] = yield* Effect.all([
            Effect.forEach(Array.from({ length: 6 }, (_, n) => 18 + n), ingest, { concurrency: 6 }),
            Effect.forEach(reprocessed, (id) =>
              request(url, `/api/v1/sources/${sourceId}/documents/${id}/reprocess`, { method: "POST", token }), {
              concurrency: 6
            }),
            Effect.forEach(removed, (id) =>
              request(url, `/api/v1/sources/${sourceId}/documents/${id}`, { method: "DELETE", token }), {
              concurrency: 6
            })
          ], { concurrency: "unbounded" })
          yield* Effect.forEach([...reprocessed, ...added], (id) =>
            waitForDocument(url, token, sourceId, id, (d) => d.status === "ready" && d.stage === null, 120_000), {
            concurrency: "unbounded"
          })
          const jobs = yield* sql<{ kind: string; status: string; attempts: number }>`
            SELECT kind, status, attempts FROM jobs WHERE source_id = ${sourceId} AND kind <> 'sync'`
          const settled = jobs.filter((job) => job.status !== "queued" && job.status !== "running")
          assert.strictEqual(settled.length, jobs.length, "every job has ended")
          assert.deepStrictEqual(
            jobs.filter((job) => job.attempts > 0 || (job.status !== "succeeded" && job.status !== "cancelled")),
            [],
            "no job retried or failed"
          )
          assert.deepStrictEqual(yield* countsOffRecount(sourceId), [])
          const [counted] = yield* sql<{ documents: number; entities: number }>`
            SELECT
              (SELECT count(*) FROM documents WHERE source_id = ${sourceId} AND status = 'ready')::int AS documents,
              (SELECT count(*) FROM entities WHERE source_id = ${sourceId} AND name = 'Jane Smith')::int AS entities`
          assert.deepStrictEqual(counted, { documents: 18, entities: 1 }, "one Jane Smith across all documents")
        }), 240_000)
    }
  )
}
