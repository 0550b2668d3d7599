/**
 * Universe benchmark: a synthetic source of 100,000 events (1,000 documents; people, organisations and places
 * drawn with Zipf-like popularity from realistic name lists, grouped in topics so there is structure to find)
 * written straight into the tables, then the background recompute (time from the mark to the manifest saying it
 * is done, with /system/health probed meanwhile), then p50/p95 over real HTTP of GET /universe/manifest,
 * POST /universe/expand and GET /universe/nodes/{id}. Embedded PGlite by default; PostgreSQL with DATABASE_URL.
 *   npm run bench:universe -- [--events 100000] [--requests 300]
 */
import { Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { argument, call, machine, percentile, startInstance, withDatabase } from "./lib/instance.ts"

const root = Path.resolve(import.meta.dirname, "..")
const targetEvents = Number(argument("events") ?? 100_000)
const requestCount = Number(argument("requests") ?? 300)
const eventsPerDocument = 100
const eventsPerChunk = 10

const firstNames = ["James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William",
  "Elizabeth", "David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen",
  "Priya", "Wei", "Fatima", "Mohammed", "Yuki", "Olga", "Carlos", "Amara", "Lars", "Ingrid", "Kofi", "Ana", "Hiro",
  "Leila", "Mateo", "Sofia", "Arjun", "Chen", "Noah", "Emma"]
const surnames = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
  "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson",
  "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson",
  "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams",
  "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Okafor", "Raman", "Tanaka",
  "Petrov", "Larsen", "Haddad", "Kowalski", "Silva", "Müller", "Rossi"]
const orgWords = ["Northwind", "Eastgate", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Acme", "Hooli",
  "Vandelay", "Riverside", "Harbor", "Summit", "Pioneer", "Atlas", "Crescent", "Beacon", "Evergreen"]
const orgKinds = ["Holdings", "Capital", "Industries", "Labs", "United", "Partners", "Group", "Foundation", "FC"]
const places = ["Oslo", "Lisbon", "Berlin", "Toledo", "Nairobi", "Osaka", "Lima", "Austin", "Dublin", "Krakow",
  "Porto", "Seoul", "Denver", "Accra", "Quebec", "Hanoi", "Turin", "Perth", "Bergen", "Malaga"]
const verbs = ["meet", "hire", "acquire", "sign", "visit", "announce", "fund", "sue", "join", "leave", "praise", "train"]

/** mulberry32, so every run writes the same corpus. */
let state = 20240501
const random = () => {
  state = (state + 0x6d2b79f5) | 0
  let t = Math.imul(state ^ (state >>> 15), 1 | state)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
/** An index in [0, n) where small indexes are much more frequent (Zipf-like). */
const zipf = (n: number) => Math.min(n - 1, Math.floor(n * Math.pow(random(), 2.5)))
const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(random() * items.length)]!

interface Entity {
  readonly id: string
  readonly name: string
  readonly kind: "person" | "organization" | "place"
}

const makeEntities = (count: number): Array<Entity> => {
  const seen = new Set<string>()
  const entities: Array<Entity> = []
  while (entities.length < count) {
    const roll = random()
    const entity: Entity = roll < 0.75
      ? { id: randomUUID(), name: `${firstNames[zipf(firstNames.length)]} ${surnames[zipf(surnames.length)]}`, kind: "person" }
      : roll < 0.93
      ? { id: randomUUID(), name: `${pick(orgWords)} ${pick(orgKinds)}${random() < 0.5 ? "" : ` ${pick(places)}`}`, kind: "organization" }
      : { id: randomUUID(), name: `${pick(places)}${random() < 0.5 ? "" : ` ${pick(["North", "South", "Harbour", "Old Town"])}`}`, kind: "place" }
    if (seen.has(entity.name)) {
      if (seen.size > count * 0.9 || random() < 0.02) continue
      entities.push({ ...entity, name: `${entity.name} ${entities.length}` })
    } else {
      entities.push(entity)
    }
    seen.add(entity.name)
  }
  return entities
}

const timedFetch = async (url: string, path: string, token: string, json?: unknown) => {
  const started = performance.now()
  const response = await fetch(url + path, {
    method: json === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    body: json === undefined ? undefined : JSON.stringify(json)
  })
  const body = await response.json() as any
  const ms = performance.now() - started
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`)
  return { ms, body }
}

const summary = (times: ReadonlyArray<number>) => ({
  p50: Math.round(percentile(times, 50) * 10) / 10,
  p95: Math.round(percentile(times, 95) * 10) / 10,
  max: Math.round(Math.max(...times) * 10) / 10
})

const program = Effect.gen(function*() {
  const instance = yield* startInstance({
    ...withDatabase(process.env.DATABASE_URL),
    embedModelDir: Option.some(Path.join(root, "../shared/models/_fixtures/tiny-random-bert")),
    embedModel: "local",
    extractor: "off",
    universeSettleMs: 500
  })
  const { url, sql } = instance
  const engine = process.env.DATABASE_URL === undefined ? "pglite" : "postgres"
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "bench" } }))
  const token: string = session.access_token
  const source = yield* Effect.promise(() =>
    call(url, "/api/v1/sources", { token, json: { name: "universe", connector_kind: "file_upload", config: {} } })
  )
  const sourceId: string = source.id

  const documents = Math.ceil(targetEvents / eventsPerDocument)
  const entities = makeEntities(Math.round(targetEvents / 6))
  const topics = Math.max(1, Math.round(documents / 5))
  // Each topic has its own cast; an event takes most participants from its topic's cast, some from everyone.
  const casts = Array.from({ length: topics }, () => Array.from({ length: 40 }, () => zipf(entities.length)))
  const writeStarted = performance.now()
  // Rows travel as one JSON parameter; json_populate_recordset maps the keys onto the table's columns.
  const insert = (table: string, rows: ReadonlyArray<unknown>) =>
    sql.unsafe(`INSERT INTO ${table} SELECT * FROM json_populate_recordset(null::${table}, $1::json)`, [
      JSON.stringify(rows)
    ]).pipe(Effect.orDie, Effect.asVoid)
  const now = new Date().toISOString()
  for (let i = 0; i < entities.length; i += 2000) {
    yield* insert("entities", entities.slice(i, i + 2000).map((e) => ({
      id: e.id, source_id: sourceId, name: e.name, kind: e.kind, description: null, mention_count: 0,
      first_seen: null, last_seen: null, created_at: now, updated_at: now
    })))
  }
  let eventNumber = 0
  const tables = ["documents", "chunks", "events", "event_participants", "event_chunks", "entity_mentions"]
  const pending = new Map<string, Array<unknown>>(tables.map((table) => [table, []]))
  const queue = (table: string, rows: ReadonlyArray<unknown>) => pending.get(table)!.push(...rows)
  for (let d = 0; d < documents; d++) {
    const documentId = randomUUID()
    const topic = d % topics
    queue("documents", [{
      id: documentId, source_id: sourceId, title: `Report ${d + 1}`, kind: "text", format: "text",
      mime_type: "text/plain", size_bytes: 1000, content_hash: randomUUID(), external_key: null, status: "ready",
      stage: null, error_code: null, error_message: null, error_stage: null, job_id: null, active_version: 1,
      created_at: now, updated_at: now, ready_at: now, document_date: null
    }])
    const events: Array<Record<string, unknown>> = []
    const participants: Array<Record<string, unknown>> = []
    const eventChunks: Array<Record<string, unknown>> = []
    const chunkTexts: Array<Array<string>> = []
    const mentions = new Map<string, number>()
    const chunkMentions = new Map<string, number>()
    const chunkIds = Array.from({ length: eventsPerDocument / eventsPerChunk }, () => randomUUID())
    const base = Date.UTC(2015, 0, 1) + Math.floor(random() * 9 * 365) * 86_400_000
    for (let e = 0; e < eventsPerDocument && eventNumber < targetEvents; e++, eventNumber++) {
      const count = 2 + Math.floor(random() * 3)
      const cast = new Set<number>()
      while (cast.size < count) cast.add(random() < 0.85 ? pick(casts[topic]!) : zipf(entities.length))
      const members = [...cast].map((i) => entities[i]!)
      const verb = pick(verbs)
      const statement = `${members[0]!.name} ${verb}s ${members.slice(1).map((m) => m.name).join(" and ")}`
      const id = randomUUID().replaceAll("-", "")
      const dated = random() < 0.8
      const start = base + Math.floor(random() * 60) * 86_400_000
      const chunk = Math.floor(e / eventsPerChunk)
      ;(chunkTexts[chunk] ??= []).push(`${statement}.`)
      events.push({
        id, source_id: sourceId, document_id: documentId, version: 1, ordinal: e, statement, kind: verb,
        time_start: dated ? new Date(start).toISOString() : null,
        time_end: dated ? new Date(start + 86_400_000).toISOString() : null,
        time_precision: dated ? "day" : null, time_text: null, time_relative: false,
        place_entity_id: null, confidence: 0.6 + random() * 0.4, created_at: now
      })
      eventChunks.push({ event_id: id, chunk_id: chunkIds[chunk] })
      members.forEach((member, i) => {
        participants.push({ event_id: id, entity_id: member.id, role: i === 0 ? "actor" : "object" })
        mentions.set(member.id, (mentions.get(member.id) ?? 0) + 1)
        const key = `${member.id}|${chunk}`
        chunkMentions.set(key, (chunkMentions.get(key) ?? 0) + 1)
      })
    }
    let offset = 0
    queue("chunks", chunkTexts.map((lines, ordinal) => {
      const text = lines.join(" ")
      const row = {
        id: chunkIds[ordinal], document_id: documentId, source_id: sourceId, version: 1, ordinal, text,
        token_count: text.split(" ").length, lexeme_count: 0, section_path: [], char_start: offset,
        char_end: offset + text.length,
        speaker: null, spoken_at: null, spoken_until: null, messages: []
      }
      offset += text.length + 1
      return row
    }))
    queue("events", events)
    queue("event_participants", participants)
    queue("event_chunks", eventChunks)
    queue("entity_mentions", [
      ...[...mentions].map(([entityId, count]) => ({
        entity_id: entityId, document_id: documentId, version: 1, chunk_id: null, count
      })),
      ...[...chunkMentions].map(([key, count]) => {
        const [entityId, chunk] = key.split("|")
        return { entity_id: entityId, document_id: documentId, version: 1, chunk_id: chunkIds[Number(chunk)], count }
      })
    ])
    if (d % 20 === 19 || d === documents - 1) {
      for (const table of tables) {
        yield* insert(table, pending.get(table)!)
        pending.set(table, [])
      }
    }
  }
  // What Graph.settle keeps: counts and times per entity; entities nothing mentions are dropped.
  yield* sql`
    UPDATE entities e SET mention_count = coalesce(m.total, 0), first_seen = t.first, last_seen = t.last
    FROM entities x
    LEFT JOIN (SELECT entity_id, sum(count)::int AS total FROM entity_mentions WHERE chunk_id IS NULL GROUP BY 1) m
      ON m.entity_id = x.id
    LEFT JOIN (SELECT p.entity_id, min(ev.time_start) AS first, max(ev.time_start) AS last
      FROM event_participants p JOIN events ev ON ev.id = p.event_id GROUP BY 1) t ON t.entity_id = x.id
    WHERE e.id = x.id AND x.source_id = ${sourceId}`.pipe(Effect.orDie)
  yield* sql`DELETE FROM entities e WHERE e.source_id = ${sourceId}
    AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)`.pipe(Effect.orDie)
  yield* sql`VACUUM (ANALYZE)`.pipe(Effect.orDie)
  const [written] = yield* sql<{ events: number; entities: number }>`
    SELECT (SELECT count(*) FROM events WHERE source_id = ${sourceId})::int AS events,
      (SELECT count(*) FROM entities WHERE source_id = ${sourceId})::int AS entities`.pipe(Effect.orDie)
  console.log(`wrote ${written!.events} events, ${written!.entities} entities, ${documents} documents in ` +
    `${((performance.now() - writeStarted) / 1000).toFixed(1)} s (direct SQL)`)

  // The mark a graph transition would set; then the background takes over.
  const marked = performance.now()
  yield* sql`INSERT INTO universe_sources (source_id, revision, dirty_since, marked_at) VALUES (${sourceId}, 1, now(), now())
    ON CONFLICT (source_id) DO UPDATE SET revision = universe_sources.revision + 1, dirty_since = now(), marked_at = now()`
    .pipe(Effect.orDie)
  const health: Array<number> = []
  const manifest = yield* Effect.promise(async () => {
    for (;;) {
      const probe = performance.now()
      await fetch(`${url}/api/v1/system/health`).then((r) => r.text())
      health.push(performance.now() - probe)
      const reply = await timedFetch(url, "/api/v1/universe/manifest", token)
      if (!reply.body.pending && reply.body.computed_at !== null) return reply.body
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })
  const recomputeSeconds = (performance.now() - marked) / 1000
  const [state] = yield* sql<{ compute_ms: number }>`SELECT compute_ms FROM universe_sources WHERE source_id = ${sourceId}`
    .pipe(Effect.orDie)
  console.log(`recompute: done ${recomputeSeconds.toFixed(1)} s after the mark (including the ${500} ms settle), ` +
    `${state!.compute_ms} ms of load + Louvain + ForceAtlas2; ${manifest.communities.length} communities, ` +
    `${manifest.community_edges.length} community edges; health probes meanwhile: ${JSON.stringify(summary(health))} ms`)

  const communities: Array<string> = manifest.communities.map((c: { id: string }) => c.id)
  const entityIds = (yield* sql<{ id: string }>`
    SELECT id FROM entities WHERE source_id = ${sourceId} ORDER BY mention_count DESC, id LIMIT 2000`.pipe(Effect.orDie))
    .map((row) => row.id)
  const eventIds = (yield* sql<{ id: string }>`
    SELECT id FROM events WHERE source_id = ${sourceId} ORDER BY id LIMIT 2000`.pipe(Effect.orDie)).map((row) => row.id)
  const documentIds = (yield* sql<{ id: string }>`
    SELECT id FROM documents WHERE source_id = ${sourceId} ORDER BY id LIMIT 500`.pipe(Effect.orDie)).map((row) => row.id)
  // The most connected entities are the hardest to expand: a third of the requests go to the top 20.
  const node = (i: number) => {
    switch (i % 6) {
      case 0: return `community:${sourceId}:${communities[i % communities.length]!.split(":")[2]}`
      case 1: return `entity:${entityIds[i % 20]!}`
      case 2: return `entity:${entityIds[(i * 7919) % entityIds.length]!}`
      case 3: return `event:${eventIds[(i * 104729) % eventIds.length]!}`
      case 4: return `document:${documentIds[(i * 31) % documentIds.length]!}`
      default: return `entity:${entityIds[(i * 15485863) % entityIds.length]!}`
    }
  }
  const results = yield* Effect.promise(async () => {
    const manifestTimes: Array<number> = []
    const expandTimes: Array<number> = []
    const nodeTimes: Array<number> = []
    for (let i = 0; i < 20; i++) await timedFetch(url, "/api/v1/universe/manifest", token)
    for (let i = 0; i < requestCount; i++) {
      manifestTimes.push((await timedFetch(url, "/api/v1/universe/manifest", token)).ms)
    }
    let paged = 0
    for (let i = 0; i < requestCount; i++) {
      const first = await timedFetch(url, "/api/v1/universe/expand", token, { node_id: node(i), limit: 20 })
      expandTimes.push(first.ms)
      if (first.body.next_cursor !== null && i % 3 === 0) {
        const next = await timedFetch(url, "/api/v1/universe/expand", token, {
          node_id: node(i),
          limit: 20,
          cursor: first.body.next_cursor
        })
        expandTimes.push(next.ms)
        paged++
      }
    }
    for (let i = 0; i < requestCount; i++) {
      nodeTimes.push((await timedFetch(url, `/api/v1/universe/nodes/${encodeURIComponent(node(i))}`, token)).ms)
    }
    return { manifestTimes, expandTimes, nodeTimes, paged }
  })
  const result = {
    engine,
    events: written!.events,
    entities: written!.entities,
    documents,
    communities: manifest.communities.length,
    community_edges: manifest.community_edges.length,
    recompute_seconds: Math.round(recomputeSeconds * 10) / 10,
    compute_ms: state!.compute_ms,
    health_during_recompute_ms: summary(health),
    manifest_ms: summary(results.manifestTimes),
    expand_ms: { ...summary(results.expandTimes), requests: results.expandTimes.length, second_pages: results.paged },
    node_ms: summary(results.nodeTimes),
    machine: machine(),
    date: new Date().toISOString()
  }
  console.log(`GET /universe/manifest: ${JSON.stringify(result.manifest_ms)} ms`)
  console.log(`POST /universe/expand: ${JSON.stringify(result.expand_ms)} ms`)
  console.log(`GET /universe/nodes/{id}: ${JSON.stringify(result.node_ms)} ms`)
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  Fs.writeFileSync(Path.join(outDir, `universe-${engine}.json`), JSON.stringify(result, null, 2) + "\n")
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
