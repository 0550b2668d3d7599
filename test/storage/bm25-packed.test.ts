import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { mulberry32 } from "../../scripts/lib/onnx.ts"
import type { EngramSettings } from "../../src/config.ts"
import { SqlClient } from "effect/sql"
import { exhaustiveBm25, mostSegmentsPerTerm } from "../../scripts/lib/bm25Reference.ts"
import { Accumulator, LexicalIndex, mergeGroups } from "../../src/stores/LexicalIndex.ts"
import { SegmentCache } from "../../src/stores/segmentCache.ts"
import { forEachPosting, pack, packedAggregate, type Posting, weightSlots } from "../../src/stores/packedPostings.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, freshSettings, serverLayer, TestServer } from "../support/server.ts"

/** A seeded generator, so a failing corpus can be rebuilt from its seed. */
const generator = (seed: number) => {
  const next = mulberry32(seed)
  return { next, below: (n: number) => Math.floor(next() * n) }
}

// Words that stem to distinct lexemes and are not stop words.
const vocabulary = (
  "heron river forest stone copper violin harbour lantern meadow glacier falcon orchard canyon marble thunder " +
  "compass saddle willow beacon granite lagoon pepper walnut ember quartz tundra cobalt juniper anchor badger " +
  "cactus dolphin feather gravel hammock iguana jasmine kettle lobster mango nectar otter pebble quiver raven " +
  "sapphire tulip umbrella velvet wombat yacht zephyr almond bramble cinder dagger engine fossil goblet hazel"
).split(" ")

/**
 * A word drawn by Zipf's law over the vocabulary (`skew` 0 is uniform): a few words are in most chunks, as
 * common words are in real text: their postings fill many segments, merged as they grow.
 */
const zipf = (random: ReturnType<typeof generator>, skew: number) => {
  const weights = vocabulary.map((_, i) => 1 / Math.pow(i + 1, skew))
  const total = weights.reduce((a, b) => a + b, 0)
  return () => {
    let pick = random.next() * total
    for (const [i, weight] of weights.entries()) {
      pick -= weight
      if (pick <= 0) return vocabulary[i]!
    }
    return vocabulary[vocabulary.length - 1]!
  }
}

/** Paragraphs of varied length (chunk length matters to BM25), some words repeated (term frequency). */
const documentText = (random: ReturnType<typeof generator>, word: () => string) =>
  Array.from({ length: 2 + random.below(6) }, () => {
    const words = Array.from({ length: 3 + random.below(40) }, word)
    if (random.next() < 0.3) words.push(...Array.from({ length: 1 + random.below(4) }, () => words[0]!))
    return words.join(" ") + "."
  }).join("\n\n")

const queryText = (random: ReturnType<typeof generator>, word: () => string) =>
  Array.from({ length: 1 + random.below(6) }, () =>
    random.next() < 0.15 ? vocabulary[random.below(vocabulary.length)]! : word()).join(" ")

const parameters = { k1: 1.2, b: 0.75 }

interface Index {
  readonly lexical: LexicalIndex["Service"]
  /**
   * The same index with a first statement, lookups, weight tables and the segment cache for small corpora (the
   * server's suit 100,000 chunks).
   */
  readonly pruning: LexicalIndex["Service"]
  readonly sql: SqlClient.SqlClient
}

/** Runs `use` against a server started with `settings`, with its BM25 index and database. */
const onServer = <A>(settings: EngramSettings, use: (url: string, index: Index) => Effect.Effect<A>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(serverLayer(settings))
    const sql = Context.get(context, SqlClient.SqlClient)
    const pruning = yield* Layer.build(
      LexicalIndex.layerWith({
        inlinePostings: 16,
        lookupCost: 1,
        tabledPostings: 4,
        cachedPostings: 4,
        // Small enough that segments are given up and read again within one comparison.
        cacheBytes: 2048
      })
    ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    return yield* use(Context.get(context, TestServer).url, {
      lexical: Context.get(context, LexicalIndex),
      pruning: Context.get(pruning, LexicalIndex),
      sql
    })
  }))

/**
 * For generated queries, every source selection and several k: search over the packed postings equals exhaustive
 * BM25 in SQL over the postings table (same chunks, same order, same scores). Returns how many hits were compared,
 * and in how many searches pruning left postings unread.
 */
const compareToExhaustive = (
  { lexical, pruning, sql }: Index,
  random: ReturnType<typeof generator>,
  word: () => string,
  sources: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    const selections = [[sources[0]!], [sources[1]!, sources[2]!], sources]
    let compared = 0
    let pruned = 0
    const asked: Array<{ query: string; sourceIds: ReadonlyArray<string>; limit: number; reference: unknown }> = []
    for (let q = 0; q < 20; q++) {
      const query = queryText(random, word)
      for (const sourceIds of selections) {
        for (const limit of [1, 3, 10, 40]) {
          const reference = yield* exhaustiveBm25(sql, query, sourceIds, limit, parameters)
          asked.push({ query, sourceIds, limit, reference })
          const hits = yield* lexical.search(query, sourceIds, limit, parameters)
          assert.deepStrictEqual(hits, reference, `query "${query}", ${sourceIds.length} source(s), k ${limit}`)
          const measured = yield* pruning.searchMeasured(query, sourceIds, limit, parameters)
          assert.deepStrictEqual(measured.hits, reference, `pruning, query "${query}", k ${limit}`)
          // With their chunks, read by the statement that checks them: the same hits, each with its own chunk.
          const withChunks = yield* pruning.search(query, sourceIds, limit, parameters, true)
          assert.deepStrictEqual(withChunks.map(({ chunkId, score }) => ({ chunkId, score })), [...reference])
          for (const { chunk, chunkId } of withChunks) {
            assert.strictEqual(chunk?.id, chunkId)
            assert.include(sourceIds, chunk!.source_id)
            assert.isAbove(chunk!.text.length, 0)
          }
          compared += hits.length
          if (measured.postings.read < measured.postings.total) pruned++
        }
      }
    }
    // All at once: searches in flight together (each scoring into an accumulator of its own) answer as alone.
    yield* Effect.forEach(asked, ({ limit, query, reference, sourceIds }) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* lexical.search(query, sourceIds, limit, parameters), reference)
        const measured = yield* pruning.searchMeasured(query, sourceIds, limit, parameters)
        assert.deepStrictEqual(measured.hits, reference, `at once, pruning, query "${query}", k ${limit}`)
      }), { concurrency: "unbounded", discard: true })
    return { compared, pruned }
  })

/** The comparison must have compared hits, some of them from searches that skipped postings, or it proved little. */
const check = ({ compared, pruned }: { readonly compared: number; readonly pruned: number }) =>
  Effect.sync(() => {
    assert.isAbove(compared, 100)
    assert.isAbove(pruned, 0)
  })

/** The segments per (source, term) of the size class with the most: merging keeps it under the fan-in of 8. */
const mostSegments = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ most: number }>`
      SELECT coalesce(max(n), 0)::int AS most FROM (
        SELECT count(*) AS n FROM lexical_segments GROUP BY source_id, term, floor(ln(postings) / ln(8))
      ) s`.pipe(Effect.orDie),
    (rows) => rows[0]!.most
  )

/** Each term in search with three postings or more: its segments replaced by one of all but its last two, and one each for those. */
const fragment = (sql: SqlClient.SqlClient) =>
  sql.withTransaction(Effect.gen(function*() {
    const removed = yield* sql<{ source_id: string; term: string; packed: string }>`
      DELETE FROM lexical_segments s USING lexical_terms t
      WHERE t.source_id = s.source_id AND t.term = s.term AND t.df >= 3
      RETURNING s.source_id, s.term, encode(s.packed, 'base64') AS packed`
    const byTerm = new Map<string, { sourceId: string; term: string; postings: Array<Posting> }>()
    for (const row of removed) {
      const key = `${row.source_id}/${row.term}`
      const entry = byTerm.get(key) ?? { sourceId: row.source_id, term: row.term, postings: [] }
      byTerm.set(key, entry)
      forEachPosting(Buffer.from(row.packed, "base64"), (no, tf, len) => entry.postings.push({ no, tf, len }))
    }
    for (const { postings, sourceId, term } of byTerm.values()) {
      postings.sort((a, b) => a.no - b.no)
      const pieces = [postings.slice(0, -2), postings.slice(-2, -1), postings.slice(-1)].filter((p) => p.length > 0)
      for (const piece of pieces) {
        yield* sql`
          INSERT INTO lexical_segments (source_id, term, postings, packed)
          VALUES (${sourceId}, ${term}, ${piece.length}, decode(${pack(piece).toString("base64")}, 'base64'))`
      }
    }
  })).pipe(Effect.orDie)

/** Waits (two minutes at most) until idle workers have left every term in search in one or two segments. */
const untilCompacted = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    for (let waited = 0; (yield* mostSegmentsPerTerm(sql)) > 2; waited += 100) {
      assert.isBelow(waited, 120_000, "the index was not compacted")
      yield* Effect.sleep("100 millis")
    }
  })

const removeDocument = (url: string, token: string, document: { readonly sourceId: string; readonly id: string }) =>
  Effect.map(
    request(url, `/api/v1/sources/${document.sourceId}/documents/${document.id}`, { method: "DELETE", token }),
    (reply) => assert.strictEqual(reply.status, 200, reply.text)
  )

const act = (url: string, token: string, document: { readonly sourceId: string; readonly id: string }, action: string) =>
  request(url, `/api/v1/sources/${document.sourceId}/documents/${document.id}/${action}`, { method: "POST", token })

describe("BM25 over packed postings", () => {
  for (const engine of engines) {
    for (const [seed, skew] of [[7, 1.1], [11, 0.6]] as const) {
      it.live(`search equals exhaustive BM25 through deletions, reprocessing, merges and documents out of search (${engine}, corpus ${seed})`, () =>
        Effect.gen(function*() {
          const settings = yield* freshSettings(engine, {
            embedModel: "none",
            extractor: "off",
            chunkTokens: 24,
            chunkOverlapTokens: 0
          })
          const random = generator(seed)
          const word = zipf(random, skew)
          const { token, sources, documents } = yield* onServer(settings, (url, index) =>
            Effect.gen(function*() {
              const token = yield* login(url, "Pruning")
              const sources = [
                yield* createSource(url, token, "a"),
                yield* createSource(url, token, "b"),
                yield* createSource(url, token, "c")
              ]
              const documents: Array<{ readonly sourceId: string; readonly id: string }> = []
              const add = (sourceId: string, title: string) =>
                Effect.gen(function*() {
                  const reply = yield* ingestText(url, token, sourceId, title, documentText(random, word))
                  assert.strictEqual(reply.status, 202, reply.text)
                  documents.push({ sourceId, id: reply.body.id })
                  return reply.body.id as string
                })
              for (let i = 0; i < 30; i++) yield* add(sources[i % 3]!, `doc ${i}`)
              for (const document of documents) yield* waitForDocument(url, token, document.sourceId, document.id)
              yield* check(yield* compareToExhaustive(index, random, word, sources))
              // Ten documents per source, a segment per term each: common terms' segments have been merged.
              const merged = yield* index.sql<{ n: number }>`
                SELECT count(*)::int AS n FROM lexical_segments WHERE postings >= 8`.pipe(Effect.orDie)
              assert.isAbove(merged[0]!.n, 0)
              assert.isBelow(yield* mostSegments(index.sql), 8)

              // Deleted documents leave their statistics, their packed postings stay until their terms are merged;
              // reprocessed ones get new chunks and postings; new documents append and merge.
              const [mark] = yield* index.sql<{ id: number }>`
                SELECT coalesce(max(id), 0)::int AS id FROM lexical_segments`.pipe(Effect.orDie)
              for (const document of documents.splice(0, 4)) yield* removeDocument(url, token, document)
              for (const document of documents.slice(0, 2)) {
                const reply = yield* act(url, token, document, "reprocess")
                assert.strictEqual(reply.status, 200, reply.text)
                yield* waitForDocument(url, token, document.sourceId, document.id, (d) => d.status === "ready")
              }
              for (let i = 0; i < 3; i++) {
                const id = yield* add(sources[i]!, `late ${i}`)
                yield* waitForDocument(url, token, sources[i]!, id)
              }
              for (let i = 0; i < 12; i++) {
                const id = yield* add(sources[i % 3]!, `later ${i}`)
                yield* waitForDocument(url, token, sources[i % 3]!, id)
              }
              yield* check(yield* compareToExhaustive(index, random, word, sources))
              assert.isBelow(yield* mostSegments(index.sql), 8)
              // Idle workers compact the index: every term in search ends in one or two segments, search still exact.
              yield* untilCompacted(index.sql)
              yield* check(yield* compareToExhaustive(index, random, word, sources))
              // Segments written since then (merged, compacted or a new document's) hold no number that left search.
              const remerged = yield* index.sql<{ packed: string; source_id: string }>`
                SELECT encode(packed, 'base64') AS packed, source_id FROM lexical_segments
                WHERE id > ${mark!.id}`.pipe(Effect.orDie)
              const dead = new Set((yield* index.sql<{ key: string }>`
                SELECT source_id || '/' || no AS key FROM lexical_dead`.pipe(Effect.orDie)).map((row) => row.key))
              assert.isAbove(remerged.length, 0)
              assert.isAbove(dead.size, 0)
              for (const segment of remerged) {
                forEachPosting(Buffer.from(segment.packed, "base64"), (no) =>
                  assert.isFalse(dead.has(`${segment.source_id}/${no}`), `number ${no} left search`))
              }
              return { token, sources, documents }
            }))

          // With no worker running, documents queued for reprocessing or paused stay out of search while their
          // postings stay in the index: scoring meets postings of chunks search cannot return.
          yield* onServer({ ...settings, workerConcurrency: 0 }, (url, index) =>
            Effect.gen(function*() {
              for (const document of documents.slice(2, 8)) {
                const reply = yield* act(url, token, document, "reprocess")
                assert.strictEqual(reply.status, 200, reply.text)
              }
              const pause = yield* act(url, token, documents[2]!, "pause")
              assert.strictEqual(pause.status, 200, pause.text)
              yield* check(yield* compareToExhaustive(index, random, word, sources))

              // An index in many segments, as ingestion leaves it before workers are idle: each term's postings in
              // one segment but its last two, one segment each. Compaction (one step at a time, as idle workers run
              // it) leaves each term in search in one segment, or two where the first outweighs the rest 8 times.
              yield* fragment(index.sql)
              assert.isAbove(yield* mostSegmentsPerTerm(index.sql), 2)
              let steps = 0
              while (yield* index.lexical.compactStep) steps++
              assert.isAbove(steps, 0)
              const shapes = yield* index.sql<{ segments: number; postings: number; largest: number }>`
                SELECT count(*)::int AS segments, sum(postings)::int AS postings, max(postings) AS largest
                FROM lexical_segments JOIN lexical_terms USING (source_id, term) GROUP BY source_id, term`
                .pipe(Effect.orDie)
              for (const shape of shapes) {
                assert.isAtMost(shape.segments, 2)
                if (shape.segments === 2) assert.isAbove(shape.largest, 8 * (shape.postings - shape.largest))
              }
              assert.isTrue(shapes.some((shape) => shape.segments === 2))
              assert.isTrue(shapes.some((shape) => shape.segments === 1 && shape.postings >= 3))
              yield* check(yield* compareToExhaustive(index, random, word, sources))
              assert.isFalse(yield* index.lexical.compactStep)

              // A database from before the packed postings: migrations 16 to 21 undone, then run again at the next
              // start.
              yield* index.sql`ALTER TABLE entity_mentions DROP COLUMN forms, DROP COLUMN keys, DROP COLUMN description`
                .pipe(Effect.orDie)
              yield* index.sql`DROP INDEX jobs_queued, jobs_leased, jobs_live`.pipe(Effect.orDie)
              yield* index.sql`
                CREATE INDEX jobs_claimable ON jobs (run_after, created_at) WHERE status IN ('queued', 'running')`
                .pipe(Effect.orDie)
              yield* index.sql`ALTER TABLE documents DROP COLUMN chunk_count, DROP COLUMN event_count`.pipe(Effect.orDie)
              yield* index.sql`DROP INDEX entities_persons`.pipe(Effect.orDie)
              yield* index.sql`ALTER TABLE chunks DROP COLUMN near_key`.pipe(Effect.orDie)
              yield* index.sql`DROP TABLE lexical_segments`.pipe(Effect.orDie)
              yield* index.sql`DROP TABLE lexical_dead`.pipe(Effect.orDie)
              yield* index.sql`ALTER TABLE chunks DROP COLUMN no`.pipe(Effect.orDie)
              yield* index.sql`DROP SEQUENCE chunk_numbers`.pipe(Effect.orDie)
              yield* index.sql`ALTER TABLE lexical_terms ADD COLUMN max_tf integer, ADD COLUMN min_len integer`
                .pipe(Effect.orDie)
              yield* index.sql`CREATE INDEX chunk_terms_scoring ON chunk_terms (term, source_id)`.pipe(Effect.orDie)
              yield* index.sql`DELETE FROM engram_migrations WHERE migration_id >= 16`.pipe(Effect.orDie)
            }))
          yield* onServer({ ...settings, workerConcurrency: 0 }, (_, index) =>
            Effect.gen(function*() {
              yield* check(yield* compareToExhaustive(index, random, word, sources))
              assert.isBelow(yield* mostSegments(index.sql), 2)
            }))
        }).pipe(Effect.scoped), 600_000)
    }
  }

  for (const engine of engines) {
    it.live(`a query of hundreds of distinct words is scored exactly (${engine})`, () =>
      Effect.gen(function*() {
        const settings = yield* freshSettings(engine, { embedModel: "none", extractor: "off" })
        yield* onServer(settings, (url, { lexical, pruning, sql }) =>
          Effect.gen(function*() {
            const token = yield* login(url, "Long query")
            const sourceId = yield* createSource(url, token)
            // 300 words that stem to themselves, each in a few of the documents, so every one is a query term.
            const words = Array.from({ length: 300 }, (_, i) => `zq${i.toString(36)}x`)
            const ids: Array<string> = []
            for (let d = 0; d < 12; d++) {
              const text = words.filter((_, i) => (i + d) % 4 === 0 || i % 7 === d % 7).join(" ")
              const reply = yield* ingestText(url, token, sourceId, `long ${d}`, text)
              assert.strictEqual(reply.status, 202, reply.text)
              ids.push(reply.body.id)
            }
            for (const id of ids) yield* waitForDocument(url, token, sourceId, id)
            // The whole query: more than 4,000 characters would be refused by the API; this is under it.
            const query = words.join(" ")
            assert.isBelow(query.length, 4000)
            const reference = yield* exhaustiveBm25(sql, query, [sourceId], 10, parameters)
            assert.strictEqual(reference.length, 10)
            assert.deepStrictEqual(yield* lexical.search(query, [sourceId], 10, parameters), reference)
            // With weight tables for its terms (more than an accumulator keeps), twice: the kept ones are reused.
            for (let time = 0; time < 2; time++) {
              assert.deepStrictEqual(yield* pruning.search(query, [sourceId], 10, parameters), reference)
            }
          }))
      }).pipe(Effect.scoped), 600_000)
  }
})

for (const engine of engines) {
  layer(freshServer(engine), { excludeTestServices: true, timeout: 120_000 })(`packed postings (${engine})`, (it) => {
    it.effect("SQL and the service pack alike, and unpacking gives the postings back, at every varint width", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Chunk-number gaps and lengths across the widths of a varint (1 to 5 bytes), and the extreme frequencies.
        const postings: Array<Posting> = [
          { no: 1, tf: 1, len: 1 },
          { no: 128, tf: 255, len: 127 },
          { no: 129, tf: 2, len: 128 },
          { no: 16_513, tf: 3, len: 16_383 },
          { no: 16_514, tf: 4, len: 16_384 },
          { no: 2_113_666, tf: 5, len: 2_097_152 },
          { no: 270_549_122, tf: 6, len: 268_435_456 },
          { no: 2_147_483_647, tf: 7, len: 2_147_483_647 }
        ]
        const [row] = yield* sql<{ packed: string }>`
          SELECT encode(${packedAggregate(sql)}, 'base64') AS packed FROM (
            SELECT no, tf, len, no - lag(no, 1, 0) OVER (ORDER BY no) AS gap
            FROM unnest(${postings.map((p) => p.no)}::int[], ${postings.map((p) => p.tf)}::int[],
              ${postings.map((p) => p.len)}::int[]) AS u (no, tf, len)
          ) p`.pipe(Effect.orDie)
        assert.strictEqual(row!.packed, pack(postings).toString("base64"))
        const unpacked: Array<Posting> = []
        forEachPosting(Buffer.from(row!.packed, "base64"), (no, tf, len) => unpacked.push({ no, tf, len }))
        assert.deepStrictEqual(unpacked, postings)
      }))
  })
}

describe("scoring packed postings", () => {
  it("adds each posting's weight once per segment, with a table or without, past the table and the arrays", () => {
    // A weight from every field, so that a posting read wrong or weighed from another's slot gives another sum.
    const weigh = (tf: number, len: number) => tf * 1_000_003 + len
    const random = mulberry32(17)
    const segment = (count: number): Array<Posting> => {
      const numbers = new Set<number>()
      while (numbers.size < count) numbers.add(1 + Math.floor(random() * 3000))
      return [...numbers].sort((a, b) => a - b).map((no, i) => ({
        no,
        // Frequencies and lengths inside the table and past it (tf 16+, len 256+ in varints of up to three bytes).
        tf: i % 7 === 0 ? 16 + Math.floor(random() * 240) : 1 + Math.floor(random() * 15),
        len: i % 5 === 0 ? 256 + Math.floor(random() * 100_000) : Math.floor(random() * 256)
      }))
    }
    // The last segment's number lies past the accumulator's first arrays (1,024 numbers), a three-byte gap away.
    const segments = [segment(40), segment(30), [{ no: 200_000, tf: 3, len: 255 }]]
    const expected = new Map<number, number>()
    for (const postings of segments) {
      for (const { len, no, tf } of postings) expected.set(no, (expected.get(no) ?? 0) + weigh(tf, len))
    }
    for (const tabled of [true, false]) {
      const accumulator = new Accumulator()
      // An earlier query's scores under the same numbers, which must not count for this one.
      accumulator.start()
      accumulator.addSegment(pack(segment(1000)), { table: new Float64Array(0), weigh })
      accumulator.start()
      const table = tabled ? new Float64Array(weightSlots).fill(Number.NaN) : new Float64Array(0)
      let count = 0
      for (const postings of segments) count += accumulator.addSegment(pack(postings), { table, weigh })
      assert.strictEqual(count, 71)
      const { nos, units } = accumulator.scored()
      assert.deepStrictEqual(new Set(nos), new Set(expected.keys()))
      assert.strictEqual(nos.length, expected.size)
      for (const no of nos) assert.strictEqual(units[no], expected.get(no), `chunk ${no}, table ${tabled}`)
    }
  })
})

describe("segment cache", () => {
  it("keeps segments within its bound, giving up the least recently used, and none larger than the bound", () => {
    const cache = new SegmentCache(10)
    const bytes = (length: number, fill: number) => new Uint8Array(length).fill(fill)
    cache.set("1", bytes(4, 1))
    cache.set("2", bytes(4, 2))
    assert.deepStrictEqual(cache.get("1"), bytes(4, 1))
    // "2" is now the least recently used: the third segment takes its place.
    cache.set("3", bytes(4, 3))
    assert.isUndefined(cache.get("2"))
    assert.deepStrictEqual(cache.get("1"), bytes(4, 1))
    assert.deepStrictEqual(cache.get("3"), bytes(4, 3))
    assert.strictEqual(cache.size, 8)
    cache.set("4", bytes(11, 4))
    assert.isUndefined(cache.get("4"))
    assert.strictEqual(cache.size, 8)
    cache.set("5", bytes(10, 5))
    assert.isUndefined(cache.get("1"))
    assert.isUndefined(cache.get("3"))
    assert.strictEqual(cache.size, 10)
  })
})

describe("merge groups", () => {
  it("keeps the classes in order, each group within the bound unless one class alone exceeds it", () => {
    const classes = [5, 3, 9, 1, 1, 12, 4, 4].map((postings, i) => ({ term: `t${i}`, postings }))
    const groups = mergeGroups(classes, 8)
    assert.deepStrictEqual(groups.map((group) => group.map((row) => row.postings)), [[5, 3], [9], [1, 1], [12], [4, 4]])
    assert.deepStrictEqual(groups.flat(), classes)
    assert.deepStrictEqual(mergeGroups([], 8), [])
  })
})
