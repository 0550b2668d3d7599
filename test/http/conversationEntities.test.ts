import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { login, request } from "../support/http.ts"
import { createSource, waitForDocument } from "../support/ingest.ts"
import { engines, freshServer, TestServer } from "../support/server.ts"

interface EntityItem {
  readonly name: string
  readonly kind: string
  readonly aliases: ReadonlyArray<string>
}

const session = (day: string, messages: ReadonlyArray<readonly [speaker: string, content: string]>) =>
  messages.map(([speaker, content], i) => ({ speaker, content, timestamp: `${day}T18:0${i}:00Z` }))

/** Chat sessions through the real pipeline: the source's entities are the people and things, not the small talk. */
for (const engine of engines) {
  layer(freshServer(engine))(`entities of a conversation (${engine})`, (it) => {
    it.effect("speakers are persons, small talk is no entity, nicknames join across sessions, namesakes stay apart", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Confidant")
        const sourceId = yield* createSource(url, token)
        const ingest = (title: string, messages: ReturnType<typeof session>) =>
          Effect.gen(function*() {
            const reply = yield* request(url, `/api/v1/sources/${sourceId}/documents/ingest`, {
              token,
              json: { title, messages }
            })
            assert.strictEqual(reply.status, 202, reply.text)
            yield* waitForDocument(url, token, sourceId, reply.body.id)
          })
        yield* ingest("first", session("2023-05-08", [
          ["Caroline", "Thanks Mel! The support group yesterday was amazing"],
          ["Melanie", "Glad you went. Congrats Caroline!"],
          ["Caroline", "Haha. Sam Hollis from work came too, and my cousin Samira"],
          ["Melanie", "Cool. Woohoo!"]
        ]))
        // Melanie does not speak here: "Mel" still joins her, the only person it fits; "Sam" fits two and joins neither.
        yield* ingest("second", session("2023-06-01", [
          ["Caroline", "Absolutely loved the painting Mel gave me"],
          ["Caroline", "Sam said hi. Here is the photo from Lisbon"]
        ]))

        const entities = yield* request(url, `/api/v1/sources/${sourceId}/entities?limit=100`, { token })
        assert.strictEqual(entities.status, 200, entities.text)
        const items = entities.body.items as ReadonlyArray<EntityItem>
        const byName = new Map(items.map((item) => [item.name, item]))
        assert.deepStrictEqual(
          items.map((item) => item.name).sort(),
          ["Caroline", "Lisbon", "Melanie", "Sam", "Sam Hollis", "Samira"]
        )
        assert.strictEqual(byName.get("Caroline")?.kind, "person")
        assert.strictEqual(byName.get("Melanie")?.kind, "person")
        assert.deepStrictEqual(byName.get("Melanie")?.aliases, ["Mel"])
        assert.deepStrictEqual(byName.get("Sam Hollis")?.aliases, [])
        assert.strictEqual(byName.get("Lisbon")?.kind, "place")
      }))
  })
}
