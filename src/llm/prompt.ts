import { Prompt } from "effect/ai"
import { countTokens } from "../ingest/chunk.ts"

/** A chat message in a passage: offsets in the passage's text. */
export interface PassageMessage {
  readonly speaker: string
  readonly spokenAt: string | null
  readonly start: number
  readonly end: number
}

/** An event of a passage whose time its text states ("yesterday", "in May"), resolved to a date. */
export interface DatedEvent {
  readonly statement: string
  readonly actor: string | null
  readonly start: string
  readonly end: string | null
  readonly precision: string
}

/** A retrieved chunk as the model sees it: `[n]` in the sources block and in the answer's citations. */
export interface Passage {
  readonly n: number
  readonly chunkId: string
  readonly documentId: string
  readonly sourceId: string
  readonly title: string
  readonly text: string
  /** Chat messages: each is shown with the date it was sent. */
  readonly messages?: ReadonlyArray<PassageMessage> | undefined
  /** Shown after the text with their resolved dates. */
  readonly events?: ReadonlyArray<DatedEvent> | undefined
}

export interface HistoryMessage {
  readonly role: "user" | "assistant"
  readonly content: string
}

/**
 * Approximate tokens: words and punctuation marks, or a quarter of the characters when that is more (long
 * identifiers, URLs and non-Latin scripts split into many more tokens than words).
 */
export const estimateTokens = (text: string): number => Math.max(countTokens(text), Math.ceil(text.length / 4))

/** The fixed rule every answer follows, whatever the agent's instructions say. */
export const answeringRule =
  "Answer the question using only the numbered sources below. After each statement, cite the source it comes " +
  "from by its number in square brackets, such as [1] or [2][3]. If the sources do not contain the answer, say " +
  "plainly that they do not, and do not guess."

/** The line after a passage's text that opens its dated events. */
export const eventsHeading = "Dates of the events above:"

/** Said before the rule when sources hold dated messages or events. */
export const datingRule =
  "Chat messages in the sources open with the time they were sent in square brackets; a relative time in a " +
  `message ("yesterday", "last week") counts from that time. After a source, "${eventsHeading}" lists what its ` +
  "text says happened with the date that time resolves to. Answer questions about when something happened with " +
  "that date."

const sourcesOpen = "<sources>"
const sourcesClose = "</sources>"
const noSources = "(no sources were found)"
const truncationMark = " …"

const header = (n: number, title: string) => `[${n}] ${title.replace(/\s+/g, " ").trim() || "Untitled"}`

const monthNames = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
  "November", "December"]
const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const pad = (n: number) => String(n).padStart(2, "0")
const dayOf = (date: Date) => `${date.getUTCDate()} ${monthNames[date.getUTCMonth()]} ${date.getUTCFullYear()}`

/** "Mon 8 May 2023, 14:05 UTC": when a message was sent. */
export const sentAt = (iso: string) => {
  const date = new Date(iso)
  return `${weekdays[date.getUTCDay()]} ${dayOf(date)}, ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())} UTC`
}

/** The instant `sentAt` wrote, read back; null for any other text. */
export const sentInstant = (text: string): Date | null => {
  const sent = /(\d{1,2}) ([A-Z][a-z]+) (\d{4}), (\d{2}):(\d{2}) UTC/.exec(text)
  const month = sent === null ? -1 : monthNames.indexOf(sent[2]!)
  return sent === null || month < 0
    ? null
    : new Date(Date.UTC(Number(sent[3]), month, Number(sent[1]), Number(sent[4]), Number(sent[5])))
}

/** An event's time at its precision: "7 May 2023", "the week of 1 May 2023", "May 2023", "2023", "the 2010s". */
export const eventTime = (event: Pick<DatedEvent, "start" | "end" | "precision">) => {
  const start = new Date(event.start)
  // A day given in a message's own UTC offset starts before or after UTC midnight: its middle is on the right day.
  const middle = event.end === null ? start : new Date((start.getTime() + new Date(event.end).getTime()) / 2)
  switch (event.precision) {
    case "decade":
      return `the ${Math.floor(middle.getUTCFullYear() / 10) * 10}s`
    case "year":
      return String(middle.getUTCFullYear())
    case "quarter":
      return `Q${Math.floor(middle.getUTCMonth() / 3) + 1} ${middle.getUTCFullYear()}`
    case "month":
      return `${monthNames[middle.getUTCMonth()]} ${middle.getUTCFullYear()}`
    case "week":
      return `the week of ${dayOf(new Date(start.getTime() + 12 * 3_600_000))}`
    case "day":
      return dayOf(middle)
    default:
      return dayOf(start)
  }
}

/**
 * Who said a statement, read from the chat messages of a passage (each message's text with its spaces collapsed, once):
 * an event line is labelled by who said it ("Sofia: My cat Luna turned five yesterday"), not by its actor, which
 * would read as the speaker.
 */
const speakerFinder = (passage: Passage) => {
  const said = (passage.messages ?? []).map((message) => ({
    speaker: message.speaker,
    text: passage.text.slice(message.start, message.end).replace(/\s+/g, " ")
  }))
  return (statement: string): string | null => said.find((message) => message.text.includes(statement))?.speaker ?? null
}

/**
 * Each message opens with the time it was sent; the events whose time the text states follow with their dates, each
 * labelled by who said it in a chat, else by its actor.
 */
const passageText = (passage: Passage) => {
  let text = passage.text
  const messages = [...(passage.messages ?? [])].filter((message) => message.spokenAt !== null && message.start >= 0 &&
    message.start < text.length).sort((a, b) => b.start - a.start)
  for (const message of messages) {
    text = `${text.slice(0, message.start)}[${sentAt(message.spokenAt!)}] ${text.slice(message.start)}`
  }
  const events = passage.events ?? []
  if (events.length === 0) return text
  const saidBy = speakerFinder(passage)
  const lines = events.map((event) => {
    const statement = event.statement.replace(/\s+/g, " ").trim()
    const by = saidBy(statement) ?? event.actor
    return `- ${eventTime(event)} — ${by === null ? "" : `${by}: `}${statement}`
  })
  return `${text.trim()}\n${eventsHeading}\n${lines.join("\n")}`
}

/** Blank lines inside a passage are collapsed, so a blank line in the block always separates two sources. */
const renderPassage = (passage: Passage) =>
  `${header(passage.n, passage.title)}\n${passageText(passage).trim().replace(/\n[ \t]*\n\s*/g, "\n")}`

/** The longest word-boundary prefix of `text` whose estimate fits `budget` tokens, marked as cut. */
const truncateToTokens = (text: string, budget: number): string => {
  const words = text.match(/\s*\S+/g) ?? []
  let low = 0
  let high = words.length
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (estimateTokens(words.slice(0, middle).join("") + truncationMark) <= budget) low = middle
    else high = middle - 1
  }
  return low === 0 ? "" : words.slice(0, low).join("").trim() + truncationMark
}

export const fitPassages = (
  passages: ReadonlyArray<Omit<Passage, "n">>,
  budgetTokens: number
): ReadonlyArray<Passage> => {
  const fitted: Array<Passage> = []
  let used = 0
  for (const passage of passages) {
    const n = fitted.length + 1
    const numbered = { ...passage, n }
    const cost = estimateTokens(renderPassage(numbered))
    if (used + cost <= budgetTokens) {
      fitted.push(numbered)
      used += cost
    } else {
      if (n === 1) {
        const room = Math.max(1, budgetTokens - estimateTokens(header(1, passage.title)))
        fitted.push({ ...numbered, text: truncateToTokens(passage.text, room), events: [] })
      }
      break
    }
  }
  return fitted
}

const sourcesBlock = (passages: ReadonlyArray<Passage>) =>
  [sourcesOpen, passages.length === 0 ? noSources : passages.map(renderPassage).join("\n\n"), sourcesClose].join("\n")

export const buildPrompt = (input: {
  readonly instructions: string
  readonly passages: ReadonlyArray<Passage>
  readonly history: ReadonlyArray<HistoryMessage>
  readonly question: string
}): Prompt.Prompt => {
  const instructions = input.instructions.trim()
  const dated = input.passages.some((passage) => (passage.messages ?? []).length > 0 || (passage.events ?? []).length > 0)
  const system = [
    ...(instructions === "" ? [] : [instructions]),
    ...(dated ? [datingRule] : []),
    answeringRule,
    sourcesBlock(input.passages)
  ].join("\n\n")
  return Prompt.make([
    { role: "system", content: system },
    ...input.history.map((message) => ({ role: message.role, content: message.content })),
    { role: "user", content: input.question }
  ])
}

/** A source read back from a prompt that `buildPrompt` wrote. */
export interface PromptSource {
  readonly n: number
  readonly title: string
  readonly text: string
}

/**
 * The numbered sources of a system message written by `buildPrompt`: none when it has no sources block. A source
 * starts at a blank line followed by the next number's header (passages themselves have no blank lines).
 */
export const parseSources = (system: string): ReadonlyArray<PromptSource> => {
  const opening = `${answeringRule}\n\n${sourcesOpen}\n`
  const start = system.indexOf(opening)
  const end = system.lastIndexOf(`\n${sourcesClose}`)
  if (start < 0 || end < start + opening.length) return []
  const lines = system.slice(start + opening.length, end).split("\n")
  const sources: Array<{ n: number; title: string; lines: Array<string> }> = []
  lines.forEach((line, index) => {
    const next = sources.length + 1
    const prefix = `[${next}] `
    if (line.startsWith(prefix) && (index === 0 || lines[index - 1] === "")) {
      sources.push({ n: next, title: line.slice(prefix.length), lines: [] })
    } else {
      sources.at(-1)?.lines.push(line)
    }
  })
  return sources.map((source) => ({ n: source.n, title: source.title, text: source.lines.join("\n").trim() }))
}

export const citedNumbers = (answer: string, passageCount: number): ReadonlyArray<number> => {
  const cited: Array<number> = []
  for (const match of answer.matchAll(/\[(\d+(?:\s*[,;]\s*\d+)*)\]/g)) {
    for (const digits of match[1]!.split(/\s*[,;]\s*/)) {
      const n = Number(digits)
      if (n >= 1 && n <= passageCount && !cited.includes(n)) cited.push(n)
    }
  }
  return cited
}
