import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { documentReferences } from "../../src/stores/Graph.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

// A statement the service runs for every document keeps the plan it was given while the tables were small (a
// generic plan, cached). Whatever that plan is, reading a document's graph rows must stay linear in the rows: a
// filter that compares every participant row with a list of the document's event ids held the embedded database's
// only connection for over half an hour on a 5,882-message conversation.
for (const engine of engines) {
  layer(freshServer(engine, { workerConcurrency: 0 }), { excludeTestServices: true })(`graph plans (${engine})`, (it) => {
    it.effect("a document's references are read without comparing each participant with a list, under a generic plan", () =>
      Effect.gen(function*() {
        const { sql } = yield* TestServer
        const [text, params] = documentReferences(sql, "d").compile()
        const args = params.map(() => "'d0'").join(", ")
        const plan = yield* sql.withTransaction(Effect.gen(function*() {
          // Copies of the graph's tables (with their keys and indexes) shadow them for this transaction, small and
          // analyzed, the state in which a cached plan is made.
          for (const table of ["events", "event_participants", "entity_mentions"]) {
            yield* sql.unsafe(`CREATE TEMP TABLE ${table} (LIKE public.${table} INCLUDING ALL) ON COMMIT DROP`)
          }
          yield* sql`
            INSERT INTO events (id, source_id, document_id, version, ordinal, statement, kind, confidence)
            SELECT md5(g::text), 's', 'd' || (g % 2), 1, g, 'statement', 'say', 1 FROM generate_series(1, 20) g`
          yield* sql`
            INSERT INTO event_participants (event_id, entity_id, role)
            SELECT md5(g::text), 'e' || (g % 5), 'actor' FROM generate_series(1, 20) g`
          yield* sql.unsafe("ANALYZE pg_temp.events")
          yield* sql.unsafe("ANALYZE pg_temp.event_participants")
          yield* sql.unsafe("SET LOCAL plan_cache_mode = force_generic_plan")
          yield* sql.unsafe(`PREPARE graph_plan_probe AS ${text}`)
          const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE graph_plan_probe(${args})`)
          yield* sql.unsafe("DEALLOCATE graph_plan_probe")
          return rows.map((row) => row["QUERY PLAN"]).join("\n")
        }))
        assert.include(plan, "event_participants", plan)
        assert.notMatch(plan, /= ANY/, plan)
      }))
  })
}
