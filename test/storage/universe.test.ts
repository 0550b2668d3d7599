import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { computeMap } from "../../src/background/universeMap.ts"
import { mapInputOf } from "../../src/background/Universe.ts"
import { markUniverseChanged, UniverseMaps } from "../../src/stores/Universe.ts"
import { login } from "../support/http.ts"
import { createSource } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

for (const engine of engines) {
  layer(freshServer(engine, { workerConcurrency: 0 }))(`universe maps (${engine})`, (it) => {
    it.effect("a source marked while its map was computed stays marked from then, not from its first mark", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const maps = yield* UniverseMaps
        const sourceId = yield* createSource(url, yield* login(url, "Steady"))
        yield* markUniverseChanged(sql, sourceId)
        // Claimed as the recompute loop would, an hour after the first mark (the loop itself skips a claimed source).
        yield* sql`UPDATE universe_sources SET dirty_since = now() - interval '1 hour',
          claimed_until = now() + interval '10 minutes' WHERE source_id = ${sourceId}`
        const [claimed] = yield* sql<{ revision: number }>`
          SELECT revision::int AS revision FROM universe_sources WHERE source_id = ${sourceId}`
        const graph = yield* maps.load(sourceId)
        yield* markUniverseChanged(sql, sourceId)
        const input = mapInputOf(graph)
        yield* maps.save({ sourceId, revision: claimed!.revision }, graph, input, computeMap(input), 5)
        const [row] = yield* sql<{ marked: boolean; recent: boolean; claimed: boolean }>`
          SELECT dirty_since IS NOT NULL AS marked, dirty_since > now() - interval '30 minutes' AS recent,
            claimed_until IS NOT NULL AS claimed
          FROM universe_sources WHERE source_id = ${sourceId}`
        assert.deepStrictEqual(row, { marked: true, recent: true, claimed: false })

        yield* maps.save({ sourceId, revision: claimed!.revision + 1 }, graph, input, computeMap(input), 5)
        const [clean] = yield* sql<{ marked: boolean }>`
          SELECT dirty_since IS NOT NULL AS marked FROM universe_sources WHERE source_id = ${sourceId}`
        assert.isFalse(clean!.marked, "no mark since the claim: clean")
      }))

    it.effect("a source that keeps changing waits for the longer of the bound and ten times its last map's time", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const maps = yield* UniverseMaps
        const sourceId = yield* createSource(url, yield* login(url, "Busy"))
        yield* markUniverseChanged(sql, sourceId)
        // Marked 40 s ago and again just now (never quiet for the settle time); others' marks are out of the way.
        const state = (computeMs: number | null) =>
          sql`UPDATE universe_sources SET dirty_since = now() - interval '40 seconds', marked_at = now(),
            claimed_until = NULL, compute_ms = ${computeMs} WHERE source_id = ${sourceId}`
        const claimed = Effect.map(maps.claim(60_000, 30_000, 10), (claim) => claim.pipe(
          Option.map((claim) => claim.sourceId),
          Option.getOrNull
        ))
        yield* sql`UPDATE universe_sources SET dirty_since = NULL WHERE source_id <> ${sourceId}`
        yield* state(null)
        assert.strictEqual(yield* claimed, sourceId, "never computed: the 30 s bound")
        yield* state(2_000)
        assert.strictEqual(yield* claimed, sourceId, "a 2 s map: the 30 s bound")
        yield* state(5_000)
        assert.isNull(yield* claimed, "a 5 s map waits 50 s")
        yield* sql`
          UPDATE universe_sources SET dirty_since = now() - interval '51 seconds' WHERE source_id = ${sourceId}`
        assert.strictEqual(yield* claimed, sourceId)
      }))
  })
}
