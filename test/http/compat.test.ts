import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { login, request } from "../support/http.ts"
import { createSource, ingestText, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

/** A user with one ready document and an agent bound to its source; an official OpenAI client pointed at it. */
const seeded = (name: string) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const token = yield* login(url, name)
    const sourceId = yield* createSource(url, token)
    const doc = yield* ingestText(url, token, sourceId, "volcanoes", "Basaltic lava flows from shield volcanoes on Hawaii.")
    yield* waitForDocument(url, token, sourceId, doc.body.id)
    const agent = yield* request(url, "/api/v1/agents", { token, json: { name: "Geologist", source_ids: [sourceId] } })
    assert.strictEqual(agent.status, 201, agent.text)
    const agentId: string = agent.body.id
    const client = new OpenAI({ baseURL: `${url}/api/v1/engram/${agentId}`, apiKey: token, maxRetries: 0 })
    return { url, token, agentId, documentId: doc.body.id as string, client }
  })

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

for (const engine of engines) {
  layer(freshServer(engine))(`OpenAI-compatible endpoint (${engine})`, (it) => {
    it.effect("the official client: models, a completion with citations, and the same answer streamed", () =>
      Effect.gen(function*() {
        const { agentId, documentId, client } = yield* seeded("Sdk User")
        const models = yield* promise(() => client.models.list())
        assert.deepStrictEqual(models.data.map((m) => m.id), [agentId])

        const completion = yield* promise(() =>
          client.chat.completions.create({
            model: "anything",
            messages: [
              { role: "system", content: "Be terse." },
              { role: "user", content: "Hello" },
              { role: "assistant", content: "Hi, ask me about geology." },
              { role: "user", content: "What flows from shield volcanoes?" }
            ],
            temperature: 0.1,
            max_tokens: 100,
            // Fields Engram does not use are ignored, as OpenAI ignores unknown ones.
            n: 1,
            logprobs: false,
            ...({ some_future_field: true } as object)
          })
        )
        assert.strictEqual(completion.object, "chat.completion")
        assert.strictEqual(completion.model, agentId)
        assert.match(completion.id, /^chatcmpl-/)
        const choice = completion.choices[0]!
        assert.strictEqual(choice.message.role, "assistant")
        assert.strictEqual(choice.finish_reason, "stop")
        assert.include(choice.message.content, "Basaltic lava flows from shield volcanoes on Hawaii")
        const citations = (completion as unknown as { citations: Array<{ document_id: string; n: number }> }).citations
        assert.strictEqual(citations[0]!.document_id, documentId)
        assert.isAbove(completion.usage!.total_tokens, 0)

        const stream = yield* promise(() =>
          client.chat.completions.create({
            model: agentId,
            messages: [{ role: "user", content: "What flows from shield volcanoes?" }],
            stream: true,
            stream_options: { include_usage: true }
          })
        )
        const chunks = yield* promise(async () => {
          const all = []
          for await (const chunk of stream) all.push(chunk)
          return all
        })
        assert.strictEqual(chunks[0]!.choices[0]!.delta.role, "assistant")
        assert.isTrue(chunks.every((c) => c.object === "chat.completion.chunk" && c.id === chunks[0]!.id))
        const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
        assert.strictEqual(text, choice.message.content)
        const finish = chunks.find((c) => c.choices[0]?.finish_reason === "stop")
        assert.isDefined(finish)
        const usage = chunks[chunks.length - 1]!
        assert.deepStrictEqual(usage.choices, [])
        assert.isAbove(usage.usage!.completion_tokens, 0)

        const plain = yield* promise(() =>
          client.chat.completions.create({ model: agentId, messages: [{ role: "user", content: "What flows?" }], stream: true })
        )
        const plainChunks = yield* promise(async () => {
          const all = []
          for await (const chunk of plain) all.push(chunk)
          return all
        })
        assert.isTrue(plainChunks.every((c) => c.usage === undefined || c.usage === null), "no usage unless asked")
      }))

    it.effect("errors in OpenAI's shape with the right status codes", () =>
      Effect.gen(function*() {
        const { url, agentId, client } = yield* seeded("Error Prone")
        const caught = (f: () => Promise<unknown>) =>
          promise(() => f().then(() => assert.fail("expected an error"), (error: unknown) => error as InstanceType<typeof OpenAI.APIError>))

        const badKey = new OpenAI({ baseURL: `${url}/api/v1/engram/${agentId}`, apiKey: "not-a-token", maxRetries: 0 })
        const unauthorized = yield* caught(() => badKey.models.list())
        assert.instanceOf(unauthorized, OpenAI.AuthenticationError)
        assert.strictEqual(unauthorized.status, 401)
        assert.strictEqual(unauthorized.type, "authentication_error")

        const other = new OpenAI({ baseURL: `${url}/api/v1/engram/no-such-agent`, apiKey: client.apiKey, maxRetries: 0 })
        const missing = yield* caught(() =>
          other.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }] })
        )
        assert.instanceOf(missing, OpenAI.NotFoundError)
        assert.strictEqual(missing.code, "agent_not_found")

        const lastNotUser = yield* caught(() =>
          client.chat.completions.create({ model: "x", messages: [{ role: "assistant", content: "hi" }] })
        )
        assert.instanceOf(lastNotUser, OpenAI.BadRequestError)
        assert.strictEqual(lastNotUser.type, "invalid_request_error")

        const empty = yield* caught(() => client.chat.completions.create({ model: "x", messages: [] }))
        assert.instanceOf(empty, OpenAI.BadRequestError)
        assert.strictEqual(empty.param, "messages")

        const hot = yield* caught(() =>
          client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }], temperature: 3 })
        )
        assert.instanceOf(hot, OpenAI.BadRequestError)

        const raw = yield* request(url, `/api/v1/engram/${agentId}/chat/completions`, {
          token: client.apiKey ?? "",
          body: "{not json",
          headers: { "content-type": "application/json" }
        })
        assert.strictEqual(raw.status, 400)
        assert.deepStrictEqual(Object.keys(raw.body.error).sort(), ["code", "message", "param", "type"])
      }))
  })
}
