import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { hubEvents, storedNeighbours } from "../../src/stores/Universe.ts"
import { entity, event, onDay, storeActiveDocument } from "../support/graph.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument, waitForUniverse } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { boardMeetings, footballSeason, sponsorship } from "../support/universeFixture.ts"

interface Seeded {
  readonly owner: string
  readonly intruder: string
  readonly source: string
  readonly foreignSource: string
  /** Document ids by title. */
  readonly documents: Record<string, string>
  readonly foreignDocument: string
}

const seeded = new Map<string, Seeded>()

const api = (path: string, token: string | undefined, init: { method?: string; json?: unknown } = {}) =>
  Effect.flatMap(TestServer, ({ url }) =>
    request(url, `/api/v1${path}`, { ...init, ...(token === undefined ? {} : { token }) }))

const expand = (token: string, body: Record<string, unknown>) => api("/universe/expand", token, { json: body })

/** The manifest once no recompute is pending and the map was computed. */
const settled = (token: string, query = "") => Effect.flatMap(TestServer, ({ url }) => waitForUniverse(url, token, query))

const ingestAll = (url: string, token: string, source: string, docs: ReadonlyArray<{ title: string; text: string }>) =>
  Effect.gen(function*() {
    const ids: Record<string, string> = {}
    for (const doc of docs) {
      const reply = yield* ingestText(url, token, source, doc.title, doc.text)
      assert.strictEqual(reply.status, 202, reply.text)
      ids[doc.title] = reply.body.id
    }
    for (const id of Object.values(ids)) {
      const document = yield* waitForDocument(url, token, source, id)
      assert.strictEqual(document.status, "ready")
    }
    return ids
  })

/** Once per server: Owen's source with both worlds and the bridge, and Mallory's own source. */
const seed = Effect.gen(function*() {
  const { url } = yield* TestServer
  const known = seeded.get(url)
  if (known !== undefined) return known
  const owner = yield* login(url, "Owen")
  const intruder = yield* login(url, "Mallory")
  const source = yield* createSource(url, owner, "Everything")
  const foreignSource = yield* createSource(url, intruder, "Mine")
  const documents = yield* ingestAll(url, owner, source, [...boardMeetings, ...footballSeason, sponsorship])
  const foreign = yield* ingestAll(url, intruder, foreignSource, [{
    title: "Secret",
    text: "On 2 February 2023, Eve Moss met Carl Hunt in Lisbon. Carl Hunt paid Eve Moss."
  }])
  yield* settled(owner)
  yield* settled(intruder)
  const value = { owner, intruder, source, foreignSource, documents, foreignDocument: foreign.Secret! }
  seeded.set(url, value)
  return value
})

/** Every member of a community, following the pages. */
const members = (token: string, communityId: string) =>
  Effect.gen(function*() {
    const names: Array<string> = []
    let cursor: string | null = null
    do {
      const reply: { status: number; body: any; text: string } = yield* expand(token, {
        node_id: communityId,
        limit: 100,
        ...(cursor === null ? {} : { cursor })
      })
      assert.strictEqual(reply.status, 200, reply.text)
      names.push(...reply.body.items.map((item: { label: string }) => item.label))
      cursor = reply.body.next_cursor
    } while (cursor !== null)
    return names
  })

/** The entity's node id by name, through the community members. */
const entityIdOf = (token: string, manifest: any, name: string) =>
  Effect.gen(function*() {
    for (const community of manifest.communities) {
      const reply = yield* expand(token, { node_id: community.id, limit: 100 })
      const found = reply.body.items.find((item: { label: string }) => item.label === name)
      if (found !== undefined) return { entity: found.id as string, community: community.id as string }
    }
    throw new Error(`${name} is on no community`)
  })

for (const engine of engines) {
  layer(freshServer(engine, { universeSettleMs: 100 }), { excludeTestServices: true, timeout: 240_000 })(`universe (${engine})`, (it) => {
    it.effect("manifest: counts, kinds, span, and the two worlds in different communities linked by Priya", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const manifest = yield* settled(s.owner)
        assert.deepStrictEqual(Object.keys(manifest).sort(), [
          "communities",
          "community_edges",
          "computed_at",
          "entity_kinds",
          "pending",
          "sources",
          "time_span"
        ])
        assert.strictEqual(manifest.sources.length, 1, "only the caller's source")
        const source = manifest.sources[0]
        assert.strictEqual(source.source_id, s.source)
        assert.strictEqual(source.counts.documents, 7)
        assert.isAbove(source.counts.events, 8)
        assert.isAbove(source.counts.chunks, 6)
        const { url } = yield* TestServer
        const sourceOut = yield* request(url, `/api/v1/sources/${s.source}`, { token: s.owner })
        assert.deepStrictEqual(
          [source.counts.chunks, source.counts.events],
          [sourceOut.body.chunk_count, sourceOut.body.event_count],
          "the map's counts are the source's"
        )
        assert.strictEqual(source.counts.dated_events + source.counts.undated_events, source.counts.events)
        assert.strictEqual(
          source.entity_kinds.reduce((sum: number, k: { count: number }) => sum + k.count, 0),
          source.counts.entities
        )
        assert.strictEqual(manifest.time_span.start, "2023-01-12T00:00:00.000Z")
        assert.isTrue(manifest.time_span.end >= "2023-10-01T00:00:00.000Z")
        assert.isNotNull(source.bounds)

        const helen = yield* entityIdOf(s.owner, manifest, "Helen Marsh")
        const victor = yield* entityIdOf(s.owner, manifest, "Victor Lang")
        const marco = yield* entityIdOf(s.owner, manifest, "Marco Silva")
        const tom = yield* entityIdOf(s.owner, manifest, "Tom Reyes")
        assert.strictEqual(helen.community, victor.community, "the board is one community")
        assert.strictEqual(marco.community, tom.community, "the team is one community")
        assert.notStrictEqual(helen.community, marco.community, "the board and the team are apart")
        const [a, b] = [helen.community, marco.community].sort((x, y) =>
          Number(x.split(":")[2]) - Number(y.split(":")[2])
        )
        const bridge = manifest.community_edges.find((e: any) => e.source === a && e.target === b)
        assert.isDefined(bridge, "Priya links the board and the team")
        assert.isAtLeast(bridge.weight, 1)

        const community = manifest.communities.find((c: any) => c.id === helen.community)
        assert.deepStrictEqual(Object.keys(community).sort(), [
          "event_count",
          "id",
          "label",
          "loose",
          "position",
          "radius",
          "size",
          "source_id",
          "time_span",
          "top_members"
        ])
        assert.isFalse(community.loose)
        assert.include(community.label, community.top_members[0].name)
        assert.isAtLeast(community.event_count, 3)
        assert.strictEqual((yield* members(s.owner, helen.community)).length, community.size)
        assert.strictEqual(community.time_span.start, "2023-01-12T00:00:00.000Z")

        // The timeline of a community counts the events of its members only.
        const timeline = yield* api(`/universe/timeline?community_id=${encodeURIComponent(helen.community)}&granularity=year`, s.owner)
        assert.strictEqual(timeline.status, 200, timeline.text)
        const inBuckets = [...timeline.body.buckets, ...timeline.body.coarser]
          .reduce((sum: number, bucket: { count: number }) => sum + bucket.count, 0)
        assert.strictEqual(inBuckets + timeline.body.undated, community.event_count)
        const whole = yield* api("/universe/timeline?granularity=year", s.owner)
        const all = [...whole.body.buckets, ...whole.body.coarser].reduce((sum: number, b: { count: number }) => sum + b.count, 0)
        assert.isBelow(inBuckets, all)
        const unknown = yield* api(`/universe/timeline?community_id=${encodeURIComponent(helen.community + "9")}`, s.owner)
        assert.strictEqual(unknown.status, 404)
      }), 240_000)

    it.effect("positions are stable across calls and every entity lies in its community's disc", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const first = yield* settled(s.owner)
        const second = yield* settled(s.owner)
        assert.deepStrictEqual(second.communities, first.communities)
        for (const community of first.communities) {
          const one = yield* expand(s.owner, { node_id: community.id, limit: 100 })
          const two = yield* expand(s.owner, { node_id: community.id, limit: 100 })
          assert.deepStrictEqual(two.body.items, one.body.items)
          for (const item of one.body.items) {
            const distance = Math.hypot(item.position.x - community.position.x, item.position.y - community.position.y)
            assert.isAtMost(distance, community.radius + 0.01, `${item.label} lies in ${community.label}`)
          }
        }
        const helen = yield* entityIdOf(s.owner, first, "Helen Marsh")
        const near = yield* expand(s.owner, { node_id: helen.entity, kinds: ["event"] })
        const again = yield* expand(s.owner, { node_id: helen.entity, kinds: ["event"] })
        assert.deepStrictEqual(near.body.items.map((i: any) => i.position), again.body.items.map((i: any) => i.position))
      }), 240_000)

    it.effect("several sources: their maps lie side by side, and a node's position does not depend on the selection", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Sidney")
        const board = yield* createSource(url, token, "Board")
        const club = yield* createSource(url, token, "Club")
        yield* ingestAll(url, token, board, boardMeetings)
        yield* ingestAll(url, token, club, footballSeason)
        const both = yield* settled(token)
        assert.deepStrictEqual(both.sources.map((s: { source_id: string }) => s.source_id), [board, club])
        const [left, right] = both.sources.map((s: { bounds: any }) => s.bounds)
        assert.isBelow(left.max_x, right.min_x, "the first source's map ends before the second's begins")
        for (const community of both.communities) {
          const bounds = both.sources.find((s: { source_id: string }) => s.source_id === community.source_id).bounds
          assert.isAtLeast(community.position.x + 0.01, bounds.min_x + community.radius - 1, community.label)
          assert.isAtMost(community.position.x - 0.01, bounds.max_x - community.radius + 1, community.label)
        }
        const alone = yield* settled(token, `?source_ids=${club}`)
        assert.deepStrictEqual(
          alone.communities.map((c: { position: unknown }) => c.position),
          both.communities.filter((c: { source_id: string }) => c.source_id === club)
            .map((c: { position: unknown }) => c.position),
          "the same positions whichever sources are asked for"
        )
        const community = alone.communities[0]
        const page = yield* expand(token, { node_id: community.id, limit: 5, source_ids: [club] })
        const entity = page.body.items[0]
        const distance = Math.hypot(entity.position.x - community.position.x, entity.position.y - community.position.y)
        assert.isAtMost(distance, community.radius + 0.01, "members stay inside their community's disc")
        const detail = yield* api(`/universe/nodes/${encodeURIComponent(entity.id)}`, token)
        assert.deepStrictEqual(detail.body.position, entity.position)
      }), 240_000)

    it.effect("expand: shapes of every node type, evidence order, pagination with remaining, time window", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const manifest = yield* settled(s.owner)
        const helen = yield* entityIdOf(s.owner, manifest, "Helen Marsh")
        const all = yield* expand(s.owner, { node_id: helen.entity, limit: 100 })
        assert.strictEqual(all.status, 200, all.text)
        assert.deepStrictEqual(Object.keys(all.body).sort(), ["counts", "items", "next_cursor", "node", "remaining", "total"])
        assert.strictEqual(all.body.node.id, helen.entity)
        assert.deepStrictEqual(all.body.counts.map((c: any) => c.kind), ["entity", "event", "document"])
        assert.strictEqual(all.body.total, all.body.items.length)
        assert.strictEqual(all.body.remaining, 0)
        assert.isNull(all.body.next_cursor)
        assert.deepStrictEqual(Object.keys(all.body.items[0]).sort(), [
          "evidence",
          "id",
          "kind",
          "label",
          "position",
          "ref_id",
          "relation",
          "role",
          "source_id",
          "time",
          "type"
        ])
        const related = all.body.items.filter((i: any) => i.type === "entity")
        assert.include(related.map((i: any) => i.label), "Victor Lang")
        assert.notInclude(related.map((i: any) => i.label), "Marco Silva")
        const evidences = related.map((i: any) => i.evidence)
        assert.deepStrictEqual(evidences, [...evidences].sort((x: number, y: number) => y - x), "strongest first")
        const victor = related.find((i: any) => i.label === "Victor Lang")
        assert.isAtLeast(victor.evidence, 2, "Helen and Victor share the audit and the approval")
        const documents = all.body.items.filter((i: any) => i.type === "document")
        assert.sameMembers(documents.map((d: any) => d.label), boardMeetings.map((d) => d.title))

        // One at a time: the same items, in the same order, remaining counting down.
        const paged: Array<string> = []
        let cursor: string | null = null
        let expected = all.body.total
        do {
          const page: { status: number; body: any; text: string } = yield* expand(s.owner, {
            node_id: helen.entity,
            limit: 1,
            ...(cursor === null ? {} : { cursor })
          })
          assert.strictEqual(page.status, 200, page.text)
          expected -= 1
          assert.strictEqual(page.body.remaining, expected)
          paged.push(page.body.items[0].id)
          cursor = page.body.next_cursor
        } while (cursor !== null)
        assert.deepStrictEqual(paged, all.body.items.map((i: any) => i.id))

        const window = yield* expand(s.owner, {
          node_id: helen.entity,
          kinds: ["event"],
          from: "2023-03-01",
          to: "2023-04-01"
        })
        assert.strictEqual(window.status, 200, window.text)
        assert.isAbove(window.body.items.length, 0)
        for (const item of window.body.items) assert.strictEqual(item.time.start.slice(0, 7), "2023-03")
        const none = yield* expand(s.owner, { node_id: helen.entity, kinds: ["event"], from: "2024-01-01" })
        assert.strictEqual(none.body.total, 0)

        const event = all.body.items.find((i: any) => i.type === "event")
        const around = yield* expand(s.owner, { node_id: event.id })
        assert.strictEqual(around.status, 200, around.text)
        assert.deepStrictEqual(around.body.counts.map((c: any) => c.kind), ["entity", "chunk", "document"])
        const participants = around.body.items.filter((i: any) => i.type === "entity")
        assert.include(participants.map((p: any) => p.label), "Helen Marsh")
        for (const p of participants) assert.include(["actor", "object", "place", "participant"], p.role)
        assert.strictEqual(around.body.items.filter((i: any) => i.type === "document").length, 1)
        const chunk = around.body.items.find((i: any) => i.type === "chunk")
        assert.match(chunk.id, /^chunk:/)

        const document = documents[0]
        const inside = yield* expand(s.owner, { node_id: document.id, kinds: ["event", "entity"] })
        assert.strictEqual(inside.status, 200, inside.text)
        assert.deepStrictEqual(inside.body.counts.map((c: any) => c.kind), ["event", "entity"])
        assert.strictEqual(inside.body.items[0].type, "event", "kinds in the order asked")
        assert.include(inside.body.items.map((i: any) => i.label), "Helen Marsh")

        const onlyMembers = yield* expand(s.owner, { node_id: helen.community, kinds: ["event"] })
        assert.strictEqual(onlyMembers.body.total, 0, "a community's neighbours are its entities only")
      }), 240_000)

    it.effect("node detail for an entity, event, community and document, with quoted provenance", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const manifest = yield* settled(s.owner)
        const helen = yield* entityIdOf(s.owner, manifest, "Helen Marsh")
        const entity = yield* api(`/universe/nodes/${encodeURIComponent(helen.entity)}`, s.owner)
        assert.strictEqual(entity.status, 200, entity.text)
        assert.strictEqual(entity.body.type, "entity")
        assert.strictEqual(entity.body.label, "Helen Marsh")
        assert.strictEqual(entity.body.community, helen.community)
        assert.strictEqual(entity.body.counts.documents, 3)
        assert.isAtLeast(entity.body.counts.events, 3)
        assert.isAtLeast(entity.body.counts.related, 2)
        assert.strictEqual(entity.body.time_span.start, "2023-01-12T00:00:00.000Z")
        assert.isAbove(entity.body.provenance.chunks.length, 0)
        for (const quote of entity.body.provenance.chunks) assert.include(quote.quote, "Helen Marsh")
        assert.sameMembers(
          entity.body.provenance.documents.map((d: any) => d.title),
          boardMeetings.map((d) => d.title)
        )

        const events = yield* expand(s.owner, { node_id: helen.entity, kinds: ["event"], limit: 1 })
        const event = yield* api(`/universe/nodes/${encodeURIComponent(events.body.items[0].id)}`, s.owner)
        assert.strictEqual(event.status, 200, event.text)
        assert.strictEqual(event.body.type, "event")
        assert.include(event.body.participants.map((p: any) => p.name), "Helen Marsh")
        assert.include(boardMeetings.map((d) => d.title), event.body.provenance.document.title)
        assert.isAbove(event.body.provenance.chunks.length, 0)
        assert.isNotNull(event.body.time)
        assert.deepStrictEqual(event.body.position, events.body.items[0].position, "the same place everywhere")

        const community = yield* api(`/universe/nodes/${encodeURIComponent(helen.community)}`, s.owner)
        assert.strictEqual(community.status, 200, community.text)
        assert.strictEqual(community.body.type, "community")
        assert.include(community.body.top_members.map((m: any) => m.name), "Helen Marsh")
        assert.isAbove(community.body.neighbours.length, 0, "linked to the team")
        assert.isNotNull(community.body.computed_at)

        const documentId = s.documents["Board meeting, May"]!
        const document = yield* api(`/universe/nodes/document:${documentId}`, s.owner)
        assert.strictEqual(document.status, 200, document.text)
        assert.strictEqual(document.body.type, "document")
        assert.strictEqual(document.body.label, "Board meeting, May")
        assert.isAbove(document.body.counts.events, 0)
        assert.include(document.body.provenance.chunks[0].quote, "Eastgate Capital")
      }), 240_000)

    it.effect("limits: 422 for bad limit, window, node id or kinds; 400 for a foreign cursor", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const manifest = yield* settled(s.owner)
        const helen = yield* entityIdOf(s.owner, manifest, "Helen Marsh")
        const invalid = [
          { node_id: helen.entity, limit: 0 },
          { node_id: helen.entity, limit: 101 },
          { node_id: helen.entity, limit: 2.5 },
          { node_id: helen.entity, from: "2023-05-01", to: "2023-04-01" },
          { node_id: helen.entity, from: "yesterday" },
          { node_id: helen.entity, kinds: ["event", "event"] },
          { node_id: helen.entity, kinds: ["planet"] },
          { node_id: helen.entity, kinds: [] },
          { node_id: "planet:1" },
          { node_id: "community:abc:x" },
          { node_id: "chunk:abc" },
          { node_id: `entity:${"x".repeat(300)}` },
          { node_id: helen.entity, extra: true },
          {}
        ]
        for (const body of invalid) {
          const reply = yield* expand(s.owner, body)
          assert.strictEqual(reply.status, 422, `${JSON.stringify(body)}: ${reply.text}`)
          assert.strictEqual(reply.body.error.code, "validation_failed")
        }
        const node = yield* api("/universe/nodes/nonsense", s.owner)
        assert.strictEqual(node.status, 422, node.text)
        const query = yield* api("/universe/manifest?limit=3", s.owner)
        assert.strictEqual(query.status, 422, query.text)

        const page = yield* expand(s.owner, { node_id: helen.entity, limit: 1 })
        const elsewhere = yield* expand(s.owner, { node_id: helen.community, cursor: page.body.next_cursor })
        assert.strictEqual(elsewhere.status, 400, elsewhere.text)
        assert.strictEqual(elsewhere.body.error.code, "invalid_cursor")
        const garbage = yield* expand(s.owner, { node_id: helen.entity, cursor: "bm9wZQ" })
        assert.strictEqual(garbage.status, 400, garbage.text)
      }), 240_000)

    it.effect("ownership: another user's sources and nodes are 404 on every route, never listed", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const manifest = yield* settled(s.owner)
        const helen = yield* entityIdOf(s.owner, manifest, "Helen Marsh")
        const events = yield* expand(s.owner, { node_id: helen.entity, kinds: ["event"], limit: 1 })
        const owned = [
          helen.entity,
          helen.community,
          events.body.items[0].id,
          `document:${s.documents["Board meeting, May"]}`
        ]

        const theirs = yield* settled(s.intruder)
        assert.deepStrictEqual(theirs.sources.map((x: any) => x.source_id), [s.foreignSource])
        for (const community of theirs.communities) assert.strictEqual(community.source_id, s.foreignSource)
        const peek = yield* api(`/universe/manifest?source_ids=${s.source}`, s.intruder)
        assert.strictEqual(peek.status, 404, peek.text)
        assert.strictEqual(peek.body.error.code, "source_not_found")
        const mixed = yield* api(`/universe/manifest?source_ids=${s.foreignSource},${s.source}`, s.intruder)
        assert.strictEqual(mixed.status, 404, mixed.text)

        for (const id of owned) {
          const expanded = yield* expand(s.intruder, { node_id: id })
          assert.strictEqual(expanded.status, 404, `${id}: ${expanded.text}`)
          assert.strictEqual(expanded.body.error.code, "node_not_found")
          const detail = yield* api(`/universe/nodes/${encodeURIComponent(id)}`, s.intruder)
          assert.strictEqual(detail.status, 404, `${id}: ${detail.text}`)
          assert.notInclude(detail.text, "Helen")
          const owner = yield* api(`/universe/nodes/${encodeURIComponent(id)}`, s.owner)
          assert.strictEqual(owner.status, 200, owner.text)
        }
        const scoped = yield* expand(s.owner, { node_id: helen.entity, source_ids: [s.foreignSource] })
        assert.strictEqual(scoped.status, 404, scoped.text)
        assert.strictEqual(scoped.body.error.code, "source_not_found")
        const foreignDocument = yield* expand(s.owner, { node_id: `document:${s.foreignDocument}` })
        assert.strictEqual(foreignDocument.status, 404, foreignDocument.text)

        for (const path of ["/universe/manifest", `/universe/nodes/${encodeURIComponent(helen.entity)}`]) {
          const anonymous = yield* api(path, undefined)
          assert.strictEqual(anonymous.status, 401, anonymous.text)
        }
        const anonymous = yield* api("/universe/expand", undefined, { json: { node_id: helen.entity } })
        assert.strictEqual(anonymous.status, 401, anonymous.text)
      }), 240_000)

    it.effect("a hub's neighbours and counts come from the recompute, exactly as the live ranking gives them", () =>
      Effect.gen(function*() {
        const { sql, url } = yield* TestServer
        const token = yield* login(url, "Hubert")
        const source = yield* createSource(url, token, "Hub")
        // Hana takes part in more events than a hub needs and shares them with more entities than are stored;
        // three documents mention her unequally.
        const others = storedNeighbours + 10
        const eventCount = Math.max(hubEvents, storedNeighbours) + 30
        let n = 0
        for (const [d, share] of [[0, 0.5], [1, 0.3], [2, 0.2]] as const) {
          const events = Array.from({ length: Math.round(eventCount * share) }, () => {
            n++
            const cast: Array<readonly [string, "actor" | "object" | "participant"]> = [["hana", "actor"],
              [`p${n % others}`, "object"]]
            if (n % 3 === 0) cast.push([`p${(n * 7) % others}`, "participant"])
            return event(`Hana met ${n}`, "meet", cast, { time: onDay(`2023-0${1 + (n % 9)}-1${n % 10}`) })
          })
          const entities = [
            entity("hana", "Hana Ito", "person", { mentions: 3 - d }),
            ...Array.from({ length: others }, (_, i) => entity(`p${i}`, `Person ${i}`, "person"))
          ]
          yield* storeActiveDocument(source, `hub ${d}`, [
            "Hana Ito met everyone.",
            "Hana Ito, and again Hana Ito.",
            "Nobody else."
          ], { entities, events })
        }
        yield* settled(token)
        const [hana] = yield* sql<{ id: string }>`
          SELECT id FROM entities WHERE source_id = ${source} AND name = 'Hana Ito'`
        const hub = `entity:${hana!.id}`
        const stored = yield* sql<{ kind: string; n: number }>`
          SELECT kind, count(*)::int AS n FROM universe_neighbours WHERE entity_id = ${hana!.id} GROUP BY kind ORDER BY kind`
        assert.deepStrictEqual(stored.map((row) => row.kind), ["chunk", "document", "entity", "event"], "Hana is a hub")

        /** Every page of the hub's neighbours (a time window covering everything always ranks live). */
        const pages = (window: Record<string, string>) =>
          Effect.gen(function*() {
            const all: Array<unknown> = []
            let cursor: string | null = null
            do {
              const reply: { status: number; body: any; text: string } = yield* expand(token, {
                node_id: hub,
                limit: 37,
                ...window,
                ...(cursor === null ? {} : { cursor })
              })
              assert.strictEqual(reply.status, 200, reply.text)
              all.push({ items: reply.body.items, counts: reply.body.counts, remaining: reply.body.remaining })
              cursor = reply.body.next_cursor
            } while (cursor !== null)
            return all
          })
        const fromStore = yield* pages({})
        const live = yield* pages({ from: "1900-01-01T00:00:00Z", to: "2100-01-01T00:00:00Z" })
        assert.isAtLeast(fromStore.length, Math.ceil((others + eventCount + 3) / 37), "the pages run past what is stored")
        assert.deepStrictEqual(fromStore, live)

        const detail = yield* api(`/universe/nodes/${encodeURIComponent(hub)}`, token)
        assert.deepStrictEqual(detail.body.counts, {
          mentions: detail.body.counts.mentions,
          events: eventCount,
          documents: 3,
          related: others
        })
        assert.deepStrictEqual(detail.body.provenance.documents.map((d: { title: string }) => d.title), [
          "hub 0",
          "hub 1",
          "hub 2"
        ])

        // The same detail ranked live: the source marked changed and its recompute held off.
        yield* sql`UPDATE universe_sources SET dirty_since = now(), claimed_until = now() + interval '1 hour'
          WHERE source_id = ${source}`
        const liveDetail = yield* api(`/universe/nodes/${encodeURIComponent(hub)}`, token)
        assert.deepStrictEqual(liveDetail.body, detail.body)
        assert.strictEqual(detail.body.provenance.chunks.length, 5, "quoted: the five chunks that mention her")
        yield* sql`UPDATE universe_sources SET claimed_until = NULL WHERE source_id = ${source}`
        yield* settled(token)

        // Proof the first page came from the stored rows: altering them alters the answer.
        yield* sql`UPDATE universe_neighbours SET score = score + 1000 WHERE entity_id = ${hana!.id} AND kind = 'event'`
        const altered = yield* expand(token, { node_id: hub, kinds: ["event"], limit: 1 })
        assert.isAbove(altered.body.items[0].evidence, 1000)
      }), 240_000)

    it.effect("deleting and reprocessing documents remove their nodes; nothing is orphaned after recompute", () =>
      Effect.gen(function*() {
        const s = yield* seed
        const { url, sql } = yield* TestServer
        const before = yield* settled(s.owner)
        const sponsorshipId = s.documents[sponsorship.title]!
        const sponsored = yield* expand(s.owner, { node_id: `document:${sponsorshipId}`, kinds: ["event"] })
        const sponsorEvents = sponsored.body.items.map((i: any) => i.id as string)
        assert.isAbove(sponsorEvents.length, 0)

        const removed = yield* api(`/sources/${s.source}/documents/${sponsorshipId}`, s.owner, { method: "DELETE" })
        assert.strictEqual(removed.status, 200, removed.text)
        const marked = yield* api("/universe/manifest", s.owner)
        assert.isTrue(marked.body.pending, "the deletion marked the map")
        const after = yield* settled(s.owner)
        assert.strictEqual(after.sources[0].counts.documents, 6)
        assert.strictEqual(after.sources[0].counts.events, before.sources[0].counts.events - sponsorEvents.length)
        for (const id of [...sponsorEvents, `document:${sponsorshipId}`]) {
          const gone = yield* api(`/universe/nodes/${encodeURIComponent(id)}`, s.owner)
          assert.strictEqual(gone.status, 404, `${id}: ${gone.text}`)
        }
        const helen = yield* entityIdOf(s.owner, after, "Helen Marsh")
        const marco = yield* entityIdOf(s.owner, after, "Marco Silva")
        const [a, b] = [helen.community, marco.community].sort()
        assert.isUndefined(
          after.community_edges.find((e: any) => [e.source, e.target].sort().join() === [a, b].join()),
          "without the sponsorship nothing links the board and the team"
        )

        const matchday = s.documents["Matchday 3"]!
        const oldEvents = (yield* expand(s.owner, { node_id: `document:${matchday}`, kinds: ["event"] })).body.items
          .map((i: any) => i.id as string)
        const reprocess = yield* api(`/sources/${s.source}/documents/${matchday}/reprocess`, s.owner, { method: "POST" })
        assert.include([200, 202], reprocess.status, reprocess.text)
        const reprocessed = yield* waitForDocument(url, s.owner, s.source, matchday)
        assert.strictEqual(reprocessed.status, "ready")
        const rebuilt = yield* settled(s.owner)
        assert.strictEqual(rebuilt.sources[0].counts.documents, 6)
        for (const id of oldEvents) {
          const gone = yield* api(`/universe/nodes/${encodeURIComponent(id)}`, s.owner)
          assert.strictEqual(gone.status, 404, `the first version's ${id}: ${gone.text}`)
        }
        const fresh = yield* expand(s.owner, { node_id: `document:${matchday}`, kinds: ["event"] })
        assert.strictEqual(fresh.body.total, oldEvents.length, "the new version states the same events anew")
        assert.notInclude(oldEvents, fresh.body.items[0].id)

        const orphans = yield* sql<{ count: number }>`
          SELECT count(*)::int AS count FROM universe_entities u
          WHERE NOT EXISTS (
            SELECT 1 FROM entity_mentions m JOIN documents d ON d.id = m.document_id
              AND d.active_version = m.version AND d.status = 'ready'
            WHERE m.entity_id = u.entity_id)`
        assert.strictEqual(orphans[0]!.count, 0, "every entity on the map is in a ready document")
        const strays = yield* sql<{ count: number }>`
          SELECT count(*)::int AS count FROM events ev JOIN documents d ON d.id = ev.document_id
          WHERE ev.version <> d.active_version OR ev.document_id = ${sponsorshipId}`
        assert.strictEqual(strays[0]!.count, 0, "no event of a deleted document or an old version")
        const mapped = rebuilt.communities.reduce((sum: number, c: any) => sum + c.size, 0)
        assert.strictEqual(mapped, rebuilt.sources[0].counts.entities, "every entity is on the map once")
      }), 240_000)

    it.effect("a chat at the calendar's ends: times past 9999 or before year 1 are dropped, the map computed", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Calendar Cal")
        const source = yield* createSource(url, token, "Ends of time")
        const reply = yield* api(`/sources/${source}/documents/ingest`, token, {
          method: "POST",
          json: {
            title: "Ends of time",
            messages: [
              { speaker: "Ada", content: "I visited Lisbon with Ben Okri yesterday.", timestamp: "0001-01-01T09:00Z" },
              { speaker: "Ben", content: "I'll fly to Lisbon with Ada in two weeks.", timestamp: "9999-12-31T09:00Z" },
              { speaker: "Ada", content: "I met Ben Okri in Lisbon today.", timestamp: "2024-05-01T09:00Z" }
            ]
          }
        })
        assert.strictEqual(reply.status, 202, reply.text)
        const document = yield* waitForDocument(url, token, source, reply.body.id)
        assert.strictEqual(document.status, "ready")
        const events = yield* api(`/sources/${source}/events?limit=50`, token)
        assert.strictEqual(events.status, 200, events.text)
        const starts = events.body.items.map((e: any) => e.time?.start ?? null)
        assert.isAtLeast(starts.length, 3, events.text)
        for (const start of starts) {
          if (start !== null) assert.match(start, /^(?:000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d{3})-/, events.text)
        }
        assert.isTrue(starts.some((start: string | null) => start?.startsWith("2024-05-01")), "a time inside is kept")
        const said = (words: string) => events.body.items.find((e: any) => e.statement.includes(words))
        // "yesterday" on 1 January of year 1 is in year 0 (not 1900, as Date.UTC reads years below 100), and
        // "in two weeks" on 31 December 9999 in year 10000: neither is stored.
        assert.strictEqual(said("visited Lisbon")?.time, null, events.text)
        assert.strictEqual(said("fly to Lisbon")?.time, null, events.text)
        // The map of the source is computed: it failed on a time of year 10000 before, and was tried again forever.
        const manifest = yield* settled(token)
        assert.strictEqual(manifest.sources[0].counts.documents, 1)
        assert.isAbove(manifest.sources[0].counts.events, 0)
      }), 240_000)
  })
}
