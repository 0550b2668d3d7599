import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { login, request } from "../support/http.ts"
import { createSource } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

/** A time in the millisecond 2030-01-01T00:00:00.123, `micro` microseconds into it (0–999). */
const sameMillisecond = (micro: number) => `2030-01-01T00:00:00.123${String(micro).padStart(3, "0")}Z`

/** For lists whose time may be unknown (listed last): the time, except 3 stands for none. */
const orUnknown = (micro: number) => micro === 3 ? null : sameMillisecond(micro)

interface Listed {
  /** The list's path (with its own query parameters, if any). */
  readonly path: string
  /** Every row the list must show. */
  readonly ids: ReadonlyArray<string>
}

interface ListCase {
  readonly name: string
  /** Makes one row per time (a time is microseconds into one millisecond) for a new user, and says where they list. */
  readonly make: (
    url: string,
    token: string,
    sql: SqlClient.SqlClient,
    times: ReadonlyArray<number>
  ) => Effect.Effect<Listed>
}

const created = (reply: { status: number; text: string; body: any }) => {
  if (reply.status !== 201) throw new Error(`expected 201: ${reply.status} ${reply.text}`)
  return reply.body.id as string
}

const insertDocument = (sql: SqlClient.SqlClient, sourceId: string, at: string) =>
  sql<{ id: string }>`
    INSERT INTO documents (source_id, title, kind, format, mime_type, size_bytes, content_hash, status,
      active_version, created_at, updated_at)
    VALUES (${sourceId}, 'row', 'text', 'txt', 'text/plain', 1, ${randomUUID()}, 'ready', 1,
      ${at}::timestamptz, ${at}::timestamptz)
    RETURNING id`.pipe(Effect.orDie, Effect.map((rows) => rows[0]!.id))

const cases: ReadonlyArray<ListCase> = [
  {
    name: "sources",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const ids: Array<string> = []
        for (const micro of times) {
          const id = yield* createSource(url, token, "row")
          yield* sql`UPDATE sources SET created_at = ${sameMillisecond(micro)}::timestamptz WHERE id = ${id}`
            .pipe(Effect.orDie)
          ids.push(id)
        }
        return { path: "/api/v1/sources", ids }
      })
  },
  {
    name: "documents",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const sourceId = yield* createSource(url, token)
        const ids = yield* Effect.forEach(times, (micro) => insertDocument(sql, sourceId, sameMillisecond(micro)))
        return { path: `/api/v1/sources/${sourceId}/documents`, ids }
      })
  },
  {
    name: "source chunks",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const sourceId = yield* createSource(url, token)
        const ids: Array<string> = []
        for (const micro of times) {
          const documentId = yield* insertDocument(sql, sourceId, sameMillisecond(micro))
          for (const ordinal of [0, 1]) {
            const [row] = yield* sql<{ id: string }>`
              INSERT INTO chunks (document_id, source_id, version, ordinal, text, token_count, section_path,
                char_start, char_end)
              VALUES (${documentId}, ${sourceId}, 1, ${ordinal}, 'text', 1, '[]'::jsonb, 0, 4)
              RETURNING id`.pipe(Effect.orDie)
            ids.push(row!.id)
          }
        }
        return { path: `/api/v1/sources/${sourceId}/chunks`, ids }
      })
  },
  {
    name: "agents",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const ids: Array<string> = []
        for (const micro of times) {
          const id = created(yield* request(url, "/api/v1/agents", { token, json: { name: "row" } }))
          yield* sql`UPDATE agents SET created_at = ${sameMillisecond(micro)}::timestamptz WHERE id = ${id}`
            .pipe(Effect.orDie)
          ids.push(id)
        }
        return { path: "/api/v1/agents", ids }
      })
  },
  {
    name: "conversations",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const agentId = created(yield* request(url, "/api/v1/agents", { token, json: { name: "talker" } }))
        const ids: Array<string> = []
        for (const micro of times) {
          const id = created(yield* request(url, `/api/v1/agents/${agentId}/conversations`, { token, json: {} }))
          yield* sql`UPDATE conversations SET updated_at = ${sameMillisecond(micro)}::timestamptz WHERE id = ${id}`
            .pipe(Effect.orDie)
          ids.push(id)
        }
        return { path: `/api/v1/agents/${agentId}/conversations`, ids }
      })
  },
  {
    name: "messages",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const agentId = created(yield* request(url, "/api/v1/agents", { token, json: { name: "talker" } }))
        const conversationId = created(
          yield* request(url, `/api/v1/agents/${agentId}/conversations`, { token, json: {} })
        )
        const ids: Array<string> = []
        for (const micro of times) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO messages (conversation_id, role, content, created_at)
            VALUES (${conversationId}, 'user', 'hello', ${sameMillisecond(micro)}::timestamptz)
            RETURNING id`.pipe(Effect.orDie)
          ids.push(row!.id)
        }
        return { path: `/api/v1/agents/${agentId}/conversations/${conversationId}/messages`, ids }
      })
  },
  {
    name: "entities by recency",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const sourceId = yield* createSource(url, token)
        const documentId = yield* insertDocument(sql, sourceId, sameMillisecond(0))
        const ids: Array<string> = []
        for (const micro of times) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO entities (source_id, name, kind, mention_count, first_seen, last_seen)
            VALUES (${sourceId}, ${`E${ids.length}`}, 'person', 1, ${orUnknown(micro)}::timestamptz,
              ${orUnknown(micro)}::timestamptz)
            RETURNING id`.pipe(Effect.orDie)
          yield* sql`INSERT INTO entity_mentions (entity_id, document_id, version, count)
            VALUES (${row!.id}, ${documentId}, 1, 1)`.pipe(Effect.orDie)
          ids.push(row!.id)
        }
        return { path: `/api/v1/sources/${sourceId}/entities?sort=recent`, ids }
      })
  },
  {
    name: "entities by mentions",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const sourceId = yield* createSource(url, token)
        const documentId = yield* insertDocument(sql, sourceId, sameMillisecond(0))
        const ids: Array<string> = []
        for (const count of times) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO entities (source_id, name, kind, mention_count)
            VALUES (${sourceId}, ${`E${ids.length}`}, 'person', ${count})
            RETURNING id`.pipe(Effect.orDie)
          yield* sql`INSERT INTO entity_mentions (entity_id, document_id, version, count)
            VALUES (${row!.id}, ${documentId}, 1, 1)`.pipe(Effect.orDie)
          ids.push(row!.id)
        }
        return { path: `/api/v1/sources/${sourceId}/entities?sort=mentions`, ids }
      })
  },
  {
    name: "events",
    make: (url, token, sql, times) =>
      Effect.gen(function*() {
        const sourceId = yield* createSource(url, token)
        const documentId = yield* insertDocument(sql, sourceId, sameMillisecond(0))
        const ids: Array<string> = []
        for (const micro of times) {
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO events (source_id, document_id, version, ordinal, statement, kind, time_start, time_end,
              time_precision, confidence)
            VALUES (${sourceId}, ${documentId}, 1, ${ids.length}, 'Someone did something.', 'do',
              ${orUnknown(micro)}::timestamptz, ${orUnknown(micro)}::timestamptz + interval '1 minute',
              ${micro === 3 ? null : "minute"}, 0.5)
            RETURNING id`.pipe(Effect.orDie)
          ids.push(row!.id)
        }
        return { path: `/api/v1/sources/${sourceId}/events`, ids }
      })
  }
]

const withQuery = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`

/** Follows next_cursor from the first page to the end, collecting the ids in order. */
const pageThrough = (url: string, token: string, path: string, limit: number) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    let cursor: string | null = null
    for (let page = 0; page < 1000; page++) {
      const query: string = cursor === null ? `limit=${limit}` : `limit=${limit}&cursor=${cursor}`
      const reply = yield* request(url, withQuery(path, query), { token })
      if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${reply.text}`)
      seen.push(...reply.body.items.map((item: { id: string }) => item.id))
      cursor = reply.body.next_cursor
      if (cursor === null) return seen
    }
    throw new Error(`${path}: the cursor never ended`)
  })

let users = 0
const newUser = (url: string) => login(url, `pager-${process.pid}-${users++}`)

/** Microseconds into one millisecond, few distinct values so that equal times are common. */
const Times = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))).check(
  Schema.isBetweenLength(1, 7)
)
const PageSize = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 8 }))

for (const engine of engines) {
  layer(freshServer(engine))(`pagination (${engine})`, (it) => {
    it.effect("three sources created in the same millisecond list one per page, none lost", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const token = yield* newUser(url)
        const listed = yield* cases[0]!.make(url, token, sql, [400, 500, 600])
        const paged = yield* pageThrough(url, token, listed.path, 1)
        assert.deepStrictEqual(paged, [listed.ids[2], listed.ids[1], listed.ids[0]])
      }))

    for (const list of cases) {
      it.effect.prop(
        `${list.name}: paging through rows of one millisecond shows each row once, in the list's order`,
        [Times, PageSize],
        ([times, limit]) =>
          Effect.gen(function*() {
            const { url, sql } = yield* TestServer
            const token = yield* newUser(url)
            const listed = yield* list.make(url, token, sql, times)
            const whole = yield* request(url, withQuery(listed.path, "limit=100"), { token })
            const order = whole.body.items.map((item: { id: string }) => item.id)
            assert.sameMembers(order, [...listed.ids])
            const paged = yield* pageThrough(url, token, listed.path, limit)
            assert.deepStrictEqual(paged, order)
          }),
        { timeout: 180_000, arbitrary: { runs: 12, maxShrinks: 20 } }
      )
    }

    it.effect("a cursor of another list, or not one at all, is 400 invalid_cursor", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const token = yield* newUser(url)
        const sources = yield* cases[0]!.make(url, token, sql, [1, 2])
        const first = yield* request(url, `${sources.path}?limit=1`, { token })
        const agents = yield* cases[3]!.make(url, token, sql, [1, 2])
        const empty = Buffer.from(JSON.stringify(["agents", {}])).toString("base64url")
        // An agents cursor whose time names no moment PostgreSQL holds (30 February, year 0) was a 500.
        const own = yield* request(url, `${agents.path}?limit=1`, { token })
        const [list, key] = JSON.parse(Buffer.from(own.body.next_cursor, "base64url").toString())
        const timed = (at: string) => Buffer.from(JSON.stringify([list, { ...key, at }])).toString("base64url")
        for (
          const cursor of [
            first.body.next_cursor, "garbage", "W10", empty, timed("2023-02-30T10:00:00.000000Z"),
            timed("0000-01-01T00:00:00.000000Z"),
            Buffer.from(JSON.stringify([list, { ...key, id: "a\u0000b" }])).toString("base64url")
          ]
        ) {
          const reply = yield* request(url, `${agents.path}?limit=1&cursor=${cursor}`, { token })
          assert.strictEqual(reply.status, 400, cursor)
          assert.strictEqual(reply.body.error.code, "invalid_cursor")
        }
      }))
  })
}
