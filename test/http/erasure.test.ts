import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Erasure, redactedAnswer } from "../../src/stores/Erasure.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument, waitForUniverse } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

/**
 * The tables (of every table in the schema) where `needle` occurs, case-insensitively, in any column: a row's text
 * form holds every text, jsonb and array column; bytea columns are searched for the needle's UTF-8 bytes. (The row's
 * alias is no column's name: the universe tables have a column `x`, which an alias `x` read instead of the row.)
 */
const tablesHolding = (sql: SqlClient.SqlClient, needle: string) =>
  Effect.gen(function*() {
    const tables = yield* sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
    const byteColumns = yield* sql<{ table_name: string; column_name: string }>`
      SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND data_type = 'bytea'`
    const found = new Set<string>()
    for (const { table_name } of tables) {
      const [row] = yield* sql.unsafe<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${table_name}" whole_row WHERE strpos(lower(whole_row::text), lower($1)) > 0`,
        [needle]
      )
      if (row!.n > 0) found.add(table_name)
    }
    for (const { column_name, table_name } of byteColumns) {
      const [row] = yield* sql.unsafe<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${table_name}" WHERE position(convert_to($1, 'UTF8') in "${column_name}") > 0`,
        [needle]
      )
      if (row!.n > 0) found.add(table_name)
    }
    return [...found].sort()
  }).pipe(Effect.orDie)

const ready = (url: string, token: string, sourceId: string, title: string, text: string) =>
  Effect.gen(function*() {
    const accepted = yield* ingestText(url, token, sourceId, title, text)
    assert.strictEqual(accepted.status, 202, accepted.text)
    assert.strictEqual((yield* waitForDocument(url, token, sourceId, accepted.body.id)).status, "ready")
    return accepted.body.id as string
  })

const search = (url: string, token: string, query: string, sourceIds: ReadonlyArray<string>) =>
  Effect.map(
    request(url, "/api/v1/search", { token, json: { query, source_ids: sourceIds, save_exploration: true } }),
    (reply) => {
      if (reply.status !== 200) throw new Error(`search: ${reply.status} ${reply.text}`)
      return reply.body.exploration_id as string
    }
  )

const trace = { strategy: "multi", took_ms: 1, searched_source_ids: [], results: 2, passages: 2, notices: [] }

/** Real time passes (it.effect's clock is a test clock). */
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

for (const engine of engines) {
  layer(freshServer(engine))(`nothing outlives a delete (${engine})`, (it) => {
    it.effect("after a source, a document, a conversation and an agent are deleted, no table holds their ids or text", () =>
      Effect.gen(function*() {
        const { sql, url } = yield* TestServer
        const token = yield* login(url, "Eraser")
        const doomed = yield* createSource(url, token, "doomed")
        const kept = yield* createSource(url, token, "kept")
        const mallards = yield* ready(url, token, doomed, "mallards", "Mallards feed in the Zyxquorble marshes at dawn.")
        const herons = yield* ready(url, token, doomed, "herons", "Herons nest in tall reeds near the Zyxquorble lake.")
        const lava = yield* ready(url, token, kept, "lava", "Melanie saw basaltic lava flow from shield volcanoes on Hawaii.")
        // The full name is only the deleted document's: the graph's person takes it as her name while it is there.
        const bread = yield* ready(
          url,
          token,
          kept,
          "bread",
          "Bakers knead the Plumtwizzle dough before baking bread. Melanie Quibbleworth bakes it on Hawaii."
        )

        const both = yield* search(url, token, "mallards herons lava bread", [doomed, kept])
        const doomedOnly = yield* search(url, token, "mallards herons", [doomed])
        const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "Guide", source_ids: [doomed, kept] } })
        const agentId = agent.body.id as string
        const conversation = yield* request(url, `/api/v1/agents/${agentId}/conversations`, { token, json: {} })
        const conversationId = conversation.body.id as string
        const posted = yield* request(url, `/api/v1/agents/${agentId}/conversations/${conversationId}/messages`, {
          token,
          json: { content: "Where do mallards feed?" }
        })
        assert.strictEqual(posted.status, 200, posted.text)
        assert.include(posted.body.answer, "Zyxquorble")
        const asked = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "What do bakers knead before baking bread?" }
        })
        assert.include(asked.body.answer, "Plumtwizzle")
        const [partial] = yield* sql<{ id: string }>`
          INSERT INTO runs (agent_id, owner_id, question, status, answer, retrieval, provider)
          VALUES (${agentId}, (SELECT owner_id FROM agents WHERE id = ${agentId}), 'Where do herons nest?', 'cancelled',
            'Herons nest in tall reeds near the Zyxquorble',
            ${JSON.stringify({ ...trace, searched_source_ids: [doomed, kept] })}::jsonb,
            'extractive')
          RETURNING id`.pipe(Effect.orDie)

        // The scan sees the copies a delete must reach.
        // The words' stems ("zyxquorbl"), as the lexical index holds them, are needles too.
        const copies = yield* tablesHolding(sql, "zyxquorbl")
        for (const table of ["chunks", "document_parses", "explorations", "lexical_segments", "messages", "runs"]) {
          assert.include(copies, table)
        }
        assert.includeMembers(yield* tablesHolding(sql, mallards), ["explorations", "messages", "runs"])

        const removed = yield* request(url, `/api/v1/sources/${doomed}`, { method: "DELETE", token })
        assert.strictEqual(removed.status, 200, removed.text)
        for (const needle of [doomed, mallards, herons, "zyxquorbl"]) {
          assert.deepStrictEqual(yield* tablesHolding(sql, needle), [], needle)
        }
        const explorations = yield* sql<{ id: string; source_ids: ReadonlyArray<string>; results: ReadonlyArray<any> }>`
          SELECT id, source_ids, results FROM explorations WHERE id IN (${both}, ${doomedOnly})`.pipe(Effect.orDie)
        assert.deepStrictEqual(explorations.map((row) => row.id), [both], "an exploration of the source alone is gone")
        assert.deepStrictEqual(explorations[0]!.source_ids, [kept])
        assert.includeMembers(explorations[0]!.results.map((hit) => hit.document_id), [lava, bread])
        const messages = yield* request(url, `/api/v1/agents/${agentId}/conversations/${conversationId}/messages`, {
          token
        })
        assert.deepStrictEqual(messages.body.items.map((m: any) => m.content), ["Where do mallards feed?", redactedAnswer])
        assert.deepStrictEqual(messages.body.items[1].citations, [])
        const run = yield* request(url, `/api/v1/agents/${agentId}/runs/${posted.body.id}`, { token })
        assert.strictEqual(run.body.answer, redactedAnswer)
        assert.deepStrictEqual(run.body.retrieval.searched_source_ids, [kept])
        const untouched = yield* request(url, `/api/v1/agents/${agentId}/runs/${asked.body.id}`, { token })
        assert.include(untouched.body.answer, "Plumtwizzle", "an answer from the kept source stays")

        assert.include(yield* tablesHolding(sql, "quibbleworth"), "entities", "the name the graph took from the document")
        const document = yield* request(url, `/api/v1/sources/${kept}/documents/${bread}`, { method: "DELETE", token })
        assert.strictEqual(document.status, 200, document.text)
        for (const needle of [bread, "plumtwizzl", "quibbleworth"]) {
          assert.deepStrictEqual(yield* tablesHolding(sql, needle), [], needle)
        }
        const [left] = yield* sql<{ results: ReadonlyArray<any> }>`SELECT results FROM explorations WHERE id = ${both}`
          .pipe(Effect.orDie)
        assert.deepStrictEqual(left!.results.map((hit) => hit.document_id), [lava])

        const dropped = yield* request(url, `/api/v1/agents/${agentId}/conversations/${conversationId}`, {
          method: "DELETE",
          token
        })
        assert.strictEqual(dropped.status, 204)
        assert.deepStrictEqual(yield* tablesHolding(sql, conversationId), [])
        assert.strictEqual((yield* request(url, `/api/v1/agents/${agentId}`, { method: "DELETE", token })).status, 204)
        for (const needle of [agentId, posted.body.id, asked.body.id, partial!.id]) {
          assert.deepStrictEqual(yield* tablesHolding(sql, needle), [], needle)
        }
        assert.includeMembers(yield* tablesHolding(sql, lava), ["chunks", "documents", "explorations"], "the rest stays")
      }), { timeout: 120_000 })

    // Only PostgreSQL: the embedded engine has one connection, so an answer and a delete can never interleave there.
    if (engine === "postgres") it.effect(
      "an answer or exploration finished while its source is being deleted is stored without the deleted text",
      () =>
        Effect.gen(function*() {
          const { sql, url } = yield* TestServer
          const token = yield* login(url, "Racer")
          const doomed = yield* createSource(url, token, "doomed")
          yield* ready(url, token, doomed, "mallards", "Mallards feed in the Quoxtrel marshes at dawn.")
          const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "Quick", source_ids: [doomed] } })
          const erasure = yield* Effect.provide(
            Effect.service(Erasure),
            Erasure.layer.pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)))
          )
          const [asking, searching] = yield* sql.withTransaction(Effect.gen(function*() {
            // The delete has begun (the source's rows are locked) when the answer is about to be stored.
            yield* erasure.forgetSource(doomed)
            const asking = yield* Effect.forkChild(request(url, `/api/v1/agents/${agent.body.id}/ask`, {
              token,
              json: { question: "Where do mallards feed?" }
            }))
            const searching = yield* Effect.forkChild(request(url, "/api/v1/search", {
              token,
              json: { query: "mallards feed", source_ids: [doomed], save_exploration: true }
            }))
            for (let i = 0; i < 3000; i++) {
              // Activity is read once per transaction unless the snapshot is cleared.
              yield* sql`SELECT pg_stat_clear_snapshot()`
              const [waiting] = yield* sql<{ n: number }>`
                SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR KEY SHARE%'`
              const done = [asking, searching].filter((fiber) => fiber.pollUnsafe() !== undefined).length
              if (waiting!.n + done >= 2) break
              yield* pause(10)
            }
            yield* sql`DELETE FROM sources WHERE id = ${doomed}`
            return [asking, searching] as const
          })).pipe(Effect.orDie)
          const run = yield* Fiber.join(asking)
          assert.strictEqual(run.status, 200, run.text)
          assert.strictEqual(run.body.answer, redactedAnswer)
          assert.deepStrictEqual(run.body.citations, [])
          assert.deepStrictEqual(run.body.retrieval.searched_source_ids, [])
          const searched = yield* Fiber.join(searching)
          assert.strictEqual(searched.status, 200, searched.text)
          assert.isNull(searched.body.exploration_id, "an exploration of a deleted source alone is not saved")
          for (const needle of [doomed, "quoxtrel"]) assert.deepStrictEqual(yield* tablesHolding(sql, needle), [], needle)
        }),
      { timeout: 120_000 }
    )
  })
}

for (const engine of engines) {
  // The universe maps are recomputed by the service's own clock here (not a test clock).
  layer(freshServer(engine, { universeSettleMs: 100 }), { excludeTestServices: true })(
    `a delete reaches the stored universe map (${engine})`,
    (it) => {
      it.effect("the map stored before a delete holds none of the document's names while it waits for its recompute", () =>
        Effect.gen(function*() {
          const { sql, url } = yield* TestServer
          const token = yield* login(url, "Cartographer")
          const sourceId = yield* createSource(url, token, "islands")
          yield* ready(url, token, sourceId, "lava", "Melanie saw basaltic lava flow from shield volcanoes on Hawaii.")
          const bread = yield* ready(url, token, sourceId, "bread", "Melanie Quibbleworth baked bread on Hawaii on 3 May 2019.")
          yield* waitForUniverse(url, token, `?source_ids=${sourceId}`)
          assert.includeMembers(yield* tablesHolding(sql, "quibbleworth"), ["entities", "universe_communities"])
          const [event] = yield* sql<{ id: string }>`
            SELECT id FROM events WHERE document_id = ${bread} AND time_start IS NOT NULL LIMIT 1`
          assert.include(yield* tablesHolding(sql, event!.id), "universe_timeline", "the dated event is a top event")

          // A hub's stored neighbours (entities in 100 events or more) name documents and events: two such rows, as
          // a recompute writes them for a hub, pointing at the document and at one of its events.
          const [hawaii] = yield* sql<{ id: string }>`SELECT id FROM entities WHERE source_id = ${sourceId} AND name = 'Hawaii'`
          yield* sql`
            INSERT INTO universe_neighbours (entity_id, source_id, kind, rank, ref_id, score)
            VALUES (${hawaii!.id}, ${sourceId}, 'document', 0, ${bread}, 1), (${hawaii!.id}, ${sourceId}, 'event', 0, ${event!.id}, 1)`

          // The recompute the delete marks is held back, so what is checked is what the delete itself left.
          yield* sql`UPDATE universe_sources SET claimed_until = now() + interval '1 hour' WHERE source_id = ${sourceId}`
          const removed = yield* request(url, `/api/v1/sources/${sourceId}/documents/${bread}`, { method: "DELETE", token })
          assert.strictEqual(removed.status, 200, removed.text)
          for (const needle of [bread, event!.id, "quibbleworth"]) {
            assert.deepStrictEqual(yield* tablesHolding(sql, needle), [], needle)
          }
          const [community] = yield* sql<{ label: string }>`
            SELECT label FROM universe_communities WHERE source_id = ${sourceId} AND label LIKE '%Melanie%'`
          assert.include(community!.label, "Melanie", "the person stays, under the name left to her")
        }))
    }
  )
}
