import { Clock, Effect, Layer, Option } from "effect"
import { makeThreads } from "../adapters/IngestThreads.ts"
import { EngramConfig } from "../config.ts"
import { type Claim, type SourceGraph, UniverseMaps } from "../stores/Universe.ts"
import { workerScripts } from "../workers.ts"
import type { MapInput } from "./universeMap.ts"

/**
 * A source marked this long ago is recomputed even while changes keep coming, or, when its last map took longer
 * than a tenth of that, `busyFactor` times that map's time: during a long ingest the maps of a large source take
 * at most about a tenth of one core's time, not a share that grows with the source.
 */
const maxWaitMs = 30_000
const busyFactor = 10
/** A map that takes longer than this is abandoned (the source stays marked and is tried again later). */
const computeLimitMs = 5 * 60_000
const retryMs = 60_000

/** The co-occurrence links of the graph: each pair of entities once, weighted by the events they share. */
export const mapInputOf = (graph: SourceGraph): MapInput => {
  const count = graph.entities.length
  const weights = new Map<number, number>()
  for (const members of graph.events) {
    for (let i = 0; i < members.length; i++) {
      for (let j = i + 1; j < members.length; j++) {
        const a = Math.min(members[i]!, members[j]!)
        const b = Math.max(members[i]!, members[j]!)
        const key = a * count + b
        weights.set(key, (weights.get(key) ?? 0) + 1)
      }
    }
  }
  const keys = [...weights.keys()].sort((x, y) => x - y)
  return {
    mentions: Int32Array.from(graph.entities, (entity) => entity.mention_count),
    edgeA: Int32Array.from(keys, (key) => Math.floor(key / count)),
    edgeB: Int32Array.from(keys, (key) => key % count),
    edgeWeight: Int32Array.from(keys, (key) => weights.get(key)!)
  }
}

/**
 * Keeps every source's universe map up to date, off the request path: a source marked by a graph transition is
 * recomputed once it has been quiet for ENGRAM_UNIVERSE_SETTLE_MS (or marked for 30 s), one source at a time, the
 * Louvain and ForceAtlas2 work on a thread of its own so neither requests nor ingestion threads wait for it.
 * Several processes on one database share the work through the claim.
 */
export const UniverseRecompute = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* EngramConfig
  const maps = yield* UniverseMaps
  // A thread of its own, loading only the map code: ingestion threads never wait behind a map.
  const run = yield* makeThreads(1, workerScripts.universe)
  const tick = Math.min(1000, Math.max(50, Math.floor(settings.universeSettleMs / 2)))

  const recompute = Effect.fn("Universe.recompute")(function*(claim: Claim) {
    const started = yield* Clock.currentTimeMillis
    const graph = yield* maps.load(claim.sourceId)
    const input = mapInputOf(graph)
    const map = yield* run({ kind: "map", input }, computeLimitMs)
    const computeMs = (yield* Clock.currentTimeMillis) - started
    yield* maps.save(claim, graph, input, map, computeMs)
    yield* Effect.logDebug("universe map computed").pipe(Effect.annotateLogs({
      source_id: claim.sourceId,
      entities: graph.entities.length,
      events: graph.events.length,
      communities: map.communities.length,
      ms: computeMs
    }))
  })

  const step = Effect.gen(function*() {
    const claimed = yield* maps.claim(settings.universeSettleMs, maxWaitMs, busyFactor)
    if (Option.isNone(claimed)) return yield* Effect.sleep(`${tick} millis`)
    yield* recompute(claimed.value).pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning("computing a universe map failed; it will be tried again", cause).pipe(
          Effect.andThen(maps.release(claimed.value, retryMs))
        )
      )
    )
  })

  yield* Effect.forkScoped(Effect.forever(step.pipe(
    Effect.catchCause((cause) =>
      Effect.logWarning("claiming a universe map failed", cause).pipe(Effect.andThen(Effect.sleep("1 second")))
    )
  )))
}))
