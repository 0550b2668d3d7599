import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, upload, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

const news = "On March 3, 2021, Acme Corporation acquired Globex in Berlin. " +
  "Acme Corporation is headquartered in Toledo, Ohio."

/** Extraction runs in the pipeline: what ingestion finds, what search does with it, and what deletion undoes. */
for (const engine of engines) {
  layer(freshServer(engine))(`events and entities from ingestion (${engine})`, (it) => {
    it.effect("ingested text and messages become entities and events; multi search uses them; delete undoes them", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Chronicler")
        const sourceId = yield* createSource(url, token)
        const article = yield* ingestText(url, token, sourceId, "deal", news)
        const chat = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, {
          token,
          json: {
            title: "standup",
            messages: [
              { speaker: "Alice", content: "I'll send the Globex report next Tuesday.", timestamp: "2024-05-08T10:00:00Z" }
            ]
          }
        })
        assert.strictEqual(chat.status, 202, chat.text)
        yield* waitForDocument(url, token, sourceId, article.body.id)
        yield* waitForDocument(url, token, sourceId, chat.body.id)

        const source = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        const eventCount = source.body.event_count as number
        assert.isAtLeast(eventCount, 3)

        const entities = yield* request(url, `/api/v1/sources/${sourceId}/entities?limit=100`, { token })
        assert.strictEqual(entities.status, 200, entities.text)
        const byName = new Map<string, any>(entities.body.items.map((e: { name: string }) => [e.name, e]))
        assert.strictEqual(byName.get("Acme Corporation")?.kind, "organization")
        assert.strictEqual(byName.get("Acme Corporation")?.mention_count, 2)
        assert.strictEqual(byName.get("Berlin")?.kind, "place")
        assert.strictEqual(byName.get("Alice")?.kind, "person", "a message's speaker is an entity")
        assert.isAtLeast(byName.get("Globex")?.mention_count, 2, "Globex is one entity across both documents")

        const acquisitions = yield* request(url, `/api/v1/sources/${sourceId}/events?kind=acquire`, { token })
        const deal = acquisitions.body.items[0]
        assert.strictEqual(deal.time.start, "2021-03-03T00:00:00.000Z")
        assert.strictEqual(deal.time.precision, "day")
        assert.deepStrictEqual(
          deal.participants.map((p: { name: string; role: string }) => `${p.name}:${p.role}`).sort(),
          ["Acme Corporation:actor", "Berlin:place", "Globex:object"]
        )
        const alice = byName.get("Alice")
        const hers = yield* request(url, `/api/v1/sources/${sourceId}/events?entity_id=${alice.id}`, { token })
        assert.strictEqual(hers.body.items[0].time.start, "2024-05-14T00:00:00.000Z", "next Tuesday after 8 May 2024")
        assert.isTrue(hers.body.items[0].time.relative)

        // Two facts about one entity: the graph list brings the headquarters via the acquisition of Globex.
        const search = yield* request(url, "/api/v1/search", {
          token,
          json: { query: "Where is the company that bought Globex based?" }
        })
        assert.include(search.body.lists, "graph")
        const graphed = search.body.results.filter((r: { explanation: { lists: Array<{ list: string }> } }) =>
          r.explanation.lists.some((l) => l.list === "graph")
        )
        assert.isAbove(graphed.length, 0)
        const withoutEntities = yield* request(url, "/api/v1/search", { token, json: { query: "headquarters" } })
        assert.notInclude(withoutEntities.body.lists, "graph", "no entity or time in the query: no graph list")

        // Deleting the chat removes exactly its events; Alice had no other evidence and disappears.
        const removed = yield* request(url, `/api/v1/sources/${sourceId}/documents/${chat.body.id}`, {
          token,
          method: "DELETE"
        })
        assert.strictEqual(removed.status, 200, removed.text)
        const after = yield* request(url, `/api/v1/sources/${sourceId}/entities?limit=100`, { token })
        const names = after.body.items.map((e: { name: string }) => e.name)
        assert.notInclude(names, "Alice")
        const globex = after.body.items.find((e: { name: string }) => e.name === "Globex")
        assert.strictEqual(globex.mention_count, 1)
        const sourceAfter = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.isBelow(sourceAfter.body.event_count, eventCount)

        // Reprocessing is idempotent: the same events again, not twice.
        const before = sourceAfter.body.event_count
        const reprocess = yield* request(url, `/api/v1/sources/${sourceId}/documents/${article.body.id}/reprocess`, {
          token,
          method: "POST"
        })
        assert.strictEqual(reprocess.status, 200, reprocess.text)
        yield* waitForDocument(url, token, sourceId, article.body.id, (d) =>
          d.status === "ready" && d.job_id === reprocess.body.job_id)
        const again = yield* request(url, `/api/v1/sources/${sourceId}`, { token })
        assert.strictEqual(again.body.event_count, before)
      }))

    it.effect("an ordinary word the extractor took for a name does not start a graph list; a real name does", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Metallurgist")
        const sourceId = yield* createSource(url, token)
        const texts = [
          "BACKGROUND Properties of steel were studied. Initech announced a new alloy in Austin.",
          "The background of this study: properties of steel change when it is heated.",
          "Engineers measured the properties of copper wire against a dark background.",
          "Thermal properties decide which metal a kettle uses; the background noise was low.",
          "Their report lists the properties of aluminium sheets and the background to the tests."
        ]
        for (const [i, text] of texts.entries()) {
          const document = yield* ingestText(url, token, sourceId, `note-${i}`, text)
          yield* waitForDocument(url, token, sourceId, document.body.id)
        }
        const entities = yield* request(url, `/api/v1/sources/${sourceId}/entities?limit=100`, { token })
        const names = entities.body.items.map((e: { name: string }) => e.name)
        assert.include(names, "BACKGROUND Properties", "the rules take a heading and a capitalised word for a name")
        assert.include(names, "Initech")
        const ordinary = yield* request(url, "/api/v1/search", {
          token,
          json: { query: "What are the background properties of steel?" }
        })
        assert.notInclude(ordinary.body.lists, "graph", "most chunks with the word do not mention the entity")
        const named = yield* request(url, "/api/v1/search", { token, json: { query: "What did Initech announce?" } })
        assert.include(named.body.lists, "graph")
        // A statement or keyword query without a time is left to the text lists, even when it names an entity.
        for (const query of ["Initech announced a new alloy", "Initech alloy"]) {
          const statement = yield* request(url, "/api/v1/search", { token, json: { query } })
          assert.strictEqual(statement.status, 200, statement.text)
          assert.notInclude(statement.body.lists, "graph", query)
          assert.isAbove(statement.body.results.length, 0)
        }
      }))

    it.effect("a time relative to an event (before the merger) ranks the events on its side first in the graph list", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Historian")
        const sourceId = yield* createSource(url, token)
        const ids: Record<string, string> = {}
        for (const [title, text] of [
          ["merger", "In 2019, Acme Corporation merged with Initrode."],
          ["ohio", "In 2017, Acme Corporation opened a plant in Ohio."],
          ["texas", "In 2021, Acme Corporation opened a plant in Texas."]
        ] as const) {
          const document = yield* ingestText(url, token, sourceId, title, text)
          yield* waitForDocument(url, token, sourceId, document.body.id)
          ids[title] = document.body.id
        }
        const graphRank = (query: string) =>
          Effect.gen(function*() {
            const reply = yield* request(url, "/api/v1/search", { token, json: { query } })
            assert.include(reply.body.lists, "graph", reply.text)
            const rankOf = (documentId: string) =>
              reply.body.results.find((r: { document_id: string }) => r.document_id === documentId)
                ?.explanation.lists.find((l: { list: string }) => l.list === "graph")?.rank ?? Infinity
            return { ohio: rankOf(ids.ohio!), texas: rankOf(ids.texas!) }
          })
        const before = yield* graphRank("Where did Acme Corporation open a plant before the merger?")
        assert.isBelow(before.ohio, before.texas, "2017 is before the 2019 merger")
        const after = yield* graphRank("Where did Acme Corporation open a plant after the merger?")
        assert.isBelow(after.texas, after.ohio, "2021 is after it")
        // A keyword query has a graph list when its time holds dated events, and none when no event falls in it.
        const keywords = yield* graphRank("Acme Corporation plant 2017")
        assert.isBelow(keywords.ohio, keywords.texas)
        const never = yield* request(url, "/api/v1/search", { token, json: { query: "Acme Corporation plant 1850" } })
        assert.notInclude(never.body.lists, "graph", never.text)
      }))

    it.effect("a text document's own date anchors its relative times; without one they stay undated", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Diarist")
        const sourceId = yield* createSource(url, token)
        const text = "Acme Corporation opened a store in Lisbon last Tuesday."
        const dated = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, {
          token,
          json: { title: "dated", text, date: "2024-05-08T10:00:00Z" }
        })
        assert.strictEqual(dated.status, 202, dated.text)
        assert.strictEqual(dated.body.date, "2024-05-08T10:00:00.000Z")
        const undated = yield* ingestText(url, token, sourceId, "undated", `${text} Really.`)
        assert.isNull(undated.body.date)
        yield* waitForDocument(url, token, sourceId, dated.body.id)
        yield* waitForDocument(url, token, sourceId, undated.body.id)
        const events = yield* request(url, `/api/v1/sources/${sourceId}/events?kind=open&limit=10`, { token })
        const byDocument = new Map<string, any>(events.body.items.map((e: { document_id: string }) => [e.document_id, e]))
        assert.strictEqual(byDocument.get(dated.body.id)?.time?.start, "2024-05-07T00:00:00.000Z", "Tuesday before 8 May")
        assert.isTrue(byDocument.get(dated.body.id)?.time?.relative)
        assert.isNull(byDocument.get(undated.body.id)?.time?.start ?? null)
        const bad = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, {
          token,
          json: { title: "bad", text, date: "last week" }
        })
        assert.strictEqual(bad.status, 422, bad.text)

        // An upload's files take the date sent with them.
        const file = { name: "diary.txt", bytes: new TextEncoder().encode("Acme Corporation opened a store in Porto last Tuesday.") }
        const uploaded = yield* upload(url, token, sourceId, [file], { date: "2024-05-08" })
        assert.strictEqual(uploaded.status, 202, uploaded.text)
        assert.strictEqual(uploaded.body.documents[0].date, "2024-05-08T00:00:00.000Z")
        yield* waitForDocument(url, token, sourceId, uploaded.body.documents[0].id)
        const porto = yield* request(url, `/api/v1/sources/${sourceId}/events?kind=open&limit=10`, { token })
        const fromUpload = porto.body.items.find((e: { document_id: string }) => e.document_id === uploaded.body.documents[0].id)
        assert.strictEqual(fromUpload?.time?.start, "2024-05-07T00:00:00.000Z")
        const before = (yield* request(url, `/api/v1/sources/${sourceId}/documents?limit=100`, { token })).body.items.length
        const badUpload = yield* upload(url, token, sourceId, [{ ...file, name: "other.txt" }], { date: "someday" })
        assert.strictEqual(badUpload.status, 422, badUpload.text)
        assert.strictEqual(badUpload.body.error.issues[0].path, "body.date")
        const after = (yield* request(url, `/api/v1/sources/${sourceId}/documents?limit=100`, { token })).body.items.length
        assert.strictEqual(after, before, "a rejected upload stores nothing")
      }))
  })
}

/** Four facts, one paragraph each: with small chunks, each chunk after the first repeats its predecessor's last one. */
const facts = [
  "Acme Corporation acquired Globex in Berlin on March 3, 2021.",
  "Initech hired Maria Lopez in Madrid on May 4, 2022.",
  "Hooli opened an office in Dublin on June 5, 2023.",
  "Vandelay Industries sued Kramerica in Boston on July 6, 2024."
]

/** Messages of four days; the chunks repeat a message, and each one's "yesterday" counts from its own day. */
const diary = [
  { speaker: "Rosa", content: "I visited the Prado museum yesterday with Tomas.", timestamp: "2024-03-02T18:00:00Z" },
  { speaker: "Tomas", content: "I cooked paella for Rosa yesterday evening.", timestamp: "2024-03-05T18:00:00Z" },
  { speaker: "Rosa", content: "I adopted a kitten named Miso yesterday afternoon.", timestamp: "2024-03-09T18:00:00Z" },
  { speaker: "Tomas", content: "I repaired the Vespa in Valencia yesterday.", timestamp: "2024-03-14T18:00:00Z" }
]

for (const engine of engines) {
  const budget = { chunkTokens: 30, chunkOverlapTokens: 20, extractMaxChars: 400 }
  layer(freshServer(engine, budget))(`overlapping chunks (${engine})`, (it) => {
    it.effect("text a chunk repeats from the one before is extracted once: no twin events, mentions counted once", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Overlapper")
        const sourceId = yield* createSource(url, token)
        const article = yield* ingestText(url, token, sourceId, "facts", facts.join("\n\n"))
        const chat = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, {
          token,
          json: { title: "diary", messages: diary }
        })
        assert.strictEqual(chat.status, 202, chat.text)
        yield* waitForDocument(url, token, sourceId, article.body.id)
        yield* waitForDocument(url, token, sourceId, chat.body.id)

        const list = (path: string) =>
          Effect.map(request(url, `/api/v1/sources/${sourceId}/${path}`, { token }), (reply) => {
            assert.strictEqual(reply.status, 200, reply.text)
            return reply.body.items
          })
        const chunks: Array<{ document_id: string; text: string }> = yield* list("chunks?limit=50")
        const articleChunks = chunks.filter((chunk) => chunk.document_id === article.body.id)
        assert.isTrue(articleChunks.length >= 3 && articleChunks[1]!.text.startsWith(facts[1]!), "the chunks overlap")
        const chatChunks = chunks.filter((chunk) => chunk.document_id === chat.body.id)
        assert.isTrue(
          chatChunks.filter((chunk) => chunk.text.includes("paella") || chunk.text.includes("Miso")).length > 2,
          "a message is repeated in the next chunk"
        )

        const events: Array<{ statement: string; time: { start: string } | null }> = yield* list("events?limit=100")
        const statements = events.map((event) => event.statement)
        assert.deepStrictEqual(statements.filter((s, i) => statements.indexOf(s) !== i), [], "no event twice")
        for (const [word, day] of [
          ["Globex", "2021-03-03"],
          ["Initech", "2022-05-04"],
          ["Hooli", "2023-06-05"],
          ["Kramerica", "2024-07-06"],
          ["Prado", "2024-03-01"],
          ["paella", "2024-03-04"],
          ["Miso", "2024-03-08"],
          ["Vespa", "2024-03-13"]
        ] as const) {
          const about = events.filter((event) => event.statement.includes(word))
          assert.strictEqual(about.length, 1, `one event about ${word}: ${JSON.stringify(statements)}`)
          assert.strictEqual(about[0]!.time?.start.slice(0, 10), day, `${word}'s event is dated by its own sentence`)
        }

        const entities: Array<{ name: string; mention_count: number }> = yield* list("entities?limit=100")
        const mentions = new Map(entities.map((entity) => [entity.name, entity.mention_count]))
        for (const name of ["Initech", "Maria Lopez", "Hooli", "Dublin", "Miso"]) {
          assert.strictEqual(mentions.get(name), 1, `${name} is mentioned once: ${JSON.stringify([...mentions])}`)
        }

        // The extraction budget and the job's account of it count the document's text once, repeats left out.
        const job = yield* request(url, `/api/v1/jobs/${article.body.job_id}`, { token })
        const whole = facts.join("\n\n").length
        assert.deepInclude(job.body.result.extraction, { complete: true, chars_read: whole, chars_total: whole })
        const log = Array.from({ length: 30 }, (_, i) => `Note ${i + 1} says the river and the sky stayed calm.`)
        const long = yield* ingestText(url, token, sourceId, "log", log.join("\n\n"))
        yield* waitForDocument(url, token, sourceId, long.body.id)
        const cut = (yield* request(url, `/api/v1/jobs/${long.body.job_id}`, { token })).body.result.extraction
        assert.deepInclude(cut, { complete: false, reason: "char_limit", chars_total: log.join("\n\n").length })
        assert.isAtMost(cut.chars_read, budget.extractMaxChars)
        assert.isAbove(cut.chars_read, 0)
      }))
  })
}
