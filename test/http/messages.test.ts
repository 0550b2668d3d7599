import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { afterAll } from "vitest"
import { messageText, startChatServer } from "../support/chatServer.ts"
import { login, request } from "../support/http.ts"
import { createSource, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

/** Six days of a team chat in one document with no date of its own: one message has no timestamp. */
const opsChat = [
  { speaker: "Ana Duarte", content: "Booked the flights for the Lisbon offsite.", timestamp: "2026-02-03T09:00:00Z" },
  { speaker: "Ben Okoro", content: "Great. I reviewed the offsite budget yesterday.", timestamp: "2026-02-04T10:00:00Z" },
  { speaker: "Ana Duarte", content: "Thanks Ben, I will send the agenda." },
  { speaker: "Ben Okoro", content: "I deployed the new load balancer this morning.", timestamp: "2026-02-09T08:30:00Z" },
  { speaker: "Ana Duarte", content: "We adopted a dog last year, so I am bringing Pixel.", timestamp: "2026-02-11T17:00:00Z" },
  { speaker: "Ben Okoro", content: "Pixel is welcome!", timestamp: "2026-02-11T17:05:00Z" }
]

const supportChat = [
  {
    speaker: "Caroline",
    content: "I went to a LGBTQ support group yesterday and it was so powerful.",
    timestamp: "2023-05-08T13:56:00Z"
  },
  { speaker: "Melanie", content: "Wow Caroline, that sounds amazing! I painted a lake sunrise last week.", timestamp: "2023-05-08T14:01:00Z" }
]

const ingestMessages = (url: string, token: string, sourceId: string, title: string, messages: ReadonlyArray<object>) =>
  Effect.gen(function*() {
    const accepted = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, { token, json: { title, messages } })
    assert.strictEqual(accepted.status, 202, accepted.text)
    const document = yield* waitForDocument(url, token, sourceId, accepted.body.id)
    assert.strictEqual(document.status, "ready", JSON.stringify(document))
    return accepted.body.id as string
  })

/** A user, a source holding both chats (ready) and an agent over it. */
const seeded = (name: string) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const token = yield* login(url, name)
    const sourceId = yield* createSource(url, token)
    const ops = yield* ingestMessages(url, token, sourceId, "ops chat", opsChat)
    const support = yield* ingestMessages(url, token, sourceId, "catch-up", supportChat)
    const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "Memory", source_ids: [sourceId] } })
    assert.strictEqual(agent.status, 201, agent.text)
    return { url, token, sourceId, ops, support, agentId: agent.body.id as string }
  })

const day = (iso: string | null | undefined) => iso?.slice(0, 10) ?? null

const eventsOf = (url: string, token: string, sourceId: string) =>
  Effect.map(request(url, `/api/v1/sources/${sourceId}/events?limit=100`, { token }), (reply) => {
    assert.strictEqual(reply.status, 200, reply.text)
    return reply.body.items as Array<{
      statement: string
      time: { start: string; end: string | null; precision: string } | null
      participants: Array<{ name: string; role: string }>
      chunk_ids: Array<string>
    }>
  })

for (const engine of engines) {
  layer(freshServer(engine, { extractor: "rules" }))(`chat messages keep their time and speaker (${engine})`, (it) => {
    it.effect("per-message speaker and time through chunk, search and citation", () =>
      Effect.gen(function*() {
        const { url, token, sourceId, ops, agentId } = yield* seeded("Keeper")
        const chunks = yield* request(url, `/api/v1/sources/${sourceId}/chunks?limit=50`, { token })
        assert.strictEqual(chunks.status, 200, chunks.text)
        const chunk = chunks.body.items.find((c: { document_id: string }) => c.document_id === ops)
        assert.isNull(chunk.speaker)
        assert.strictEqual(chunk.spoken_at, "2026-02-03T09:00:00.000Z")
        assert.strictEqual(chunk.spoken_until, "2026-02-11T17:05:00.000Z")
        assert.deepStrictEqual(chunk.messages.map((m: { speaker: string; spoken_at: string }) => [m.speaker, m.spoken_at]), [
          ["Ana Duarte", "2026-02-03T09:00:00.000Z"],
          ["Ben Okoro", "2026-02-04T10:00:00.000Z"],
          ["Ana Duarte", "2026-02-04T10:00:00.000Z"],
          ["Ben Okoro", "2026-02-09T08:30:00.000Z"],
          ["Ana Duarte", "2026-02-11T17:00:00.000Z"],
          ["Ben Okoro", "2026-02-11T17:05:00.000Z"]
        ])
        const offset = (m: { char_start: number; char_end: number }) =>
          chunk.text.slice(m.char_start - chunk.char_start, m.char_end - chunk.char_start)
        assert.strictEqual(offset(chunk.messages[3]), "Ben Okoro: I deployed the new load balancer this morning.")

        const search = yield* request(url, "/api/v1/search", {
          token,
          json: { query: "load balancer deployed", strategy: "lexical", source_ids: [sourceId] }
        })
        assert.strictEqual(search.status, 200, search.text)
        const hit = search.body.results[0]
        assert.strictEqual(hit.document_id, ops)
        assert.strictEqual(hit.spoken_until, "2026-02-11T17:05:00.000Z")
        assert.deepStrictEqual(hit.messages, chunk.messages)

        const ask = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "Who deployed the new load balancer?" }
        })
        assert.strictEqual(ask.status, 200, ask.text)
        const citation = ask.body.citations.find((c: { document_id: string }) => c.document_id === ops)
        assert.isDefined(citation, ask.text)
        assert.strictEqual(citation.spoken_at, "2026-02-03T09:00:00.000Z")
        assert.deepStrictEqual(citation.messages, chunk.messages)
        const run = yield* request(url, `/api/v1/agents/${agentId}/runs/${ask.body.id}`, { token })
        assert.deepStrictEqual(run.body.citations, ask.body.citations)
      }))

    it.effect("relative times resolve against the message that says them; first-person events have the speaker as actor", () =>
      Effect.gen(function*() {
        const { url, token, sourceId } = yield* seeded("Chronologist")
        const events = yield* eventsOf(url, token, sourceId)
        const find = (words: string) => {
          const event = events.find((e) => e.statement.includes(words))
          assert.isDefined(event, `${words}: ${JSON.stringify(events.map((e) => e.statement))}`)
          return event!
        }
        const actor = (event: ReturnType<typeof find>) => event.participants.find((p) => p.role === "actor")?.name
        const balancer = find("load balancer")
        assert.strictEqual(day(balancer.time?.start), "2026-02-09")
        assert.strictEqual(actor(balancer), "Ben Okoro")
        const budget = find("reviewed the offsite budget")
        assert.strictEqual(day(budget.time?.start), "2026-02-03")
        assert.strictEqual(budget.time?.precision, "day")
        assert.strictEqual(actor(budget), "Ben Okoro")
        const dog = find("adopted a dog")
        assert.strictEqual(dog.time?.precision, "year")
        assert.strictEqual(day(dog.time?.start), "2025-01-01")
        assert.strictEqual(actor(dog), "Ana Duarte")
        const group = find("support group")
        assert.strictEqual(day(group.time?.start), "2023-05-07")
        assert.strictEqual(actor(group), "Caroline")
        const painting = find("painted a lake sunrise")
        assert.strictEqual(painting.time?.precision, "week")
        assert.strictEqual(actor(painting), "Melanie")
      }))

    it.effect("a query naming a date finds the messages and events of that day", () =>
      Effect.gen(function*() {
        const { url, token, sourceId, ops, support } = yield* seeded("Diarist")
        const search = (query: string) =>
          Effect.map(
            request(url, "/api/v1/search", { token, json: { query, strategy: "multi", source_ids: [sourceId] } }),
            (reply) => {
              assert.strictEqual(reply.status, 200, reply.text)
              return reply.body
            }
          )
        const ninth = yield* search("What happened on February 9, 2026?")
        assert.include(ninth.lists, "graph")
        assert.strictEqual(ninth.results[0]?.document_id, ops, JSON.stringify(ninth.results))
        const may = yield* search("What happened in May 2023?")
        assert.strictEqual(may.results[0]?.document_id, support, JSON.stringify(may.results))
        const fromGraph = (result: { explanation: { lists: Array<{ list: string }> } }) =>
          result.explanation.lists.some((list) => list.list === "graph")
        assert.isTrue(fromGraph(ninth.results[0]))
        assert.isTrue(fromGraph(may.results[0]))
        // A message in which the extractor finds no event is still found by the day it was sent.
        const quiet = yield* ingestMessages(url, token, sourceId, "quiet", [{
          speaker: "Ana Duarte",
          content: "the quarterly numbers look fine",
          timestamp: "2026-03-20T23:30:00Z"
        }])
        const twentieth = yield* search("What happened on March 20, 2026?")
        const said = twentieth.results.find((r: { document_id: string }) => r.document_id === quiet)
        assert.isDefined(said, JSON.stringify(twentieth.results))
        assert.isTrue(fromGraph(said))
        assert.isFalse(twentieth.results.filter((r: { document_id: string }) => r.document_id !== quiet).some(fromGraph))
        // No message or event of that day: the graph adds nothing (the dense list still answers with its nearest).
        const march = yield* search("What happened on March 21, 2026?")
        assert.isFalse(march.results.some(fromGraph))
        // Without a year: the latest year the source has events in that day or month (not chrono's nearest, which
        // for February 9 may lie ahead; May is 2023 here).
        const ninthAgain = yield* search("What happened on February 9?")
        assert.strictEqual(ninthAgain.results[0]?.document_id, ops, JSON.stringify(ninthAgain.results))
        assert.isTrue(fromGraph(ninthAgain.results[0]))
        const inMay = yield* search("What happened in May?")
        assert.strictEqual(inMay.results[0]?.document_id, support, JSON.stringify(inMay.results))
        assert.isTrue(fromGraph(inMay.results[0]))
        // The year read is told. (The test clock stands at 1970: both were moved to the years of their events.)
        assert.include(inMay.notices, `"May" is read as May 2023, the next May with events in the searched sources`)
        assert.include(
          ninthAgain.notices,
          `"February 9" is read as 9 February 2026, the next February 9 with events in the searched sources`
        )
        assert.notInclude(JSON.stringify(ninth.notices), "is read as")
      }))

    it.effect("a when question is answered with the resolved date, citing the message (ask and chat completions)", () =>
      Effect.gen(function*() {
        const { url, token, agentId, support, sourceId } = yield* seeded("Asker")
        const question = "When did Caroline go to the support group?"
        const ask = yield* request(url, `/api/v1/agents/${agentId}/ask`, { token, json: { question } })
        assert.strictEqual(ask.status, 200, ask.text)
        assert.strictEqual(ask.body.provider, "extractive")
        assert.include(ask.body.answer, "7 May 2023")
        assert.notInclude(ask.body.answer, "8 May 2023")
        const cited = ask.body.citations[0]
        assert.strictEqual(cited.document_id, support)
        assert.deepStrictEqual(cited.messages.map((m: { speaker: string; spoken_at: string }) => [m.speaker, m.spoken_at]), [
          ["Caroline", "2023-05-08T13:56:00.000Z"],
          ["Melanie", "2023-05-08T14:01:00.000Z"]
        ])

        const compat = yield* request(url, `/api/v1/engram/${agentId}/chat/completions`, {
          token,
          json: { model: "engram", messages: [{ role: "user", content: question }] }
        })
        assert.strictEqual(compat.status, 200, compat.text)
        assert.include(compat.body.choices[0].message.content, "7 May 2023")
        assert.strictEqual(compat.body.citations[0].messages[0].spoken_at, "2023-05-08T13:56:00.000Z")

        // The day said in the sentence after, sent on Sunday 25 June: the Thursday before.
        yield* ingestMessages(url, token, sourceId, "driving", [{
          speaker: "Adaeze Okafor",
          content: "I PASSED MY DRIVING TEST!!! Thursday morning, only two minors",
          timestamp: "2023-06-25T17:40:00Z"
        }])
        const passed = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "When did Adaeze pass her driving test?" }
        })
        assert.strictEqual(passed.status, 200, passed.text)
        assert.include(passed.body.answer, "22 June 2023")
      }))
  })
}

const chat = await startChatServer({ reply: () => "On 7 May 2023 [1]." })
afterAll(() => chat.close())

for (const engine of engines) {
  layer(freshServer(engine, {
    extractor: "rules",
    llmBaseUrl: Option.some(chat.url),
    llmModel: "stand-in-chat",
    llmMaxRetries: 0
  }))(`the language model is given the messages' dates and the events' resolved times (${engine})`, (it) => {
    it.effect("the prompt dates each message and lists the events with their resolved dates", () =>
      Effect.gen(function*() {
        const { url, token, agentId, support } = yield* seeded("Prompter")
        const before = chat.requests.length
        const ask = yield* request(url, `/api/v1/agents/${agentId}/ask`, {
          token,
          json: { question: "When did Caroline go to the support group?" }
        })
        assert.strictEqual(ask.status, 200, ask.text)
        assert.strictEqual(ask.body.provider, "openai-compatible")
        assert.strictEqual(ask.body.citations[0].document_id, support)
        const system = messageText(chat.requests.slice(before).at(-1)!.messages[0]!)
        assert.include(system, "[Mon 8 May 2023, 13:56 UTC] Caroline: I went to a LGBTQ support group yesterday")
        assert.include(system, "[Mon 8 May 2023, 14:01 UTC] Melanie:")
        assert.include(system, "Dates of the events above:")
        assert.include(system, "- 7 May 2023 — Caroline: I went to a LGBTQ support group yesterday")
        assert.include(system, "relative time in a message")
      }))
  })
}
