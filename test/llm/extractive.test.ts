import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import type { Prompt } from "effect/ai"
import { extractiveLanguageModel, noAnswer } from "../../src/llm/extractive.ts"
import {
  answeringRule,
  buildPrompt,
  citedNumbers,
  estimateTokens,
  fitPassages,
  type Passage,
  parseSources
} from "../../src/llm/prompt.ts"

const retrieved: ReadonlyArray<Omit<Passage, "n">> = [
  {
    chunkId: "c-eiffel",
    documentId: "d-paris",
    sourceId: "s-1",
    title: "Eiffel Tower",
    text: "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was completed in " +
      "1889 as the entrance arch to the World's Fair. The tower is 330 metres tall."
  },
  {
    chunkId: "c-photo",
    documentId: "d-biology",
    sourceId: "s-1",
    title: "Photosynthesis",
    text: "Photosynthesis converts light energy into chemical energy.\n\nPlants store this energy in glucose " +
      "molecules. Oxygen is released as a by-product."
  },
  {
    chunkId: "c-wall",
    documentId: "d-china",
    sourceId: "s-2",
    title: "Great Wall of China",
    text: "The Great Wall of China stretches over 21,000 kilometres. Construction began in the 7th century BC."
  },
  {
    chunkId: "c-design",
    documentId: "d-paris",
    sourceId: "s-1",
    title: "Eiffel Tower: design",
    text: "The engineering company of Gustave Eiffel designed and built the tower. Many artists criticised its " +
      "design at first."
  }
]

const passages = fitPassages(retrieved, 3000)

const promptFor = (question: string, over: ReadonlyArray<Passage> = passages) =>
  buildPrompt({ instructions: "You are the travel desk.", passages: over, history: [], question })

const answer = (prompt: Prompt.Prompt) =>
  Effect.flatMap(extractiveLanguageModel, (model) => model.generateText({ prompt }))

const citedChunks = (text: string) => citedNumbers(text, passages.length).map((n) => passages[n - 1]!.chunkId)

/** Chat messages ([speaker, sent at, words]) as one passage, with events dated to a day ([statement, actor, day]). */
const chatOf = (
  lines: ReadonlyArray<readonly [string, string, string]>,
  events: ReadonlyArray<readonly [string, string, string]> = []
) => {
  let text = ""
  const messages = lines.map(([speaker, spokenAt, said]) => {
    const start = text.length
    text += `${speaker}: ${said}\n\n`
    return { speaker, spokenAt, start, end: text.length - 2 }
  })
  return fitPassages([{
    chunkId: "c-chat",
    documentId: "d-chat",
    sourceId: "s-1",
    title: "chat",
    text: text.trimEnd(),
    messages,
    events: events.map(([statement, actor, day]) => ({
      statement,
      actor,
      start: `${day}T00:00:00.000Z`,
      end: new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString(),
      precision: "day" as const
    }))
  }], 3000)
}

describe("prompt", () => {
  it.effect("the system message carries the instructions, the answering rule and the numbered sources; " +
    "the history follows and the question is the last user message", () =>
    Effect.sync(() => {
      const prompt = buildPrompt({
        instructions: "Be brief.",
        passages: passages.slice(0, 2),
        history: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello." }],
        question: "How do plants store energy?"
      })
      assert.deepStrictEqual(prompt.content.map((message) => message.role), ["system", "user", "assistant", "user"])
      const system = prompt.content[0]!
      assert.strictEqual(system.role, "system")
      if (system.role === "system") {
        assert.isTrue(system.content.startsWith(`Be brief.\n\n${answeringRule}\n\n<sources>\n[1] Eiffel Tower\n`))
        assert.isTrue(system.content.endsWith("\n</sources>"))
        assert.include(
          system.content,
          "\n\n[2] Photosynthesis\nPhotosynthesis converts light energy into chemical energy.\nPlants store"
        )
        assert.deepStrictEqual(parseSources(system.content).map((source) => [source.n, source.title]), [
          [1, "Eiffel Tower"],
          [2, "Photosynthesis"]
        ])
      }
      const last = prompt.content.at(-1)!
      assert.strictEqual(last.role, "user")
      if (last.role === "user") {
        assert.deepStrictEqual(last.content.map((part) => part.type === "text" ? part.text : part.type), [
          "How do plants store energy?"
        ])
      }
    }))

  it.effect.prop(
    "sources read back as written, whatever the passages contain",
    [Schema.Array(Schema.Struct({ title: Schema.String, text: Schema.String }))],
    ([drafts]) =>
      Effect.sync(() => {
        const written = drafts.map((draft, i) => ({
          ...draft,
          n: i + 1,
          chunkId: `c${i}`,
          documentId: "d",
          sourceId: "s"
        }))
        const system = buildPrompt({ instructions: "", passages: written, history: [], question: "q" }).content[0]!
        assert.strictEqual(system.role, "system")
        if (system.role !== "system") return
        assert.deepStrictEqual(
          parseSources(system.content),
          written.map((passage) => ({
            n: passage.n,
            title: passage.title.replace(/\s+/g, " ").trim() || "Untitled",
            text: passage.text.trim().replace(/\n[ \t]*\n\s*/g, "\n").trim()
          }))
        )
      })
  )

  it.effect("fitPassages keeps passages in order while they fit the budget, and renumbers them", () =>
    Effect.sync(() => {
      const cost = (passage: Passage) => estimateTokens(`[${passage.n}] ${passage.title}\n${passage.text}`)
      const all = fitPassages(retrieved, 100_000)
      assert.deepStrictEqual(all.map((passage) => passage.n), [1, 2, 3, 4])
      const budget = cost(all[0]!) + cost(all[1]!) + 5
      const fitted = fitPassages(retrieved, budget)
      assert.deepStrictEqual(fitted.map((passage) => [passage.n, passage.chunkId]), [[1, "c-eiffel"], [2, "c-photo"]])
      assert.isAtMost(fitted.reduce((sum, passage) => sum + cost(passage), 0), budget)

      const skipped = fitPassages(retrieved.slice(2), 1000)
      assert.deepStrictEqual(skipped.map((passage) => [passage.n, passage.chunkId]), [[1, "c-wall"], [2, "c-design"]])
    }))

  it.effect("the first passage is kept, cut to the budget, when even it does not fit", () =>
    Effect.sync(() => {
      const [only, ...rest] = fitPassages(retrieved, 12)
      assert.deepStrictEqual(rest, [])
      assert.strictEqual(only!.n, 1)
      assert.strictEqual(only!.chunkId, "c-eiffel")
      assert.isTrue(only!.text.endsWith(" …"))
      assert.isTrue(retrieved[0]!.text.startsWith(only!.text.slice(0, -2)))
      assert.isAtMost(estimateTokens(`[1] Eiffel Tower\n${only!.text}`), 12)
    }))

  it.effect("citedNumbers: distinct markers of existing passages, in first-appearance order", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(citedNumbers("A [2]. B [7][1]. C [0] [2] and [3, 1]; see [12].", 3), [2, 1, 3])
      assert.deepStrictEqual(citedNumbers("No markers, only [a] and [ 1 ].", 3), [])
    }))
})

describe("extractive language model", () => {
  it.effect("answers with the relevant sentence and cites its passage", () =>
    Effect.gen(function*() {
      const plants = yield* answer(promptFor("How do plants store energy?"))
      assert.include(plants.text, "Plants store this energy in glucose molecules [2].")
      assert.deepStrictEqual(citedChunks(plants.text), ["c-photo"])
      assert.strictEqual(plants.finishReason, "stop")

      const designer = yield* answer(promptFor("Who designed the Eiffel Tower?"))
      assert.include(designer.text, "The engineering company of Gustave Eiffel designed and built the tower [4].")
      assert.deepStrictEqual(citedChunks(designer.text), ["c-design"])

      const completed = yield* answer(promptFor("When was the Eiffel Tower completed?"))
      assert.include(completed.text, "It was completed in 1889 as the entrance arch to the World's Fair [1].")
      assert.deepStrictEqual(citedChunks(completed.text), ["c-eiffel"])

      const wall = yield* answer(promptFor("How long is the Great Wall of China?"))
      assert.strictEqual(wall.text, "The Great Wall of China stretches over 21,000 kilometres [3].")
    }))

  it.effect("a when question over chat messages is answered with the event's resolved date, else the day it was said", () =>
    Effect.gen(function*() {
      const text = "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.\n\n" +
        "Melanie: Wow, I adopted a kitten called Oscar!"
      const chat = fitPassages([{
        chunkId: "c-chat",
        documentId: "d-chat",
        sourceId: "s-1",
        title: "catch-up",
        text,
        messages: [
          { speaker: "Caroline", spokenAt: "2023-05-08T13:56:00.000Z", start: 0, end: text.indexOf("\n") },
          { speaker: "Melanie", spokenAt: "2023-05-08T14:01:00.000Z", start: text.indexOf("Melanie"), end: text.length }
        ],
        events: [{
          statement: "I went to a LGBTQ support group yesterday and it was so powerful.",
          actor: "Caroline",
          start: "2023-05-07T00:00:00.000Z",
          end: "2023-05-08T00:00:00.000Z",
          precision: "day"
        }]
      }], 3000)
      const group = yield* answer(promptFor("When did Caroline go to the support group?", chat))
      assert.strictEqual(
        group.text,
        "7 May 2023 — Caroline: I went to a LGBTQ support group yesterday and it was so powerful [1]."
      )
      const kitten = yield* answer(promptFor("When did Melanie adopt a kitten?", chat))
      assert.strictEqual(kitten.text, "8 May 2023: Melanie: Wow, I adopted a kitten called Oscar [1]!")
      const other = yield* answer(promptFor("What is the kitten called?", chat))
      assert.notInclude(other.text, "May 2023")
      /** One chat message as a passage of its own. */
      const message = (speaker: string, spokenAt: string, said: string, events: Passage["events"] = []) => {
        const text = `${speaker}: ${said}`
        return fitPassages([{
          chunkId: `c-${speaker}`,
          documentId: "d-chat",
          sourceId: "s-1",
          title: "chat",
          text,
          messages: [{ speaker, spokenAt, start: 0, end: text.length }],
          events
        }], 3000)
      }
      // An event whose actor is not the speaker is quoted as the speaker's words.
      const birthday = yield* answer(promptFor(
        "When did Luna turn five?",
        message("Sofia", "2023-06-01T09:10:00.000Z", "My cat Luna turned five yesterday.", [{
          statement: "My cat Luna turned five yesterday.",
          actor: "Luna",
          start: "2023-05-31T00:00:00.000Z",
          end: "2023-06-01T00:00:00.000Z",
          precision: "day"
        }])
      ))
      assert.strictEqual(birthday.text, "31 May 2023 — Sofia: My cat Luna turned five yesterday [1].")
      // No dated event for it: the time its own words name, counted from when it was sent (a Sunday).
      const danced = yield* answer(promptFor(
        "When did Gina go to a dance class with friends?",
        message("Gina", "2023-07-23T18:46:00.000Z", "Last Friday at dance class with a group of friends I felt it.")
      ))
      assert.strictEqual(
        danced.text,
        "21 July 2023: Gina: Last Friday at dance class with a group of friends I felt it [1]."
      )
    }))

  it.effect("a when question whose best sentence is a question is answered by its own time, else the reply's event", () =>
    Effect.gen(function*() {
      const text = "Diego: ok who has seen oppenheimer? I want to see it\n\nAisha: me! went friday with my sister, opening night"
      const chat = fitPassages([{
        chunkId: "c-film",
        documentId: "d-chat",
        sourceId: "s-1",
        title: "movies",
        text,
        messages: [
          { speaker: "Diego", spokenAt: "2023-07-23T20:10:00.000Z", start: 0, end: text.indexOf("\n") },
          { speaker: "Aisha", spokenAt: "2023-07-23T20:14:00.000Z", start: text.indexOf("Aisha"), end: text.length }
        ],
        events: [{
          statement: "me! went friday with my sister, opening night",
          actor: "Aisha",
          start: "2023-07-21T00:00:00.000Z",
          end: "2023-07-22T00:00:00.000Z",
          precision: "day"
        }]
      }], 3000)
      const seen = yield* answer(promptFor("When did Aisha see Oppenheimer?", chat))
      assert.strictEqual(seen.text, "21 July 2023 — Aisha: me! went friday with my sister, opening night [1]")
      // A question that names its own time is answered by that time, not by the reply's event.
      const release = yield* answer(promptFor(
        "When was the Ledgerly 3.0 release planned for?",
        chatOf([
          ["Kenji", "2021-05-05T14:20:00.000Z", "hey Lu, is the Ledgerly 3.0 release still on for Friday?"],
          ["Lucía", "2021-05-05T14:22:00.000Z", "Code freeze is tomorrow."]
        ], [["Code freeze is tomorrow.", "Lucía", "2021-05-06"]])
      ))
      assert.strictEqual(
        release.text,
        "7 May 2021: Kenji: hey Lu, is the Ledgerly 3.0 release still on for Friday [1]?"
      )
    }))

  it.effect("a question's words meet their irregular, -ed and ordinal forms, and 'what date' is no word to find", () =>
    Effect.gen(function*() {
      const chat = chatOf([
        ["Thomas", "2022-12-17T11:06:00.000Z", "We saw Aftersun at the Watershed last night, I was a wreck by the end"],
        ["Priya", "2022-12-17T11:07:00.000Z", "That's brilliant for a first half Tom"],
        ["Thomas", "2022-12-17T11:08:00.000Z", "Signed up for the Bath Half."],
        ["Thomas", "2022-12-17T11:09:00.000Z", "The Bath Half is on the 12th of March so just over two weeks"],
        ["Thomas", "2022-12-17T11:10:00.000Z", "Haha we'll see what Jess's allergies say"],
        ["Priya", "2022-12-17T11:11:00.000Z", "Chaotic week. Moved in on Saturday and I still can't find my kettle"]
      ], [
        ["We saw Aftersun at the Watershed last night, I was a wreck by the end", "Thomas", "2022-12-16"],
        ["The Bath Half is on the 12th of March so just over two weeks", "Thomas", "2023-03-12"]
      ])
      const film = yield* answer(promptFor("When did Tom and Jess see Aftersun?", chat))
      assert.strictEqual(
        film.text,
        "16 December 2022 — Thomas: We saw Aftersun at the Watershed last night, I was a wreck by the end [1]"
      )
      const moved = yield* answer(promptFor("When did Priya move in?", chat))
      assert.strictEqual(moved.text, "17 December 2022: Moved in on Saturday and I still can't find my kettle [1]")
      const race = yield* answer(promptFor("On what date did Tom run the Bath Half?", chat))
      assert.strictEqual(
        race.text,
        "12 March 2023 — Thomas: The Bath Half is on the 12th of March so just over two weeks [1]"
      )
      // An ordinal is its number: "90th" meets "90".
      const birthday = yield* answer(promptFor(
        "When was Baba Vera's 90th birthday?",
        chatOf([
          ["Elena", "2021-12-08T19:00:00.000Z", "How was Baba's 90th?"],
          ["Nikolai", "2021-12-08T19:05:00.000Z", "It was lovely, she danced all night."],
          ["Elena", "2021-12-08T19:06:00.000Z", "So happy for Vera, tell her I said so."],
          ["Nikolai", "2021-12-09T09:00:00.000Z", "Reminder: Baba Vera turned 90 this Sunday."]
        ], [["Reminder: Baba Vera turned 90 this Sunday.", "Baba Vera", "2021-12-05"]])
      ))
      assert.strictEqual(birthday.text, "5 December 2021 — Nikolai: Reminder: Baba Vera turned 90 this Sunday [1].")
    }))

  it.effect("a when question whose best sentence leans on the one before is answered by that one's dated event", () =>
    Effect.gen(function*() {
      const chat = chatOf([
        ["Nikolai", "2021-11-01T20:15:00.000Z", "Cousin Ivan's restaurant opened on Friday! It's called Ribka"],
        ["Elena", "2021-11-01T20:17:00.000Z", "Oh nice, the pool near us opened again too, finally."]
      ], [["Cousin Ivan's restaurant opened on Friday!", "Ivan", "2021-10-29"]])
      const opened = yield* answer(promptFor("When did Ribka open?", chat))
      assert.strictEqual(opened.text, "29 October 2021 — Nikolai: Cousin Ivan's restaurant opened on Friday [1]!")
      // Without the question's word in the sentence before, the best sentence is answered by its own day.
      const named = yield* answer(promptFor("When was Ribka named?", chat))
      assert.strictEqual(named.text, "1 November 2021: It's called Ribka [1]")
    }))

  it.effect("says plainly, without markers, when the sources do not answer", () =>
    Effect.gen(function*() {
      for (const question of ["What is the boiling point of mercury?", "What is the population of Paris?", "Why?"]) {
        const response = yield* answer(promptFor(question))
        assert.strictEqual(response.text, noAnswer)
        assert.deepStrictEqual(citedNumbers(response.text, passages.length), [])
      }
      assert.strictEqual((yield* answer(promptFor("How do plants store energy?", []))).text, noAnswer)
      assert.strictEqual(noAnswer, "The sources do not contain an answer to this question.")
    }))

  it.effect("uses the last user message as the question, after a history", () =>
    Effect.gen(function*() {
      const prompt = buildPrompt({
        instructions: "",
        passages,
        history: [
          { role: "user", content: "Who designed the Eiffel Tower?" },
          { role: "assistant", content: "Gustave Eiffel's company [4]." }
        ],
        question: "How long is the Great Wall of China?"
      })
      assert.deepStrictEqual(citedNumbers((yield* answer(prompt)).text, passages.length), [3])
    }))

  it.effect("streams text-start, word deltas, text-end and a finish with usage, joining to the generated text", () =>
    Effect.gen(function*() {
      const prompt = promptFor("When was the Eiffel Tower completed?")
      const model = yield* extractiveLanguageModel
      const generated = yield* model.generateText({ prompt })
      const parts = Array.from(yield* Stream.runCollect(model.streamText({ prompt })))
      const deltas = parts.flatMap((part) => (part.type === "text-delta" ? [part.delta] : []))
      assert.isAbove(deltas.length, 5)
      assert.strictEqual(deltas.join(""), generated.text)
      assert.deepStrictEqual(parts.map((part) => part.type).filter((type) => type !== "text-delta"), [
        "text-start",
        "text-end",
        "finish"
      ])
      const finish = parts.at(-1)!
      if (finish.type === "finish") {
        assert.strictEqual(finish.reason, "stop")
        assert.strictEqual(finish.usage.outputTokens.total, estimateTokens(generated.text))
        assert.isAbove(finish.usage.inputTokens.total ?? 0, 100)
      }
      assert.deepStrictEqual(generated.usage.outputTokens.total, estimateTokens(generated.text))
    }))

  it.effect("refuses structured output: that needs an LLM", () =>
    Effect.gen(function*() {
      const model = yield* extractiveLanguageModel
      const schema = Schema.Struct({ a: Schema.String })
      const error = yield* model.generateObject({ prompt: "Extract", schema }).pipe(Effect.flip)
      assert.strictEqual(error.reason._tag, "InvalidUserInputError")
      assert.include(error.message, "ENGRAM_LLM_BASE_URL")
    }))
})
