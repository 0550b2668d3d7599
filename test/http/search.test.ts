import { assert, layer } from "@effect/vitest"
import { AutoModelForSequenceClassification, AutoTokenizer } from "@huggingface/transformers"
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { buildRerankerFixture } from "../../scripts/lib/reranker-fixture.ts"
import { fixtureModelDir } from "../support/datasets.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request, waitUntilReady } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"

const corpus = {
  ducks: "Mallards are dabbling ducks that feed at the water surface in ponds.",
  volcano: "Basaltic lava flows from shield volcanoes on the islands of Hawaii.",
  finance: "The central bank raised interest rates again to curb inflation.",
  bread: "Knead the dough and let it rise before baking the bread."
}

/** A user with one source holding the corpus, every document ready. */
const seeded = (name: string) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    yield* waitUntilReady(url)
    const token = yield* login(url, name)
    const sourceId = yield* createSource(url, token)
    const ids: Record<string, string> = {}
    for (const [title, text] of Object.entries(corpus)) {
      const accepted = yield* ingestText(url, token, sourceId, title, text)
      yield* waitForDocument(url, token, sourceId, accepted.body.id)
      ids[title] = accepted.body.id
    }
    return { url, token, sourceId, ids }
  })

const search = (url: string, token: string, json: unknown, path = "/api/v1/search") =>
  request(url, path, { token, json })

/**
 * Three near-copies of a passage about herons and two other texts naming a heron, in a new source: each strategy's
 * top 2 for "heron" are one copy, listing the other two as its duplicates, and one of the other texts.
 */
const collapsesAndFills = (url: string, token: string, strategies: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sourceId = yield* createSource(url, token, "herons")
    const passage = "The grey heron stands still in the shallow water of the marsh, waits for a fish to pass, " +
      "and strikes with its long neck; herons nest in colonies high in the trees near lakes and rivers"
    const texts = [
      `${passage}, heron heron, first copy.`,
      `${passage}, heron heron, second copy.`,
      `${passage}, heron heron, third copy.`,
      "A heron flew over the car park this morning.",
      "Bird watchers counted one heron and many gulls at the harbour."
    ]
    const ids: Array<string> = []
    for (const [i, text] of texts.entries()) {
      const accepted = yield* ingestText(url, token, sourceId, `heron ${i}`, text)
      yield* waitForDocument(url, token, sourceId, accepted.body.id)
      ids.push(accepted.body.id)
    }
    yield* collapsed(url, token, sourceId, ids, strategies)
    return { sourceId, ids }
  })

/** The three copies are one result (the first) with two duplicates, the second result another document. */
const collapsed = (
  url: string,
  token: string,
  sourceId: string,
  ids: ReadonlyArray<string>,
  strategies: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    for (const strategy of strategies) {
      const found = yield* search(url, token, { query: "heron", strategy, top_k: 2, source_ids: [sourceId] })
      assert.strictEqual(found.status, 200, found.text)
      const results = found.body.results as ReadonlyArray<{ document_id: string; duplicates: ReadonlyArray<string> }>
      assert.strictEqual(results.length, 2, `${strategy}: ${found.text}`)
      assert.include(ids.slice(0, 3), results[0]!.document_id, strategy)
      assert.strictEqual(results[0]!.duplicates.length, 2, strategy)
      assert.include(ids.slice(3), results[1]!.document_id, strategy)
    }
  })

for (const engine of engines) {
  layer(freshServer(engine))(`search (${engine})`, (it) => {
    it.effect("each strategy finds the right document on a small known corpus", () =>
      Effect.gen(function*() {
        const { url, token, sourceId, ids } = yield* seeded("Searcher")
        const lexical = yield* search(url, token, { query: "interest rates and inflation", strategy: "lexical" })
        assert.strictEqual(lexical.status, 200, lexical.text)
        assert.strictEqual(lexical.body.results[0].document_id, ids.finance)
        assert.deepStrictEqual(lexical.body.lists, ["lexical"])
        assert.isNull(lexical.body.results[0].explanation)

        const vector = yield* search(url, token, { query: corpus.bread, strategy: "vector", top_k: 2 })
        assert.strictEqual(vector.status, 200)
        assert.strictEqual(vector.body.results.length, 2)
        assert.strictEqual(vector.body.results[0].document_id, ids.bread)
        assert.closeTo(vector.body.results[0].score, 1, 1e-4)

        const multi = yield* search(url, token, { query: "dabbling ducks in ponds" })
        assert.strictEqual(multi.body.strategy, "multi")
        assert.deepStrictEqual(multi.body.lists, ["vector", "lexical"])
        assert.deepStrictEqual(multi.body.notices, [])
        const top = multi.body.results[0]
        assert.strictEqual(top.document_id, ids.ducks)
        assert.strictEqual(top.document_title, "ducks")
        assert.strictEqual(top.source_id, sourceId)
        assert.strictEqual(top.text, corpus.ducks)
        assert.deepStrictEqual(top.explanation.lists.map((l: { list: string }) => l.list).sort(), ["lexical", "vector"])
        const expected = top.explanation.lists.reduce((sum: number, l: { rank: number }) => sum + 1 / (60 + l.rank), 0)
        assert.closeTo(top.explanation.fused_score, expected, 1e-9)
        assert.strictEqual(top.score, top.explanation.fused_score)
        assert.deepStrictEqual(multi.body.searched_source_ids, [sourceId])
        assert.isAtLeast(multi.body.took_ms, 0)
        assert.deepStrictEqual([top.char_start, top.char_end], [0, corpus.ducks.length])
      }))

    it.effect("a time no database holds (\"10000 years ago\") is searched without it, not a 500", () =>
      Effect.gen(function*() {
        const { url, token, ids } = yield* seeded("Ancient")
        for (const query of ["What did the ducks do 10000 years ago?", "ducks in 12000 years"]) {
          const found = yield* search(url, token, { query })
          assert.strictEqual(found.status, 200, found.text)
          assert.strictEqual(found.body.results[0].document_id, ids.ducks, query)
        }
      }))

    it.effect("rarer words weigh more (IDF) and stemming matches word forms", () =>
      Effect.gen(function*() {
        const { url, token, ids } = yield* seeded("Stemmer")
        const stemmed = yield* search(url, token, { query: "volcano", strategy: "lexical" })
        assert.strictEqual(stemmed.body.results[0].document_id, ids.volcano)
        const rare = yield* search(url, token, { query: "the basaltic", strategy: "lexical" })
        assert.strictEqual(rare.body.results[0].document_id, ids.volcano)
        const nothing = yield* search(url, token, { query: "quantum chromodynamics", strategy: "lexical" })
        assert.deepStrictEqual(nothing.body.results, [])
      }))

    it.effect("source-scoped search and source_ids stay within those sources", () =>
      Effect.gen(function*() {
        const { url, token, sourceId } = yield* seeded("Scoper")
        const other = yield* createSource(url, token, "other")
        const accepted = yield* ingestText(url, token, other, "bank", "The river bank flooded after heavy rain.")
        yield* waitForDocument(url, token, other, accepted.body.id)
        const scoped = yield* search(url, token, { query: "bank" }, `/api/v1/sources/${other}/search`)
        assert.isTrue(scoped.body.results.every((r: { source_id: string }) => r.source_id === other))
        assert.deepStrictEqual(scoped.body.searched_source_ids, [other])
        const both = yield* search(url, token, { query: "bank", strategy: "lexical", source_ids: [sourceId, other] })
        assert.deepStrictEqual(new Set(both.body.results.map((r: { source_id: string }) => r.source_id)), new Set([sourceId, other]))
        const one = yield* search(url, token, { query: "bank", strategy: "lexical", source_ids: [sourceId] })
        assert.isTrue(one.body.results.every((r: { source_id: string }) => r.source_id === sourceId))
      }))

    it.effect("near-duplicates collapse into one result and top_k is filled from deeper down", () =>
      Effect.gen(function*() {
        const { sql, url } = yield* TestServer
        yield* waitUntilReady(url)
        const token = yield* login(url, "Collapser")
        const { ids, sourceId } = yield* collapsesAndFills(url, token, ["lexical", "multi"])
        // Each chunk is written with its near-duplicate key; a chunk written before keys were has none, and is read.
        const [keys] = yield* sql<{ missing: number; chunks: number }>`
          SELECT count(*) FILTER (WHERE near_key IS NULL)::int AS missing, count(*)::int AS chunks
          FROM chunks WHERE source_id = ${sourceId}`
        assert.deepStrictEqual(keys, { missing: 0, chunks: 5 })
        yield* sql`UPDATE chunks SET near_key = NULL WHERE source_id = ${sourceId} AND text LIKE '%second copy%'`
        yield* collapsed(url, token, sourceId, ids, ["lexical", "multi"])
      }))

    it.effect("every SearchRequest bound and unknown field is a 422 naming it", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Bounds")
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{}, "body.query"],
          [{ query: "" }, "body.query"],
          [{ query: "   " }, "body.query"],
          [{ query: "x".repeat(4001) }, "body.query"],
          [{ query: "x", top_k: 0 }, "body.top_k"],
          [{ query: "x", top_k: 51 }, "body.top_k"],
          [{ query: "x", top_k: 2.5 }, "body.top_k"],
          [{ query: "x", strategy: "fuzzy" }, "body.strategy"],
          [{ query: "x", source_ids: Array.from({ length: 257 }, (_, i) => `s${i}`) }, "body.source_ids"],
          [{ query: "x", save_exploration: "yes" }, "body.save_exploration"],
          [{ query: "x", rerank: "yes" }, "body.rerank"],
          [{ query: "x", strategy: "lexical", rerank: true }, "body.rerank"],
          [{ query: "x", colour: "red" }, "body.colour"]
        ]
        for (const [json, path] of cases) {
          const reply = yield* search(url, token, json)
          assert.strictEqual(reply.status, 422, JSON.stringify(json).slice(0, 80))
          assert.include(reply.body.error.issues.map((i: { path: string }) => i.path), path)
        }
        const scoped = yield* search(url, token, { query: "x", source_ids: [] }, "/api/v1/sources/any/search")
        assert.strictEqual(scoped.status, 422, "the source-scoped endpoint takes no source_ids")
        const ok = yield* search(url, token, { query: "x".repeat(4000), top_k: 50 })
        assert.strictEqual(ok.status, 200)
        assert.isFalse(ok.body.reranked)
        const noReranker = yield* search(url, token, { query: "x", rerank: true })
        assert.strictEqual(noReranker.status, 503)
        assert.strictEqual(noReranker.body.error.code, "rerank_unavailable")
        assert.match(noReranker.body.error.message, /ENGRAM_RERANK_MODEL_DIR/)
      }))

    it.effect("another user's source is 404 even by id, and never appears in results", () =>
      Effect.gen(function*() {
        const { url, sourceId } = yield* seeded("Private Pat")
        const intruder = yield* login(url, "Nosy Nel")
        const byId = yield* search(url, intruder, { query: "ducks", source_ids: [sourceId] })
        assert.strictEqual(byId.status, 404)
        assert.strictEqual(byId.body.error.code, "source_not_found")
        const scoped = yield* search(url, intruder, { query: "ducks" }, `/api/v1/sources/${sourceId}/search`)
        assert.strictEqual(scoped.status, 404)
        const everything = yield* search(url, intruder, { query: "ducks" })
        assert.strictEqual(everything.status, 200)
        assert.deepStrictEqual(everything.body.results, [])
        assert.deepStrictEqual(everything.body.searched_source_ids, [])
        assert.include(everything.body.notices[0], "no sources")
      }))

    it.effect("deleted documents never appear, and exploration records are saved on request", () =>
      Effect.gen(function*() {
        const { url, token, sourceId, ids } = yield* seeded("Forgetter")
        yield* request(url, `/api/v1/sources/${sourceId}/documents/${ids.ducks}`, { method: "DELETE", token })
        for (const strategy of ["lexical", "vector", "multi"]) {
          const reply = yield* search(url, token, { query: corpus.ducks, strategy })
          assert.notInclude(reply.body.results.map((r: { document_id: string }) => r.document_id), ids.ducks, strategy)
        }
        const saved = yield* search(url, token, { query: "bread", save_exploration: true })
        assert.isString(saved.body.exploration_id)
        const { sql } = yield* TestServer
        const rows = yield* sql<{ query: string }>`SELECT query FROM explorations WHERE id = ${saved.body.exploration_id}`
        assert.strictEqual(rows[0]!.query, "bread")
        const unsaved = yield* search(url, token, { query: "bread" })
        assert.isNull(unsaved.body.exploration_id)
      }))

    it.effect("BM25 statistics always equal a recount of the searchable chunks", () =>
      Effect.gen(function*() {
        const { url, token, sourceId, ids } = yield* seeded("Counter")
        yield* request(url, `/api/v1/sources/${sourceId}/documents/${ids.volcano}`, { method: "DELETE", token })
        const again = yield* request(url, `/api/v1/sources/${sourceId}/documents/${ids.bread}/reprocess`, {
          method: "POST",
          token
        })
        yield* waitForDocument(url, token, sourceId, ids.bread, (d) => d.status === "ready" && d.job_id === again.body.job_id)
        const { sql } = yield* TestServer
        const drift = yield* sql<{ n: number }>`
          WITH truth AS (
            SELECT c.source_id, u.lexeme AS term, count(*)::int AS df
            FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version AND d.status = 'ready'
            CROSS JOIN LATERAL unnest(to_tsvector('english', c.text)) u
            WHERE c.source_id = ${sourceId}
            GROUP BY c.source_id, u.lexeme
          )
          SELECT count(*)::int AS n FROM truth FULL JOIN (
            SELECT * FROM lexical_terms WHERE source_id = ${sourceId} AND df > 0
          ) kept USING (source_id, term)
          WHERE truth.df IS DISTINCT FROM kept.df`
        assert.strictEqual(drift[0]!.n, 0, "document frequencies match")
        const [stats] = yield* sql<{ chunk_count: number; total_length: number }>`
          SELECT chunk_count::int, total_length::int FROM lexical_stats WHERE source_id = ${sourceId}`
        const [truth] = yield* sql<{ chunk_count: number; total_length: number }>`
          SELECT count(*)::int AS chunk_count, coalesce(sum(c.lexeme_count), 0)::int AS total_length
          FROM chunks c JOIN documents d ON d.id = c.document_id AND c.version = d.active_version AND d.status = 'ready'
          WHERE c.source_id = ${sourceId}`
        assert.deepStrictEqual(stats, truth)
        assert.strictEqual(truth!.chunk_count, 3)
      }))
  })

  layer(freshServer(engine, { embedModelDir: Option.some("/nonexistent/model") }))(
    `search without a model (${engine})`,
    (it) => {
      it.effect("vector is 503 with the reason; multi answers from BM25 and says so", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const token = yield* login(url, "NoModel")
          const sourceId = yield* createSource(url, token)
          const accepted = yield* ingestText(url, token, sourceId, "ducks", corpus.ducks)
          yield* waitForDocument(url, token, sourceId, accepted.body.id)
          let vector = yield* search(url, token, { query: "ducks", strategy: "vector" })
          for (let i = 0; i < 100 && vector.status === 503 && /loading/.test(vector.body.error.message); i++) {
            yield* Effect.sleep("100 millis")
            vector = yield* search(url, token, { query: "ducks", strategy: "vector" })
          }
          assert.strictEqual(vector.status, 503)
          assert.strictEqual(vector.body.error.code, "dense_unavailable")
          assert.match(vector.body.error.message, /no embedding model/)
          const multi = yield* search(url, token, { query: "ducks" })
          assert.strictEqual(multi.status, 200)
          assert.deepStrictEqual(multi.body.lists, ["lexical"])
          assert.match(multi.body.notices[0], /dense retrieval is unavailable/)
          assert.strictEqual(multi.body.results[0].document_id, accepted.body.id)
          const capabilities = yield* request(url, "/api/v1/system/capabilities")
          assert.deepStrictEqual(capabilities.body.strategies, ["lexical", "multi"])
          // BM25 alone is the result: asked again deeper when near-duplicates thin it.
          yield* collapsesAndFills(url, token, ["multi"])
        }))

      it.effect("named sources must be the caller's, also where BM25's first statement checks them", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const owner = yield* login(url, "Owner Olga")
          const mine = yield* createSource(url, owner)
          const accepted = yield* ingestText(url, owner, mine, "ducks", corpus.ducks)
          yield* waitForDocument(url, owner, mine, accepted.body.id)
          const intruder = yield* login(url, "Intruder Ivo")
          const theirs = yield* createSource(url, intruder)
          // A word of the text, no word of it, and a question (the graph's: the sources are asked first).
          for (const query of ["ducks", "zzqxv", "Where are the ducks?"]) {
            for (const strategy of ["lexical", "multi"]) {
              for (const sourceIds of [[mine], [theirs, mine], [mine, theirs]]) {
                const refused = yield* search(url, intruder, { query, strategy, source_ids: sourceIds })
                assert.strictEqual(refused.status, 404, `${strategy} "${query}" ${sourceIds.length}`)
                assert.strictEqual(refused.body.error.code, "source_not_found")
                assert.include(refused.body.error.message, mine)
              }
              const own = yield* search(url, owner, { query, strategy, source_ids: [mine, mine] })
              assert.strictEqual(own.status, 200, own.text)
              assert.deepStrictEqual(own.body.searched_source_ids, [mine])
              const found = own.body.results.map((result: { document_id: string }) => result.document_id)
              assert.deepStrictEqual(found, query === "zzqxv" ? [] : [accepted.body.id])
              const both = yield* search(url, intruder, { query, strategy, source_ids: [theirs] })
              assert.strictEqual(both.status, 200, both.text)
              assert.deepStrictEqual(both.body.results, [])
            }
          }
        }))
    }
  )
}

/** A cross-encoder with random weights: its scores mean nothing, but they are real model outputs to check against. */
const rerankerDir = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-reranker-")), "tiny-reranker")
buildRerankerFixture(fixtureModelDir, rerankerDir)

/** The fixture's relevance for each passage, computed outside Engram. */
const crossEncoderScores = (query: string, passages: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const tokenizer = await AutoTokenizer.from_pretrained(rerankerDir, { local_files_only: true })
    const model = await AutoModelForSequenceClassification.from_pretrained(rerankerDir, {
      dtype: "fp32",
      local_files_only: true
    })
    const { logits } = await model(
      tokenizer(passages.map(() => query), { text_pair: [...passages], padding: true, truncation: true })
    )
    return Array.from(logits.data as Float32Array).map((x) => 1 / (1 + Math.exp(-x)))
  })

layer(freshServer("pglite", { rerankModelDir: Option.some(rerankerDir), rerankCandidates: 3 }))(
  "search with a reranker",
  (it) => {
    it.effect("multi reorders the top fused candidates by the cross-encoder, and says so", () =>
      Effect.gen(function*() {
        const { url, token } = yield* seeded("Reranked")
        let capabilities = yield* request(url, "/api/v1/system/capabilities")
        for (let i = 0; i < 100 && !capabilities.body.rerank.available; i++) {
          yield* Effect.sleep("100 millis")
          capabilities = yield* request(url, "/api/v1/system/capabilities")
        }
        assert.deepStrictEqual(capabilities.body.rerank, { available: true, model: "tiny-reranker", reason: null })

        const query = "ducks in the water"
        const fused = yield* search(url, token, { query, top_k: 4, rerank: false })
        assert.isFalse(fused.body.reranked)
        const reranked = yield* search(url, token, { query, top_k: 4 })
        assert.strictEqual(reranked.status, 200, reranked.text)
        assert.isTrue(reranked.body.reranked)
        const results = reranked.body.results
        assert.strictEqual(results.length, 4)

        // The first three fused candidates are reranked; the fourth keeps its fused place after them.
        const head = fused.body.results.slice(0, 3)
        const expected = yield* crossEncoderScores(query, head.map((r: { text: string }) => r.text))
        const order = head.map((r: { chunk_id: string }, i: number) => ({ id: r.chunk_id, score: expected[i]!, rank: i + 1 }))
          .sort((a: { score: number; rank: number }, b: { score: number; rank: number }) => b.score - a.score || a.rank - b.rank)
        assert.deepStrictEqual(results.slice(0, 3).map((r: { chunk_id: string }) => r.chunk_id), order.map((o: { id: string }) => o.id))
        for (const [i, result] of results.slice(0, 3).entries()) {
          assert.closeTo(result.score, order[i]!.score, 1e-5)
          assert.strictEqual(result.explanation.rerank.score, result.score)
          assert.strictEqual(result.explanation.rerank.fused_rank, order[i]!.rank)
        }
        assert.strictEqual(results[3].chunk_id, fused.body.results[3].chunk_id)
        assert.isNull(results[3].explanation.rerank)
        assert.strictEqual(results[3].score, fused.body.results[3].score)

        const lexical = yield* search(url, token, { query, strategy: "lexical" })
        assert.isFalse(lexical.body.reranked, "other strategies are not reranked by default")
      }))
  }
)
