import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { mulberry32 } from "../../scripts/lib/onnx.ts"
import type { EngramSettings } from "../../src/config.ts"
import { LexicalIndex, type LexicalScan } from "../../src/stores/LexicalIndex.ts"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshSettings, serverLayer, TestServer } from "../support/server.ts"

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
 * common words are in real text, which is what gives pruning something to skip.
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

/** Runs `use` against a server started with `settings`, with its BM25 index. */
const onServer = <A>(
  settings: EngramSettings,
  use: (url: string, lexical: LexicalIndex["Service"]) => Effect.Effect<A>
) =>
  Effect.scoped(Effect.flatMap(Layer.build(serverLayer(settings)), (context) =>
    use(Context.get(context, TestServer).url, Context.get(context, LexicalIndex))))

/**
 * For generated queries, every source selection and several k: the pruned top k equals exhaustive BM25 (same chunks,
 * same order, same scores). Returns the postings both read in all.
 */
const comparePrunedToExhaustive = (
  lexical: LexicalIndex["Service"],
  random: ReturnType<typeof generator>,
  word: () => string,
  sources: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    const selections = [[sources[0]!], [sources[1]!, sources[2]!], sources]
    let read = 0
    let total = 0
    let pruned = 0
    for (let q = 0; q < 20; q++) {
      const query = queryText(random, word)
      for (const sourceIds of selections) {
        for (const limit of [1, 3, 10, 40]) {
          const reference: LexicalScan = yield* lexical.scan(query, sourceIds, limit, parameters, { exhaustive: true })
          // The pruned path everywhere (`always`), and where search itself would choose it.
          for (const options of [{ seedPostings: 1, always: true }, { seedPostings: 40, always: true }, { seedPostings: 40 }]) {
            const scan = yield* lexical.scan(query, sourceIds, limit, parameters, options)
            const context = `query "${query}", ${sourceIds.length} source(s), k ${limit}, ${JSON.stringify(options)}`
            assert.deepStrictEqual(scan.hits, reference.hits, context)
            assert.strictEqual(scan.postingsTotal, reference.postingsTotal)
            read += scan.postingsRead
            total += scan.postingsTotal
            if (scan.postingsRead < scan.postingsTotal) pruned++
          }
        }
      }
    }
    return { read, total, pruned }
  })

/** Pruning must have skipped postings on some queries, or the comparison proved nothing. */
const check = (round: { readonly read: number; readonly total: number; readonly pruned: number }) =>
  Effect.sync(() => assert.isAbove(round.pruned, 0))

const removeDocument = (url: string, token: string, document: { readonly sourceId: string; readonly id: string }) =>
  Effect.map(
    request(url, `/api/v1/sources/${document.sourceId}/documents/${document.id}`, { method: "DELETE", token }),
    (reply) => assert.strictEqual(reply.status, 200, reply.text)
  )

const act = (url: string, token: string, document: { readonly sourceId: string; readonly id: string }, action: string) =>
  request(url, `/api/v1/sources/${document.sourceId}/documents/${document.id}/${action}`, { method: "POST", token })

describe("exact pruned BM25", () => {
  for (const engine of engines) {
    for (const [seed, skew] of [[7, 1.1], [11, 0.6]] as const) {
      it.live(`the pruned top k equals exhaustive scoring through deletions, reprocessing and documents out of search (${engine}, corpus ${seed})`, () =>
        Effect.gen(function*() {
          const settings = yield* freshSettings(engine, {
            embedModel: "none",
            extractor: "off",
            chunkTokens: 24,
            chunkOverlapTokens: 0
          })
          const random = generator(seed)
          const word = zipf(random, skew)
          const { token, sources, documents } = yield* onServer(settings, (url, lexical) =>
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
              yield* check(yield* comparePrunedToExhaustive(lexical, random, word, sources))

              // Deleted documents leave their statistics and postings; reprocessed ones get new chunks and postings;
              // new documents widen the bounds.
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
              yield* check(yield* comparePrunedToExhaustive(lexical, random, word, sources))
              return { token, sources, documents }
            }))

          // With no worker running, documents queued for reprocessing or paused stay out of search while their
          // postings stay in the index: scanning meets postings of chunks search cannot return.
          yield* onServer({ ...settings, workerConcurrency: 0 }, (url, lexical) =>
            Effect.gen(function*() {
              for (const document of documents.slice(2, 8)) {
                const reply = yield* act(url, token, document, "reprocess")
                assert.strictEqual(reply.status, 200, reply.text)
              }
              const pause = yield* act(url, token, documents[2]!, "pause")
              assert.strictEqual(pause.status, 200, pause.text)
              yield* check(yield* comparePrunedToExhaustive(lexical, random, word, sources))
            }))
        }).pipe(Effect.scoped), 600_000)
    }
  }

  for (const engine of engines) {
    it.live(`a query of hundreds of distinct words is pruned exactly, in a statement of bounded size (${engine})`, () =>
      Effect.gen(function*() {
        const settings = yield* freshSettings(engine, { embedModel: "none", extractor: "off" })
        yield* onServer(settings, (url, lexical) =>
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
            const reference = yield* lexical.scan(query, [sourceId], 10, parameters, { exhaustive: true })
            assert.strictEqual(reference.hits.length, 10)
            for (const seedPostings of [1, 40]) {
              const scan = yield* lexical.scan(query, [sourceId], 10, parameters, { seedPostings, always: true })
              assert.deepStrictEqual(scan.hits, reference.hits)
            }
          }))
      }).pipe(Effect.scoped), 600_000)
  }
})
