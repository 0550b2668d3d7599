import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  chunksA,
  chunksB,
  entity,
  event,
  extractionA,
  extractionB,
  onDay,
  storeActiveDocument
} from "../support/graph.ts"
import { login, request } from "../support/http.ts"
import { createSource } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

interface Seeded {
  readonly url: string
  readonly owner: string
  readonly intruder: string
  readonly source: string
  readonly other: string
  readonly foreign: string
  /** Entity ids by "name/kind" in `source`, and the one entity of `other` and of `foreign`. */
  readonly entities: Record<string, string>
  readonly otherEntity: string
  readonly foreignEntity: string
  /** Event ids of `source` by kind. */
  readonly events: Record<string, string>
  readonly foreignEvent: string
}

const seededServers = new Map<string, Seeded>()

/** Once per server: Owen's source with documents A, B and C, a second source, and Mallory's source. */
const seed = Effect.gen(function*() {
  const { url, sql } = yield* TestServer
  const known = seededServers.get(url)
  if (known !== undefined) return known
  const owner = yield* login(url, "Owen")
  const intruder = yield* login(url, "Mallory")
  const source = yield* createSource(url, owner, "History")
  const other = yield* createSource(url, owner, "Other")
  const foreign = yield* createSource(url, intruder, "Mine")
  yield* storeActiveDocument(source, "a", chunksA, extractionA)
  yield* storeActiveDocument(source, "b", chunksB, extractionB)
  yield* storeActiveDocument(source, "c", ["International Business Machines hired Jane Smith. IBM grew."], {
    entities: [
      entity("ibm", "International Business Machines", "organization", { aliases: ["IBM"], mentions: 2 }),
      entity("jane", "Jane Smith", "person")
    ],
    events: [
      event("IBM hired Jane Smith", "hire", [["ibm", "actor"], ["jane", "object"]], { time: onDay("2022-01-15") })
    ]
  })
  yield* storeActiveDocument(other, "o", ["Grace Hopper found a moth."], {
    entities: [entity("grace", "Grace Hopper", "person")],
    events: [event("Grace Hopper found a moth", "find", [["grace", "actor"]], { time: onDay("1947-09-09") })]
  })
  yield* storeActiveDocument(foreign, "f", ["Eve listened in."], {
    entities: [entity("eve", "Eve", "person")],
    events: [event("Eve listened in", "listen", [["eve", "actor"]])]
  })
  const entityRows = yield* sql<{ id: string; name: string; kind: string; source_id: string }>`
    SELECT id, name, kind, source_id FROM entities`
  const eventRows = yield* sql<{ id: string; kind: string; source_id: string }>`SELECT id, kind, source_id FROM events`
  const seeded: Seeded = {
    url,
    owner,
    intruder,
    source,
    other,
    foreign,
    entities: Object.fromEntries(
      entityRows.filter((r) => r.source_id === source).map((r) => [`${r.name}/${r.kind}`, r.id])
    ),
    otherEntity: entityRows.find((r) => r.source_id === other)!.id,
    foreignEntity: entityRows.find((r) => r.source_id === foreign)!.id,
    events: Object.fromEntries(eventRows.filter((r) => r.source_id === source).map((r) => [r.kind, r.id])),
    foreignEvent: eventRows.find((r) => r.source_id === foreign)!.id
  }
  seededServers.set(url, seeded)
  return seeded
})

const get = (path: string, token: string) =>
  Effect.flatMap(TestServer, ({ url }) => request(url, `/api/v1${path}`, { token }))

/** Every item of a paginated list, following next_cursor with the given page size. */
const allPages = (path: string, token: string, limit: number) =>
  Effect.gen(function*() {
    const items: Array<any> = []
    let cursor: string | null = null
    const separator = path.includes("?") ? "&" : "?"
    for (let page = 0; page < 50; page++) {
      const reply: { status: number; body: any; text: string } = yield* get(
        `${path}${separator}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
        token
      )
      assert.strictEqual(reply.status, 200, reply.text)
      assert.isAtMost(reply.body.items.length, limit)
      items.push(...reply.body.items)
      cursor = reply.body.next_cursor
      if (cursor === null) return items
    }
    throw new Error("pagination did not end")
  })

const expectError = (reply: { status: number; body: any; text: string }, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.body.error.code, code, reply.text)
}

const names = (items: ReadonlyArray<{ name: string }>) => items.map((item) => item.name)

for (const engine of engines) {
  layer(freshServer(engine, { workerConcurrency: 0 }))(`events and entities API (${engine})`, (it) => {
    it.effect("entities: shape, default order by mentions, filters and both sorts paginated", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const base = `/sources/${s.source}/entities`
        const all = yield* get(`${base}?limit=100`, s.owner)
        assert.strictEqual(all.status, 200, all.text)
        assert.isNull(all.body.next_cursor)
        const jane = all.body.items.find((e: any) => e.name === "Jane Smith")
        assert.deepStrictEqual(Object.keys(jane).sort(), [
          "aliases",
          "created_at",
          "description",
          "event_count",
          "first_seen",
          "id",
          "kind",
          "last_seen",
          "mention_count",
          "name",
          "source_id",
          "updated_at"
        ])
        assert.deepStrictEqual(
          [jane.kind, jane.aliases, jane.mention_count, jane.event_count, jane.description, jane.source_id],
          ["person", ["Smith"], 4, 4, "Founder of Acme.", s.source]
        )
        assert.deepStrictEqual([jane.first_seen, jane.last_seen], ["2019-03-01T00:00:00.000Z", "2022-01-15T00:00:00.000Z"])
        const counts = all.body.items.map((e: any) => [e.mention_count, e.id])
        for (let i = 1; i < counts.length; i++) {
          const [prev, cur] = [counts[i - 1], counts[i]]
          assert.isTrue(prev[0] > cur[0] || (prev[0] === cur[0] && prev[1] < cur[1]), "mentions desc, then id")
        }
        assert.deepStrictEqual(names(all.body.items).slice(0, 2), ["Jane Smith", "Acme Corp"])
        assert.strictEqual(all.body.items.length, 6)

        const places = yield* get(`${base}?kind=place`, s.owner)
        assert.sameMembers(names(places.body.items), ["Berlin", "Jordan"])
        const byAlias = yield* get(`${base}?q=ibm`, s.owner)
        assert.deepStrictEqual(names(byAlias.body.items), ["International Business Machines"])
        const byName = yield* get(`${base}?q=SMI`, s.owner)
        assert.deepStrictEqual(names(byName.body.items), ["Jane Smith"])
        const jordanPeople = yield* get(`${base}?q=jord&kind=person`, s.owner)
        assert.deepStrictEqual(
          jordanPeople.body.items.map((e: any) => [e.name, e.kind]),
          [["Jordan", "person"]]
        )

        const recent = yield* get(`${base}?sort=recent&limit=100`, s.owner)
        const seen = recent.body.items.map((e: any) => e.last_seen)
        assert.sameMembers(names(recent.body.items.slice(0, 2)), ["Jane Smith", "International Business Machines"])
        for (let i = 1; i < seen.length; i++) {
          if (seen[i] !== null) assert.isTrue(seen[i - 1] !== null && seen[i - 1] >= seen[i], "latest first, undated last")
        }

        for (const sort of ["mentions", "recent"]) {
          const full = (yield* get(`${base}?sort=${sort}&limit=100`, s.owner)).body.items.map((e: any) => e.id)
          const paged = (yield* allPages(`${base}?sort=${sort}`, s.owner, 2)).map((e: any) => e.id)
          assert.deepStrictEqual(paged, full, `${sort} pages`)
        }
        const first = yield* get(`${base}?limit=1`, s.owner)
        expectError(yield* get(`${base}?sort=recent&cursor=${first.body.next_cursor}`, s.owner), 400, "invalid_cursor")
        expectError(yield* get(`${base}?cursor=nonsense`, s.owner), 400, "invalid_cursor")
        for (const query of ["limit=0", "limit=101", "kind=planet", "sort=loudest", "q="]) {
          const reply: { status: number; body: any; text: string } = yield* get(`${base}?${query}`, s.owner)
          expectError(reply, 422, "validation_failed")
          assert.match(reply.body.error.issues[0].path, /^query\./)
        }
      }))

    it.effect("entity detail: aliases, events in time order, related entities with evidence, chunks", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const jane = s.entities["Jane Smith/person"]!
        const reply: { status: number; body: any; text: string } = yield* get(`/sources/${s.source}/entities/${jane}`, s.owner)
        assert.strictEqual(reply.status, 200, reply.text)
        const detail = reply.body
        assert.strictEqual(detail.id, jane)
        assert.deepStrictEqual(detail.aliases, ["Smith"])
        assert.deepStrictEqual(detail.events.map((e: any) => e.kind), ["found", "meet", "visit", "hire"])
        const founding = detail.events[0]
        assert.deepStrictEqual(founding.time, {
          start: "2019-03-01T00:00:00.000Z",
          end: "2019-03-02T00:00:00.000Z",
          precision: "day",
          text: "2019-03-01",
          relative: false
        })
        assert.deepStrictEqual(founding.place, { id: s.entities["Berlin/place"], name: "Berlin", kind: "place" })
        assert.deepStrictEqual(
          founding.participants.map((p: any) => [p.name, p.role]),
          [["Jane Smith", "actor"], ["Acme Corp", "object"], ["Berlin", "place"]]
        )
        assert.lengthOf(founding.chunk_ids, 1)
        const related = detail.related.map((r: any) => [r.entity.name, r.entity.kind, r.evidence_count, r.event_ids])
        assert.sameDeepMembers(related, [
          ["Acme Corp", "organization", 1, [s.events.found]],
          ["Berlin", "place", 1, [s.events.found]],
          ["Jordan", "person", 1, [s.events.meet]],
          ["Jordan", "place", 1, [s.events.visit]],
          ["International Business Machines", "organization", 1, [s.events.hire]]
        ])
        assert.strictEqual(detail.chunks.length, 4, "A's two chunks, B's first and C's")
        for (const chunk of detail.chunks) {
          assert.match(chunk.excerpt, /Smith/)
          assert.isAtLeast(chunk.mentions, 1)
          assert.isString(chunk.document_id)
        }

        expectError(yield* get(`/sources/${s.source}/entities/nope`, s.owner), 404, "entity_not_found")
        expectError(yield* get(`/sources/${s.source}/entities/${s.otherEntity}`, s.owner), 404, "entity_not_found")
        expectError(yield* get(`/sources/${s.other}/entities/${jane}`, s.owner), 404, "entity_not_found")
      }))

    it.effect("events: time order with undated last, overlap filters, entity and kind filters, pages, 422s", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const base = `/sources/${s.source}/events`
        const all = yield* get(base, s.owner)
        assert.strictEqual(all.status, 200, all.text)
        assert.deepStrictEqual(all.body.items.map((e: any) => e.kind), ["found", "meet", "visit", "hire", "open"])
        const open = all.body.items[4]
        assert.isNull(open.time)
        assert.deepStrictEqual(Object.keys(open).sort(), [
          "chunk_ids",
          "confidence",
          "created_at",
          "document_id",
          "id",
          "kind",
          "participants",
          "place",
          "source_id",
          "statement",
          "time"
        ])
        assert.strictEqual(open.confidence, 0.8)
        const kinds = (query: string) =>
          Effect.map(get(`${base}?${query}`, s.owner), (reply) => {
            assert.strictEqual(reply.status, 200, reply.text)
            return reply.body.items.map((e: any) => e.kind)
          })
        assert.deepStrictEqual(yield* kinds("from=2020-01-01"), ["meet", "visit", "hire"])
        assert.deepStrictEqual(yield* kinds("to=2020-01-01"), ["found"])
        assert.deepStrictEqual(yield* kinds("from=2020-05-10T12:00:00Z&to=2020-05-10T13:00:00%2B00:00"), ["meet"])
        assert.deepStrictEqual(yield* kinds("from=2020-05-11&to=2021-06-01"), [], "end is exclusive, start too")
        assert.deepStrictEqual(yield* kinds(`entity_id=${s.entities["Jordan/place"]}`), ["visit", "open"])
        assert.deepStrictEqual(yield* kinds("kind=meet"), ["meet"])
        const paged = yield* allPages(base, s.owner, 2)
        assert.deepStrictEqual(paged.map((e: any) => e.id), all.body.items.map((e: any) => e.id))
        const single = yield* allPages(base, s.owner, 1)
        assert.deepStrictEqual(single.map((e: any) => e.id), all.body.items.map((e: any) => e.id))

        expectError(yield* get(`${base}?entity_id=${s.otherEntity}`, s.owner), 404, "entity_not_found")
        expectError(yield* get(`${base}?cursor=xyz`, s.owner), 400, "invalid_cursor")
        for (
          const query of [
            "from=yesterday", "from=2020-13-45", "from=2023-02-30", "to=0000-06-01", "to=2020-01-01T10:00", "limit=0",
            "limit=101"
          ]
        ) {
          expectError(yield* get(`${base}?${query}`, s.owner), 422, "validation_failed")
        }
        const backwards = yield* get(`${base}?from=2021-01-01&to=2020-01-01`, s.owner)
        expectError(backwards, 422, "validation_failed")
        assert.strictEqual(backwards.body.error.issues[0].path, "query.to")
      }))

    it.effect("graph: default view, seeds with depth, node limit with truncated, stable ids, source_ids", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const graph = (query: string) =>
          Effect.map(get(`/graph?${query}`, s.owner), (reply) => {
            assert.strictEqual(reply.status, 200, reply.text)
            return reply.body
          })
        const consistent = (body: any) => {
          const ids = new Set(body.nodes.map((n: any) => n.id))
          assert.strictEqual(ids.size, body.nodes.length, "node ids are unique")
          for (const edge of body.edges) {
            assert.isTrue(ids.has(edge.source) && ids.has(edge.target), `edge ${edge.id} joins nodes of the graph`)
            if (edge.type === "participation") {
              assert.strictEqual(edge.id, `participation:${edge.source.slice(6)}:${edge.target.slice(7)}:${edge.role}`)
            } else {
              assert.strictEqual(edge.id, `relation:${edge.source.slice(7)}:${edge.target.slice(7)}`)
              assert.isNull(edge.role)
            }
          }
          for (const node of body.nodes) assert.strictEqual(node.id, `${node.type}:${node.ref_id}`)
        }

        const overview = yield* graph(`source_ids=${s.source}`)
        consistent(overview)
        assert.isFalse(overview.truncated)
        assert.strictEqual(overview.nodes.filter((n: any) => n.type === "entity").length, 6)
        assert.strictEqual(overview.nodes.filter((n: any) => n.type === "event").length, 5)
        assert.deepStrictEqual(yield* graph(`source_ids=${s.source}`), overview, "same ids and order on every call")

        const jane = s.entities["Jane Smith/person"]!
        const depth1 = yield* graph(`seed_entity_id=${jane}`)
        consistent(depth1)
        assert.strictEqual(depth1.nodes[0].id, `entity:${jane}`)
        assert.deepStrictEqual(Object.keys(depth1.nodes[0]).sort(), [
          "id",
          "kind",
          "label",
          "mention_count",
          "ref_id",
          "source_id",
          "time",
          "type"
        ])
        assert.sameMembers(
          depth1.nodes.filter((n: any) => n.type === "event").map((n: any) => n.kind),
          ["found", "meet", "visit", "hire"]
        )
        assert.strictEqual(depth1.nodes.length, 10, "Jane, her 4 events and the 5 others in them")
        const acme = s.entities["Acme Corp/organization"]!
        const relation = depth1.edges.find((e: any) => e.type === "relation" && e.id.includes(acme) && e.id.includes(jane))
        assert.strictEqual(relation.weight, 1)
        const participation = depth1.edges.find((e: any) => e.id === `participation:${s.events.found}:${jane}:actor`)
        assert.deepStrictEqual(participation, {
          id: `participation:${s.events.found}:${jane}:actor`,
          type: "participation",
          source: `event:${s.events.found}`,
          target: `entity:${jane}`,
          role: "actor",
          weight: 1
        })
        const depth2 = yield* graph(`seed_entity_id=${jane}&depth=2`)
        consistent(depth2)
        assert.strictEqual(depth2.nodes.length, 11, "adds Acme's opening in Jordan")
        assert.deepStrictEqual((yield* graph(`seed_entity_id=${jane}&depth=3`)).nodes.length, 11)

        const visit = yield* graph(`seed_event_id=${s.events.visit}`)
        consistent(visit)
        assert.deepStrictEqual(
          visit.nodes.map((n: any) => n.id),
          [`event:${s.events.visit}`, `entity:${jane}`, `entity:${s.entities["Jordan/place"]}`],
          "the seed, then its participants, the most mentioned first"
        )

        const limited = yield* graph(`seed_entity_id=${jane}&limit=3`)
        consistent(limited)
        assert.strictEqual(limited.nodes.length, 3)
        assert.isTrue(limited.truncated)
        assert.strictEqual(limited.nodes[0].id, `entity:${jane}`)
        const tiny = yield* graph(`source_ids=${s.source}&limit=4`)
        assert.strictEqual(tiny.nodes.length, 4)
        assert.isTrue(tiny.truncated)

        const everything = yield* graph("")
        const bothByComma = yield* graph(`source_ids=${s.source},${s.other}`)
        const bothRepeated = yield* graph(`source_ids=${s.other}&source_ids=${s.source}`)
        assert.deepStrictEqual(bothByComma, everything)
        assert.deepStrictEqual(bothRepeated, everything)
        assert.strictEqual(everything.nodes.length, 13)
        const onlyOther = yield* graph(`source_ids=${s.other}`)
        assert.deepStrictEqual(onlyOther.nodes.map((n: any) => n.label), ["Grace Hopper", "Grace Hopper found a moth"])

        expectError(yield* get(`/graph?source_ids=${s.other}&seed_entity_id=${jane}`, s.owner), 404, "entity_not_found")
        expectError(yield* get(`/graph?seed_event_id=nope`, s.owner), 404, "event_not_found")
        for (
          const query of [
            "depth=0",
            "depth=4",
            "limit=0",
            "limit=501",
            "depth=two",
            "source_ids=",
            `seed_entity_id=${jane}&seed_event_id=${s.events.visit}`
          ]
        ) {
          expectError(yield* get(`/graph?${query}`, s.owner), 422, "validation_failed")
        }
      }))

    it.effect("another user's source, entity or event is a 404 on every route; no token is a 401", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const jane = s.entities["Jane Smith/person"]!
        const mine = s.intruder
        expectError(yield* get(`/sources/${s.source}/entities`, mine), 404, "source_not_found")
        expectError(yield* get(`/sources/${s.source}/entities/${jane}`, mine), 404, "source_not_found")
        expectError(yield* get(`/sources/${s.foreign}/entities/${jane}`, mine), 404, "entity_not_found")
        expectError(yield* get(`/sources/${s.source}/events`, mine), 404, "source_not_found")
        expectError(yield* get(`/sources/${s.foreign}/events?entity_id=${jane}`, mine), 404, "entity_not_found")
        expectError(yield* get(`/graph?source_ids=${s.source}`, mine), 404, "source_not_found")
        expectError(yield* get(`/graph?source_ids=${s.foreign},${s.source}`, mine), 404, "source_not_found")
        expectError(yield* get(`/graph?seed_entity_id=${jane}`, mine), 404, "entity_not_found")
        expectError(yield* get(`/graph?seed_event_id=${s.events.visit}`, mine), 404, "event_not_found")
        const own = yield* get(`/graph`, mine)
        assert.deepStrictEqual(own.body.nodes.map((n: any) => n.ref_id), [s.foreignEntity, s.foreignEvent])
        expectError(yield* get(`/sources/${s.foreign}/entities/${s.foreignEntity}`, s.owner), 404, "source_not_found")
        for (
          const path of [
            `/sources/${s.source}/entities`,
            `/sources/${s.source}/entities/${jane}`,
            `/sources/${s.source}/events`,
            "/graph"
          ]
        ) {
          const reply = yield* Effect.flatMap(TestServer, ({ url }) => request(url, `/api/v1${path}`))
          assert.strictEqual(reply.status, 401, path)
        }
      }))
  })
}
