/**
 * Timeline benchmark: one source holding a synthetic event–entity structure (default 100,000 events over 1,000
 * ready documents and 5,000 entities) written straight into the tables with SQL, then p50/p95 of
 * GET /api/v1/universe/timeline over real HTTP: the whole span (auto, month), one year by week, one month by day,
 * and one frequent entity's events — first ranked live from the events (the tables were written without the mark a
 * graph transition sets), then, after marking the source and waiting for the universe's background recompute, the
 * whole-span requests again, now read from the timeline the recompute stores. Times spread over 2000–2024 with more events in recent years; about 80% are
 * known to the day, 6% to the week, 5% to the month, 2% to the quarter, 4% to the year, and 3% are undated.
 * Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 *   npm run bench:timeline -- [--events 100000] [--requests 200]
 */
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { argument, call, machine, percentile, startInstance } from "./lib/instance.ts"

const root = Path.resolve(import.meta.dirname, "..")
const eventCount = Number(argument("events") ?? 100_000)
const requests = Number(argument("requests") ?? 200)
const documentCount = 1_000
const entityCount = 5_000
const modelDir = Path.join(root, "../shared/models/_fixtures/tiny-random-bert")

const timed = async <A>(work: () => Promise<A>) => {
  const started = performance.now()
  const value = await work()
  return { ms: performance.now() - started, value }
}

const program = Effect.gen(function*() {
  const instance = yield* startInstance({
    embedModelDir: Option.some(modelDir),
    embedModel: "local",
    extractor: "off",
    universeSettleMs: 500
  })
  const { url, sql } = instance
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
  const token: string = session.access_token
  const source = yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "timeline", connector_kind: "file_upload", config: {} } })
  )
  const sourceId: string = source.id

  const written = performance.now()
  yield* sql`SELECT setseed(0.42)`
  yield* sql`
    INSERT INTO documents (id, source_id, title, kind, format, mime_type, size_bytes, content_hash, status,
      active_version, ready_at)
    SELECT 'bench-doc-' || i, ${sourceId}, 'document ' || i, 'text', 'text', 'text/plain', 1000, md5(i::text),
      'ready', 1, now()
    FROM generate_series(1, ${documentCount}) AS i`
  yield* sql`
    INSERT INTO entities (id, source_id, name, kind, mention_count)
    SELECT 'bench-entity-' || i, ${sourceId}, 'Entity ' || i,
      (ARRAY['person', 'organization', 'place', 'product', 'concept'])[1 + i % 5], 1
    FROM generate_series(1, ${entityCount}) AS i`
  // Zipf-like years (recent ones busier), a uniform day of the year, and the precision mix described above.
  yield* sql`
    INSERT INTO events (id, source_id, document_id, version, ordinal, statement, kind, time_start, time_end,
      time_precision, time_text, confidence)
    SELECT 'bench-event-' || i, ${sourceId}, 'bench-doc-' || (1 + i % ${documentCount}), 1, i,
      'Entity ' || (1 + i % ${entityCount}) || ' did thing ' || i, (ARRAY['meet', 'acquire', 'sign', 'open'])[1 + i % 4],
      CASE WHEN p < 0.03 THEN NULL
        WHEN p < 0.07 THEN y
        WHEN p < 0.09 THEN y + interval '3 months' * floor(r * 4)
        WHEN p < 0.14 THEN y + interval '1 month' * floor(r * 12)
        WHEN p < 0.20 THEN date_trunc('week', y + interval '1 day' * floor(r * 365))
        ELSE y + interval '1 day' * floor(r * 365) END,
      CASE WHEN p < 0.03 THEN NULL
        WHEN p < 0.07 THEN y + interval '1 year'
        WHEN p < 0.09 THEN y + interval '3 months' * (floor(r * 4) + 1)
        WHEN p < 0.14 THEN y + interval '1 month' * (floor(r * 12) + 1)
        WHEN p < 0.20 THEN date_trunc('week', y + interval '1 day' * floor(r * 365)) + interval '1 week'
        ELSE y + interval '1 day' * (floor(r * 365) + 1) END,
      CASE WHEN p < 0.03 THEN NULL WHEN p < 0.07 THEN 'year' WHEN p < 0.09 THEN 'quarter'
        WHEN p < 0.14 THEN 'month' WHEN p < 0.20 THEN 'week' ELSE 'day' END,
      NULL, round((0.5 + r2 * 0.5)::numeric, 2)
    FROM (
      SELECT i, random() AS p, random() AS r, random() AS r2,
        make_timestamptz(2024 - floor(25 * random() ^ 2)::int, 1, 1, 0, 0, 0, 'UTC') AS y
      FROM generate_series(1, ${eventCount}) AS i
    ) g`
  // One to four participants per event, entities chosen Zipf-like so a few take part in many events.
  yield* sql`
    INSERT INTO event_participants (event_id, entity_id, role)
    SELECT DISTINCT 'bench-event-' || i, 'bench-entity-' || (1 + floor(${entityCount} * random() ^ 3)::int),
      (ARRAY['actor', 'object', 'participant'])[1 + k % 3]
    FROM generate_series(1, ${eventCount}) AS i, generate_series(1, 1 + i % 4) AS k`
  yield* sql`VACUUM (ANALYZE)`
  const writeSeconds = (performance.now() - written) / 1000
  const [counts] = yield* sql<{ events: string; participants: string; undated: string }>`
    SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM event_participants) AS participants,
      (SELECT count(*) FROM events WHERE time_start IS NULL) AS undated`
  const [busiest] = yield* sql<{ entity_id: string; n: string }>`
    SELECT entity_id, count(*) AS n FROM event_participants GROUP BY entity_id ORDER BY count(*) DESC LIMIT 1`
  console.log(
    `wrote ${counts!.events} events (${counts!.undated} undated), ${counts!.participants} participations in ` +
      `${writeSeconds.toFixed(1)} s`
  )

  const cases: ReadonlyArray<{ readonly name: string; readonly query: string }> = [
    { name: "whole span, auto", query: `source_ids=${sourceId}` },
    { name: "whole span, month", query: `source_ids=${sourceId}&granularity=month` },
    { name: "one year, week", query: `source_ids=${sourceId}&granularity=week&from=2023-01-01&to=2024-01-01` },
    { name: "one month, day", query: `source_ids=${sourceId}&granularity=day&from=2024-03-01&to=2024-04-01` },
    { name: `busiest entity (${busiest!.n} events), auto`, query: `entity_id=${busiest!.entity_id}` }
  ]
  const measure = (phase: string, chosen: typeof cases) =>
    Effect.gen(function*() {
      const rows: Array<Record<string, unknown>> = []
      for (const { name, query } of chosen) {
        const path = `/api/v1/universe/timeline?${query}`
        for (let i = 0; i < 10; i++) yield* Effect.promise(() => call(url, path, { token }))
        const times: Array<number> = []
        let shape = ""
        for (let i = 0; i < requests; i++) {
          const { ms, value } = yield* Effect.promise(() => timed(() => call(url, path, { token })))
          times.push(ms)
          shape = `${value.granularity}: ${value.buckets.length} buckets, ${value.coarser.length} coarser, ` +
            `${value.dated} dated, ${value.undated} undated`
        }
        const row = { phase, name, p50: percentile(times, 50), p95: percentile(times, 95), shape }
        rows.push(row)
        console.log(`${phase} — ${name}: p50 ${row.p50.toFixed(1)} ms, p95 ${row.p95.toFixed(1)} ms (${shape})`)
      }
      return rows
    })
  const live = yield* measure("live", cases)

  // The mark a graph transition sets; the background recompute stores the source's timeline.
  const marked = performance.now()
  yield* sql`INSERT INTO universe_sources (source_id, revision, dirty_since, marked_at) VALUES (${sourceId}, 1, now(), now())
    ON CONFLICT (source_id) DO UPDATE SET revision = universe_sources.revision + 1, dirty_since = now(), marked_at = now()`
  for (;;) {
    const manifest = yield* Effect.promise(() => call(url, `/api/v1/universe/manifest?source_ids=${sourceId}`, { token }))
    if (!manifest.pending && manifest.computed_at !== null) break
    yield* Effect.sleep("50 millis")
  }
  const recomputeSeconds = (performance.now() - marked) / 1000
  console.log(`recompute done ${recomputeSeconds.toFixed(1)} s after the mark (500 ms settle included)`)
  const stored = yield* measure("stored", cases.slice(0, 2))
  const results = [...live, ...stored]
  const result = {
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    events: Number(counts!.events),
    requests,
    write_seconds: writeSeconds,
    recompute_seconds: recomputeSeconds,
    cases: results,
    machine: machine(),
    date: new Date().toISOString()
  }
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  Fs.writeFileSync(Path.join(outDir, `timeline-${result.engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
