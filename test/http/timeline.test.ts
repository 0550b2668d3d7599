import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Extraction, TimeValue } from "../../src/extract/Extraction.ts"
import { entity, event, onDay, storeActiveDocument } from "../support/graph.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument, waitForUniverse } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

const period = (start: string, end: string, precision: TimeValue["precision"], text: string): TimeValue => ({
  start: `${start}T00:00:00.000Z`,
  end: `${end}T00:00:00.000Z`,
  precision,
  text,
  relative: false
})

const people = [
  entity("ada", "Ada Lovelace", "person"),
  entity("charles", "Charles Babbage", "person"),
  entity("london", "London", "place")
]

/** Ada's year-only, month-only, day and undated events, and a week across two months. */
const chronicle: Extraction = {
  entities: people,
  events: [
    event("Ada met Charles", "meet", [["ada", "actor"], ["charles", "object"]], {
      time: period("1833-01-01", "1834-01-01", "year", "in 1833"),
      confidence: 0.9
    }),
    event("Ada wrote the notes", "write", [["ada", "actor"]], {
      time: period("1843-07-01", "1843-08-01", "month", "in July 1843")
    }),
    event("Ada published the notes", "publish", [["ada", "actor"], ["charles", "participant"]], {
      time: onDay("1843-09-05"),
      confidence: 0.95
    }),
    event("Charles lectured", "lecture", [["charles", "actor"]], { time: onDay("1843-09-20"), confidence: 0.5 }),
    event("Charles travelled", "travel", [["charles", "actor"]], {
      time: period("1843-09-28", "1843-10-05", "week", "that week")
    }),
    event("Ada corresponded", "correspond", [["ada", "actor"]], { time: null })
  ]
}
const chunks = ["Ada met Charles in 1833.", "Ada wrote the notes in July 1843 and published them in September."]

interface Seeded {
  readonly url: string
  readonly owner: string
  readonly intruder: string
  readonly source: string
  readonly foreign: string
  readonly ada: string
  readonly foreignEntity: string
}

const seededServers = new Map<string, Seeded>()

const seed = Effect.gen(function*() {
  const { url } = yield* TestServer
  const known = seededServers.get(url)
  if (known !== undefined) return known
  const owner = yield* login(url, "Tilda")
  const intruder = yield* login(url, "Mallory")
  const source = yield* createSource(url, owner, "Letters")
  const foreign = yield* createSource(url, intruder, "Mine")
  yield* storeActiveDocument(source, "chronicle", chunks, chronicle)
  yield* storeActiveDocument(foreign, "theirs", ["Mallory met Trent on 1 May 1843."], {
    entities: [entity("m", "Mallory Knox", "person"), entity("t", "Trent Reznor", "person")],
    events: [event("Mallory met Trent", "meet", [["m", "actor"], ["t", "object"]], { time: onDay("1843-05-01") })]
  })
  const entities = yield* request(url, `/api/v1/sources/${source}/entities?limit=100`, { token: owner })
  const ada = entities.body.items.find((e: { name: string }) => e.name === "Ada Lovelace").id as string
  const theirs = yield* request(url, `/api/v1/sources/${foreign}/entities`, { token: intruder })
  const seeded = { url, owner, intruder, source, foreign, ada, foreignEntity: theirs.body.items[0].id as string }
  seededServers.set(url, seeded)
  return seeded
})

const timeline = (url: string, token: string, query: string) =>
  request(url, `/api/v1/universe/timeline${query === "" ? "" : `?${query}`}`, { token })

const starts = (buckets: ReadonlyArray<{ start: string }>) => buckets.map((bucket) => bucket.start.slice(0, 10))

for (const engine of engines) {
  layer(freshServer(engine), { excludeTestServices: true, timeout: 120_000 })(`universe timeline (${engine})`, (it) => {
    it.effect("month buckets hold what fits; the year-only and the straddling week are coarser; undated apart", () =>
      Effect.gen(function*() {
        const { url, owner, source } = yield* seed
        const reply = yield* timeline(url, owner, `source_ids=${source}&granularity=month`)
        assert.strictEqual(reply.status, 200, reply.text)
        const body = reply.body
        assert.strictEqual(body.granularity, "month")
        assert.strictEqual(body.undated, 1)
        assert.strictEqual(body.dated, 5)
        assert.deepStrictEqual(starts(body.buckets), ["1843-07-01", "1843-09-01"])
        assert.notInclude(starts(body.buckets), "1833-01-01", "a year-only event is never put on 1 January")
        const july = body.buckets[0]
        assert.deepStrictEqual(
          [july.precision, july.count, july.end],
          ["month", 1, "1843-08-01T00:00:00.000Z"],
          "a month-only event fits its month"
        )
        const september = body.buckets[1]
        assert.strictEqual(september.count, 2)
        assert.deepStrictEqual(
          september.events.map((e: { kind: string }) => e.kind),
          ["publish", "lecture"],
          "highest confidence first"
        )
        assert.strictEqual(september.events[0].participant_count, 2)
        assert.strictEqual(september.events[0].time.precision, "day")
        assert.deepStrictEqual(
          body.coarser.map((b: { start: string; end: string; precision: string; count: number }) =>
            [b.start.slice(0, 10), b.end.slice(0, 10), b.precision, b.count]
          ),
          [["1833-01-01", "1834-01-01", "year", 1], ["1843-09-28", "1843-10-05", "week", 1]]
        )
        assert.strictEqual(body.span.start, "1833-01-01T00:00:00.000Z")
        assert.strictEqual(body.span.end, "1843-10-05T00:00:00.000Z")
      }))

    it.effect("day buckets send the month-only event to coarser, not to the 1st; year buckets take everything", () =>
      Effect.gen(function*() {
        const { url, owner } = yield* seed
        const days = yield* timeline(url, owner, "granularity=day&from=1843-06-01&to=1843-12-01")
        assert.strictEqual(days.status, 200, days.text)
        assert.deepStrictEqual(starts(days.body.buckets), ["1843-09-05", "1843-09-20"])
        assert.notInclude(starts(days.body.buckets), "1843-07-01", "a month-only event is never put on the 1st")
        assert.deepStrictEqual(
          days.body.coarser.map((b: { start: string; precision: string }) => [b.start.slice(0, 10), b.precision]),
          [["1843-07-01", "month"], ["1843-09-28", "week"]]
        )
        assert.strictEqual(days.body.from, "1843-06-01T00:00:00.000Z")
        assert.strictEqual(days.body.undated, 1, "undated events are counted whatever the window")

        const years = yield* timeline(url, owner, "granularity=year")
        assert.deepStrictEqual(
          years.body.buckets.map((b: { start: string; count: number }) => [b.start.slice(0, 4), b.count]),
          [["1833", 1], ["1843", 4]]
        )
        assert.deepStrictEqual(years.body.coarser, [])
      }))

    it.effect("auto picks the unit from the span; limit caps the listed events, not the counts", () =>
      Effect.gen(function*() {
        const { url, owner } = yield* seed
        const whole = yield* timeline(url, owner, "")
        assert.strictEqual(whole.body.granularity, "year", "ten years and more: years")
        const autumn = yield* timeline(url, owner, "from=1843-09-01&to=1843-10-01")
        assert.strictEqual(autumn.body.granularity, "day", "one month: days")
        const season = yield* timeline(url, owner, "from=1843-01-01&to=1844-01-01")
        assert.strictEqual(season.body.granularity, "week", "one year: weeks")
        const capped = yield* timeline(url, owner, "granularity=month&limit=1")
        assert.deepStrictEqual(capped.body.buckets.map((b: { count: number; events: Array<unknown> }) =>
          [b.count, b.events.length]), [[1, 1], [2, 1]])
        const none = yield* timeline(url, owner, "granularity=month&limit=0")
        assert.deepStrictEqual(none.body.buckets.map((b: { count: number; events: Array<unknown> }) =>
          [b.count, b.events.length]), [[1, 0], [2, 0]])
      }))

    it.effect("entity_id keeps the entity's events", () =>
      Effect.gen(function*() {
        const { url, owner, ada } = yield* seed
        const reply = yield* timeline(url, owner, `entity_id=${ada}&granularity=year`)
        assert.strictEqual(reply.status, 200, reply.text)
        assert.deepStrictEqual(
          reply.body.buckets.map((b: { start: string; count: number }) => [b.start.slice(0, 4), b.count]),
          [["1833", 1], ["1843", 2]]
        )
        assert.strictEqual(reply.body.undated, 1)
      }))

    it.effect("limits: granularity, limit, window and too many buckets are 422", () =>
      Effect.gen(function*() {
        const { url, owner } = yield* seed
        for (
          const [query, path] of [
            ["granularity=hour", "query.granularity"],
            ["limit=21", "query.limit"],
            ["limit=-1", "query.limit"],
            ["limit=two", "query.limit"],
            ["from=1843-10-01&to=1843-09-01", "query.to"],
            ["from=1843-10-01&to=1843-10-01", "query.to"],
            ["from=yesterday", "query.from"],
            ["granularity=day&from=1800-01-01&to=1900-01-01", "query.granularity"],
            ["granularity=day", "query.granularity"],
            ["colour=red", "query.colour"]
          ] as const
        ) {
          const reply = yield* timeline(url, owner, query)
          assert.strictEqual(reply.status, 422, `${query}: ${reply.text}`)
          assert.strictEqual(reply.body.error.code, "validation_failed")
          assert.include(reply.body.error.issues.map((i: { path: string }) => i.path), path, query)
        }
      }))

    it.effect("ownership: another user's source, entity and unknown ids are 404; no token is 401", () =>
      Effect.gen(function*() {
        const { url, owner, intruder, foreign, foreignEntity, source, ada } = yield* seed
        const theirs = yield* timeline(url, owner, `source_ids=${foreign}`)
        assert.strictEqual(theirs.status, 404)
        assert.strictEqual(theirs.body.error.code, "source_not_found")
        const mixed = yield* timeline(url, owner, `source_ids=${source},${foreign}`)
        assert.strictEqual(mixed.status, 404)
        const entity = yield* timeline(url, owner, `entity_id=${foreignEntity}`)
        assert.strictEqual(entity.status, 404)
        assert.strictEqual(entity.body.error.code, "entity_not_found")
        const hers = yield* timeline(url, intruder, `entity_id=${ada}`)
        assert.strictEqual(hers.status, 404)
        const community = yield* timeline(url, owner, "community_id=c1")
        assert.strictEqual(community.status, 404)
        assert.strictEqual(community.body.error.code, "community_not_found")
        const anonymous = yield* request(url, "/api/v1/universe/timeline")
        assert.strictEqual(anonymous.status, 401)
        const own = yield* timeline(url, intruder, "granularity=year")
        assert.deepStrictEqual(
          own.body.buckets.map((b: { start: string; count: number }) => [b.start.slice(0, 4), b.count]),
          [["1843", 1]],
          "each user sees only their own events"
        )
        const nobody = yield* login(url, "Newcomer")
        const empty = yield* timeline(url, nobody, "")
        assert.strictEqual(empty.status, 200, empty.text)
        assert.deepStrictEqual([empty.body.dated, empty.body.undated, empty.body.span], [0, 0, null])
      }))

    it.effect("ingested text: the rule extractor's year-only and month-only times stay at their precision", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Archivist")
        const source = yield* createSource(url, token)
        const texts = [
          "Globex was acquired by Acme Corp in 2021.",
          "Globex hired Tom Becker in March 2020.",
          "On March 3, 2021, Acme Corporation acquired Initech in Berlin.",
          "Initech sued Globex."
        ]
        for (const [i, text] of texts.entries()) {
          const document = yield* ingestText(url, token, source, `news-${i}`, text)
          const done = yield* waitForDocument(url, token, source, document.body.id)
          assert.strictEqual(done.status, "ready")
        }
        const days = yield* timeline(url, token, "granularity=day")
        assert.strictEqual(days.status, 200, days.text)
        assert.deepStrictEqual(starts(days.body.buckets), ["2021-03-03"])
        assert.deepStrictEqual(
          days.body.coarser.map((b: { start: string; precision: string }) => [b.start.slice(0, 10), b.precision]),
          [["2020-03-01", "month"], ["2021-01-01", "year"]]
        )
        assert.isAtLeast(days.body.undated, 1)
        const months = yield* timeline(url, token, "granularity=month")
        assert.deepStrictEqual(starts(months.body.buckets), ["2020-03-01", "2021-03-01"])
        assert.deepStrictEqual(starts(months.body.coarser), ["2021-01-01"])
      }))

    it.effect("the whole span is read from the timeline the recompute stores, exactly as the live ranking gives it", () =>
      Effect.gen(function*() {
        const { sql, url } = yield* TestServer
        const token = yield* login(url, "Chronicler")
        const sources = [yield* createSource(url, token, "Diary"), yield* createSource(url, token, "Ledger")]
        // Two sources over 2020–2022 with every precision, straddling weeks and tied confidences.
        const precisions = ["day", "day", "day", "week", "month", "quarter", "year"] as const
        for (const [s, sourceId] of sources.entries()) {
          const events = Array.from({ length: 90 }, (_, i) => {
            const start = new Date(Date.UTC(2020, (i * 7 + s * 5) % 30, 1 + ((i * 11 + s) % 27)))
            const precision = precisions[(i + s) % precisions.length]!
            const end = new Date(start)
            if (precision === "day") end.setUTCDate(end.getUTCDate() + 1)
            if (precision === "week") end.setUTCDate(end.getUTCDate() + 7)
            if (precision === "month") end.setUTCMonth(end.getUTCMonth() + 1)
            if (precision === "quarter") end.setUTCMonth(end.getUTCMonth() + 3)
            if (precision === "year") end.setUTCFullYear(end.getUTCFullYear() + 1)
            const time = i % 13 === 0
              ? null
              : { start: start.toISOString(), end: end.toISOString(), precision, text: precision, relative: false }
            return event(`Event ${s}-${i}`, "note", [["ada", "actor"]], { time, confidence: [0.5, 0.7, 0.9][i % 3]! })
          })
          yield* storeActiveDocument(sourceId, `log ${s}`, ["A log."], {
            entities: [entity("ada", "Ada", "person")],
            events
          })
        }
        yield* waitForUniverse(url, token)
        const stored = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM universe_timeline WHERE source_id = ANY(${sources}::text[])`
        assert.isAbove(stored[0]!.n, 0, "the recompute stored the sources' timelines")

        // The same buckets through the window (always ranked live) and over the whole span (stored).
        const window = "from=2019-12-01&to=2022-12-01"
        const compared = (body: { buckets: unknown; coarser: unknown; dated: number; undated: number }) =>
          [body.buckets, body.coarser, body.dated, body.undated]
        for (const selection of [`source_ids=${sources[0]}`, `source_ids=${sources.join(",")}`]) {
          for (const granularity of ["day", "week", "month", "year"]) {
            for (const limit of [0, 3, 20]) {
              const query = `${selection}&granularity=${granularity}&limit=${limit}`
              const whole = yield* timeline(url, token, query)
              const live = yield* timeline(url, token, `${query}&${window}`)
              assert.strictEqual(whole.status, 200, whole.text)
              assert.strictEqual(live.status, 200, live.text)
              assert.deepStrictEqual(compared(whole.body), compared(live.body), query)
            }
          }
        }
        const before = yield* timeline(url, token, "granularity=year")
        assert.strictEqual(before.body.dated + before.body.undated, 180)

        // Proof the whole span came from the stored rows: altering them alters the answer.
        const altering = yield* sql`
          UPDATE universe_timeline SET count = count + 1000 WHERE source_id = ${sources[0]!} AND unit = 'year'
          RETURNING count`
        const altered = yield* timeline(url, token, "granularity=year")
        assert.strictEqual(altered.body.dated, before.body.dated + 1000 * altering.length)
        yield* sql`UPDATE universe_timeline SET count = count - 1000 WHERE source_id = ${sources[0]!} AND unit = 'year'`

        // A new document marks the source: until its recompute, the answer is ranked live and already holds it.
        yield* storeActiveDocument(sources[0]!, "late", ["Late."], {
          entities: [entity("ada", "Ada", "person")],
          events: [event("A late event", "note", [["ada", "actor"]], { time: onDay("2021-06-15") })]
        })
        const after = yield* timeline(url, token, "granularity=year")
        assert.strictEqual(after.body.dated, before.body.dated + 1)
      }))
  })
}
