import { Effect, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response } from "effect/ai"
import type { DateReader } from "../retrieval/queryGraph.ts"
import { estimateTokens, eventTime, eventsHeading, parseSources, sentInstant } from "./prompt.ts"

/** The answer when no sentence of the sources answers the question. */
export const noAnswer = "The sources do not contain an answer to this question."

const maxSentences = 3
/** Share of the question's weighted content words the best sentence must contain. */
const minimumCoverage = 0.5
/** A further sentence must add question words the others lack and reach this share on its own. */
const companionCoverage = 0.25
/** Question words a sentence only leans on (its title, the sentence before) count this much less. */
const contextDiscount = 2
const nearDuplicate = 0.6
/** A "when" question names the event and leaves out its time, so its best sentence may cover less of it. */
const minimumWhenCoverage = 0.35
/** An event line restates a sentence when it has this share of the sentence's words… */
const sameEvent = 0.8
/** …else a dated event line answers a "when" question when it covers the question this close to the best sentence. */
const closeEnough = 0.8
/** Sentences after the best one that may be the reply saying when. */
const replyReach = 2

const stopWords = new Set(
  ("a about above after again against all am an and any are as at be because been before being below between " +
    "both but by can could did do does doing done down during each either else ever few for from further get " +
    "gets got had has have having he her here hers herself him himself his how i if in into is it its itself " +
    "just know let me might more most much must my myself neither no nor not now of off on once only or other " +
    "our ours ourselves out over own please same shall she should so some such tell than that the their theirs " +
    "them themselves then there these they this those through to too under until up upon us very was we were " +
    "what whatever when whenever where whether which while who whom whose why will with within without would " +
    "yes yet you your yours yourself yourselves describe explain give")
    .split(" ")
)

const dropDoubledEnd = (word: string) => /([b-df-hj-np-tv-z])\1$/.test(word) && !/(ll|ss|zz)$/.test(word)
  ? word.slice(0, -1)
  : word

/** Common irregular past forms by their verb ("saw" is "see"): a question asks "When did Tom see Aftersun?". */
const irregular = new Map(
  ("began:begin begun:begin broke:break broken:break brought:bring built:build bought:buy caught:catch chose:choose " +
    "chosen:choose came:come drew:draw drawn:draw drank:drink drunk:drink drove:drive driven:drive ate:eat " +
    "eaten:eat fell:fall fallen:fall felt:feel fought:fight found:find flew:fly flown:fly forgot:forget " +
    "forgotten:forget gave:give given:give went:go gone:go grew:grow grown:grow heard:hear held:hold kept:keep " +
    "knew:know known:know left:leave lost:lose made:make met:meet paid:pay rode:ride ridden:ride rang:ring rung:ring " +
    "ran:run said:say saw:see seen:see sold:sell sent:send shot:shoot sang:sing sung:sing sat:sit slept:sleep " +
    "spoke:speak spoken:speak spent:spend stood:stand stole:steal stolen:steal swam:swim swum:swim took:take " +
    "taken:take taught:teach told:tell thought:think threw:throw thrown:throw woke:wake woken:wake wore:wear " +
    "worn:wear won:win wrote:write written:write")
    .split(" ").map((pair) => pair.split(":") as [string, string])
)

/**
 * Light English stemming: an ordinal's number, an irregular past form's verb, then plural, -ing, -ed and a final
 * e, so "completed", "completes" and "complete" meet, and "moved", "moving" and "move".
 */
const stem = (word: string): string => {
  let w = word.replace(/['’]s$/, "")
  // "90th" is 90: "Baba Vera's 90th birthday" is when "Baba Vera turns 90".
  if (/^\d+(?:st|nd|rd|th)$/.test(w)) return w.slice(0, -2)
  w = irregular.get(w) ?? w
  if (w.length > 4 && w.endsWith("ies")) w = w.slice(0, -3) + "y"
  else if (w.endsWith("sses")) w = w.slice(0, -2)
  else if (w.length > 3 && w.endsWith("s") && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1)
  if (w.length > 5 && w.endsWith("ing")) w = dropDoubledEnd(w.slice(0, -3))
  else if (w.length > 4 && w.endsWith("ied")) w = w.slice(0, -3) + "y"
  else if (w.length > 4 && w.endsWith("ed")) w = dropDoubledEnd(w.slice(0, -2))
  if (w.length > 3 && w.endsWith("e")) w = w.slice(0, -1)
  return w
}

/** The distinct stemmed content words of a text. */
const contentWords = (text: string): ReadonlySet<string> =>
  new Set(
    (text.toLowerCase().match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu) ?? [])
      .filter((word) => !stopWords.has(word.replace(/['’].*$/, "")))
      .map(stem)
      .filter((word) => word.length > 1 || /\d/.test(word))
  )

interface Sentence {
  readonly n: number
  readonly position: number
  readonly text: string
  readonly words: ReadonlySet<string>
  /** Words of the source's title and of the sentence before, which a pronoun ("It opened in 1889") leans on. */
  readonly title: ReadonlySet<string>
  readonly previous: ReadonlySet<string>
  /** A line of the source's dated events ("7 May 2023 — Caroline: I went …"), which opens with its date. */
  readonly event: boolean
  /** When the chat message it is part of was sent, as the source shows it ("Mon 8 May 2023, 14:05 UTC"). */
  readonly sent: string | null
}

const segmenter = new Intl.Segmenter("en", { granularity: "sentence" })

/** The "[Mon 8 May 2023, 13:56 UTC] " that `buildPrompt` puts before a chat message (see `sentAt`). */
const sentPrefix = /^\[((?:Sun|Mon|Tue|Wed|Thu|Fri|Sat) \d{1,2} [A-Z][a-z]+ \d{4}, \d{2}:\d{2} UTC)\]\s+/

/**
 * Sentences of a source, one line at a time (headings and list items are sentences of their own). A chat line's
 * "[sent time]" prefix is kept apart as the time of its sentences; a dated event line is one sentence.
 */
const sentencesOf = (source: { readonly n: number; readonly title: string; readonly text: string }) => {
  const title = contentWords(source.title)
  let inEvents = false
  let sent: string | null = null
  const texts = source.text.split("\n").flatMap((line) => {
    if (line.trim() === eventsHeading) {
      inEvents = true
      return []
    }
    if (inEvents && line.startsWith("- ")) return [{ text: line.slice(2).trim(), event: true, sent: null }]
    const time = sentPrefix.exec(line)
    if (time !== null) sent = time[1]!
    const body = time === null ? line : line.slice(time[0].length)
    return Array.from(
      segmenter.segment(body.replace(/^\s*(?:#+|[-*•]|\d+[.)])\s+/, "")),
      ({ segment }) => ({ text: segment.trim(), event: false, sent })
    )
  }).filter((sentence) => sentence.text.split(/\s+/).length >= 3)
  const sentences: Array<Sentence> = []
  texts.forEach(({ text, event, sent }, position) =>
    sentences.push({
      n: source.n,
      position,
      text,
      words: contentWords(text),
      title,
      previous: sentences[position - 1]?.words ?? new Set(),
      event,
      sent
    })
  )
  return sentences
}

/** The words of a question about a time: "When did…", "What date…", "On which day…", "How long ago…". */
const whenWords = /^\s*(?:when\b|(?:on|in|at|by)?\s*(?:what|which)\s+(?:date|day|year|month|week|time)\b|how long ago\b)/i

const asksWhen = (question: string) => whenWords.test(question)

/**
 * The time a sentence's own words name, counted from when its message was sent, at the precision they give:
 * "Last Friday at dance class …" sent on Sun 23 July 2023 → "21 July 2023", "we went camping last year" → "2022";
 * null when they name none.
 */
const timeSaid = (sentence: Sentence, readDates: DateReader): string | null => {
  const instant = sentence.sent === null ? null : sentInstant(sentence.sent)
  if (instant === null) return null
  const [found] = readDates(sentence.text, { instant, timezone: 0 })
  if (found === undefined) return null
  const start = found.start.date().toISOString()
  const precision = found.start.isCertain("day") || found.start.isCertain("weekday")
    ? "day"
    : found.start.isCertain("month")
    ? "month"
    : found.start.isCertain("year")
    ? "year"
    : null
  return precision === null ? null : eventTime({ start, end: null, precision })
}

/** The day of a sent time ("Mon 8 May 2023, 14:05 UTC" → "8 May 2023"). */
const dayOfSent = (sent: string) => sent.replace(/^[A-Za-z]{3}\s+/, "").replace(/,.*$/, "")

const overlap = (a: ReadonlySet<string>, b: ReadonlySet<string>) => {
  let shared = 0
  for (const word of a) if (b.has(word)) shared++
  const union = a.size + b.size - shared
  return union === 0 ? 0 : shared / union
}

const shared = (a: ReadonlySet<string>, b: ReadonlySet<string>) => [...a].filter((word) => b.has(word)).length

/**
 * The dated event line that restates a sentence: the line has most of the sentence's words (the speaker's label is
 * no part of what it restates), or the sentence has most of the line's (it restates one clause: "results came out
 * yesterday" of "I PASSED STATS. results came out yesterday").
 */
const restating = (sentence: Sentence, lines: ReadonlyArray<Sentence>) => {
  const said = contentWords(sentence.text.replace(/^[^:]{1,60}:\s+/, ""))
  return lines.find((line) => {
    if (!line.event || line.n !== sentence.n) return false
    const statement = contentWords(line.text.replace(/^[^—]*—\s*(?:[^:]{1,60}:\s+)?/, ""))
    return shared(said, line.words) >= said.size * sameEvent ||
      (statement.size > 0 && shared(statement, said) >= statement.size * sameEvent)
  })
}

/**
 * A "when" question is answered with one cited line that opens with a date: the dated event line restating the best
 * sentence, else a dated event line covering the question nearly as well, else the sentence after the time its own
 * words name counted from when its message was sent, else the dated event of the reply to it, else that of the
 * sentence before when the best one leans on it for the question's words, else the sentence after its day.
 */
const datedAnswer = (
  best: { readonly sentence: Sentence; readonly coverage: number; readonly leaned: ReadonlyArray<string> },
  ranked: ReadonlyArray<{ readonly sentence: Sentence; readonly coverage: number }>,
  sentences: ReadonlyArray<Sentence>,
  readDates: DateReader | undefined
) => {
  if (best.sentence.event) return cite(best.sentence)
  const restated = restating(best.sentence, ranked.map(({ sentence }) => sentence)) ??
    ranked.find(({ sentence, coverage }) => sentence.event && coverage >= best.coverage * closeEnough)?.sentence
  if (restated !== undefined) return cite(restated)
  const own = best.sentence.sent === null || readDates === undefined ? null : timeSaid(best.sentence, readDates)
  if (own !== null) return `${own}: ${cite(best.sentence)}`
  // A question answered by the next message ("who has seen oppenheimer" — "me! went friday"): the reply's event.
  const lines = sentences.filter((sentence) => sentence.event && sentence.n === best.sentence.n)
  const replies = sentences.filter((sentence) =>
    !sentence.event && sentence.n === best.sentence.n && sentence.position > best.sentence.position &&
    sentence.position <= best.sentence.position + replyReach
  )
  for (const reply of replies) {
    const line = restating(reply, lines)
    if (line !== undefined) return cite(line)
  }
  // A sentence leaning on the one before for the question's words ("It's called Ribka" after "Cousin Ivan's
  // restaurant opened on Friday!", asked "When did Ribka open?"): that one's event.
  const before = sentences.find((sentence) =>
    !sentence.event && sentence.n === best.sentence.n && sentence.position === best.sentence.position - 1
  )
  const leanedOn = before === undefined || !best.leaned.some((word) => before.words.has(word))
    ? undefined
    : restating(before, lines)
  if (leanedOn !== undefined) return cite(leanedOn)
  return best.sentence.sent === null ? cite(best.sentence) : `${dayOfSent(best.sentence.sent)}: ${cite(best.sentence)}`
}

/** "It opened in 1889." cited [2] reads "It opened in 1889 [2]." */
const cite = (sentence: Sentence) => {
  const end = sentence.text.match(/[.!?…]+["”’)]*$/)
  return end === null
    ? `${sentence.text} [${sentence.n}]`
    : `${sentence.text.slice(0, end.index)} [${sentence.n}]${end[0]}`
}

/**
 * Answers `question` with the sources' most relevant sentences, in reading order, each cited. A question word is
 * weighted by its rarity among the sentences (a word no sentence has weighs most); a sentence scores the share of
 * the question's weight it contains, words found only in its title or the sentence before counting half.
 */
export const extractAnswer = (
  question: string,
  sources: ReadonlyArray<{ readonly n: number; readonly title: string; readonly text: string }>,
  readDates?: DateReader
): string => {
  const sentences = sources.flatMap(sentencesOf)
  // "On what date did Tom run the Bath Half?" asks for a date; "date" is no word the answer has.
  const asked = [...contentWords(question.replace(whenWords, ""))]
  if (sentences.length === 0 || asked.length === 0) return noAnswer
  const weight = new Map(asked.map((word) => {
    const frequency = sentences.filter((sentence) => sentence.words.has(word)).length
    return [word, Math.log(1 + sentences.length / (frequency === 0 ? 0.5 : frequency))]
  }))
  const total = asked.reduce((sum, word) => sum + weight.get(word)!, 0)
  const ranked = sentences.map((sentence) => {
    const own = asked.filter((word) => sentence.words.has(word))
    const leaned = asked.filter((word) =>
      !sentence.words.has(word) && (sentence.title.has(word) || sentence.previous.has(word))
    )
    const score = own.reduce((sum, word) => sum + weight.get(word)!, 0) +
      leaned.reduce((sum, word) => sum + weight.get(word)! / contextDiscount, 0)
    return { sentence, own, leaned, coverage: score / total }
  }).filter((candidate) => candidate.own.length > 0)
    .sort((a, b) =>
      b.coverage - a.coverage || a.sentence.n - b.sentence.n || a.sentence.text.length - b.sentence.text.length
    )
  const best = ranked[0]
  if (best === undefined || best.coverage < (asksWhen(question) ? minimumWhenCoverage : minimumCoverage)) return noAnswer
  const dated = asksWhen(question) && sentences.some((sentence) => sentence.event || sentence.sent !== null)
  if (dated) return datedAnswer(best, ranked, sentences, readDates)
  const chosen = [best]
  const covered = new Set([...best.own, ...best.leaned])
  for (const candidate of ranked.slice(1)) {
    if (chosen.length >= maxSentences) break
    if (chosen.some(({ sentence }) => overlap(sentence.words, candidate.sentence.words) >= nearDuplicate)) continue
    const adds = candidate.own.filter((word) => !covered.has(word))
    if (adds.length > 0 && candidate.coverage >= companionCoverage) {
      chosen.push(candidate)
      for (const word of adds) covered.add(word)
    }
  }
  const answer = chosen.map(({ sentence }) => sentence)
  // A sentence that leans on the one before ("It was completed in 1889") is preceded by it.
  for (const { sentence, leaned } of chosen) {
    const before = sentences.find((other) => other.n === sentence.n && other.position === sentence.position - 1)
    if (before !== undefined && !answer.includes(before) && leaned.some((word) => before.words.has(word))) {
      answer.push(before)
    }
  }
  return answer.sort((a, b) => a.n - b.n || a.position - b.position).map(cite).join(" ")
}

const userText = (message: Prompt.UserMessage) =>
  message.content.map((part) => (part.type === "text" ? part.text : "")).join("")

const promptText = (prompt: Prompt.Prompt) =>
  prompt.content.map((message) =>
    typeof message.content === "string"
      ? message.content
      : message.content.map((part) => ("text" in part ? part.text : "")).join("")
  ).join("\n")

/** Reads what `buildPrompt` wrote: the sources block of the system message and the last user message. */
const answerPrompt = (options: LanguageModel.ProviderOptions) =>
  Effect.gen(function*() {
    if (options.responseFormat.type === "json") {
      return yield* AiError.make({
        module: "ExtractiveLanguageModel",
        method: "generateObject",
        reason: new AiError.InvalidUserInputError({
          description: "the extractive provider only answers questions from sources; structured output needs an LLM " +
            "(ENGRAM_LLM_BASE_URL)"
        })
      })
    }
    const messages = options.prompt.content
    const sources = messages.flatMap((message) => message.role === "system" ? parseSources(message.content) : [])
    const last = messages.findLast((message) => message.role === "user")
    const question = last === undefined ? "" : userText(last)
    // chrono (about 3 MB of heap) is loaded by the first "when" question, not held by an idle service.
    const readDates = asksWhen(question) ? (yield* Effect.promise(() => import("chrono-node"))).parse : undefined
    const text = extractAnswer(question, sources, readDates)
    const usage: Response.FinishPartEncoded["usage"] = {
      inputTokens: { total: estimateTokens(promptText(options.prompt)) },
      outputTokens: { total: estimateTokens(text), text: estimateTokens(text) }
    }
    return { text, usage }
  })

const textId = "extractive-answer"

/** The built-in provider used when no LLM is configured: it selects and cites sentences, it never writes. */
export const extractiveLanguageModel: Effect.Effect<LanguageModel.LanguageModel> = LanguageModel.make({
  generateText: (options) =>
    Effect.map(answerPrompt(options), ({ text, usage }): Array<Response.PartEncoded> => [
      { type: "text", text },
      { type: "finish", reason: "stop", usage }
    ]),
  streamText: (options) =>
    Stream.unwrap(Effect.map(answerPrompt(options), ({ text, usage }) =>
      Stream.fromIterable<Response.StreamPartEncoded>([
        { type: "text-start", id: textId },
        ...(text.match(/\s*\S+/g) ?? []).map((delta) => ({ type: "text-delta" as const, id: textId, delta })),
        { type: "text-end", id: textId },
        { type: "finish", reason: "stop", usage }
      ])))
})
