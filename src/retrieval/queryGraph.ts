import type * as chrono from "chrono-node"
import { storable } from "../domain/Instant.ts"
import { isMonthAsWord, readableMay, sideOf } from "../extract/monthAlone.ts"
import { normalizeName } from "../extract/resolve.ts"

/** chrono-node's `parse`, passed in: the service loads chrono with its first graph search, not at start. */
export type DateReader = typeof chrono.parse

/** What a query says to the graph: names that may be entities, and a time it is about. */
export interface QueryCues {
  /**
   * A question or a request to list or name things ("Where is…", "Who runs…", "…?", "List the…"): what the graph
   * answers. A statement or keyword query is the text lists' to answer unless it has a time.
   */
  readonly asks: boolean
  /** Normalised n-grams of the query (1 to 4 words) to look up as entity keys. */
  readonly names: ReadonlyArray<string>
  /**
   * [start, end) in ISO; either side open for "before …" / "after …". Null: no time expression. `yearless`: a month
   * or day named without a year ("in June", "on February 9"), given here as the latest one that has begun by now;
   * the graph search moves it to a year its sources have events in (`inYear`).
   */
  readonly time: {
    readonly start: string | null
    readonly end: string | null
    readonly text: string
    readonly yearless: boolean
  } | null
  /**
   * A time relative to an event instead of a date ("before the merger", "after the acquisition"): the side and
   * the event kinds (verbs) the noun may name. Null when the query has a date, or no such phrase.
   */
  readonly anchor: { readonly side: "before" | "after"; readonly kinds: ReadonlyArray<string>; readonly text: string } | null
}

/** Nouns for events, by the verb (the event kind) they name; others are tried as verbs themselves. */
const eventNouns: Record<string, ReadonlyArray<string>> = {
  merger: ["merge"], acquisition: ["acquire", "buy", "purchase", "take over"], takeover: ["take over", "acquire"],
  purchase: ["purchase", "buy", "acquire"], sale: ["sell"], founding: ["found"], foundation: ["found"],
  launch: ["launch"], release: ["release"], announcement: ["announce"], opening: ["open"], closure: ["close"],
  closing: ["close"], election: ["elect"], appointment: ["appoint"], resignation: ["resign"], hiring: ["hire"],
  layoffs: ["lay off"], investment: ["invest"], partnership: ["partner"], lawsuit: ["sue"], ipo: ["list"],
  expansion: ["expand"], move: ["move"], relocation: ["relocate", "move"], retirement: ["retire"],
  departure: ["leave"], arrival: ["arrive"], death: ["die"], marriage: ["marry"], wedding: ["marry"],
  meeting: ["meet"], visit: ["visit"], split: ["split"], spinoff: ["spin off"]
}

const asking = /^\s*(?:who|whom|whose|what|when|where|which|why|how|list|name|show|tell|find|give)\b|\?["”')\]]*\s*$/i

const stopWords = new Set([
  "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "by", "with", "from", "about", "into",
  "what", "who", "whom", "which", "when", "where", "why", "how", "did", "does", "do", "is", "are", "was", "were",
  "be", "been", "has", "have", "had", "that", "this", "these", "those", "it", "its", "their", "his", "her", "they",
  "he", "she", "we", "you", "i", "me", "my", "our", "your", "after", "before", "since", "until", "during", "last",
  "next", "year", "month", "week", "day", "today", "yesterday", "tomorrow", "happened", "happen", "there", "any"
])

/**
 * Whether the graph answers a query: a question or request, or a query with a time. A statement or keyword query
 * without a time could only have chunks naming its entities re-weighed, which BM25 has ranked already (on SciFact's
 * claims that only added noise).
 */
export const answersQuery = (cues: QueryCues) => cues.asks || cues.time !== null || cues.anchor !== null

/**
 * The entity-name candidates and the time of a query. Time expressions are resolved against `now`; "before X"
 * and "until X" end at X's start, "after X" and "since X" start at X's end (or start for since).
 */
export const queryCues = (query: string, now: Date, readDates: DateReader): QueryCues => {
  // The names are read when asked for: a query the graph does not answer needs none.
  let names: ReadonlyArray<string> | undefined
  const cues = { get names() { return names ??= nameCandidates(query) } }
  const asks = asking.test(query)
  const read = timeIn(query, now, readDates)
  // "10000 years ago" is no time the database holds (it was a 500): the query is searched without it.
  const found = read !== null && storable(read.start) !== undefined && storable(read.end) !== undefined ? read : null
  if (found === null) return Object.assign(cues, { asks, time: null, anchor: anchorIn(query) })
  const { start, end } = found
  const before = query.slice(0, found.index).toLowerCase().match(/\b(before|until|till|prior to|after|since)\s*$/)?.[1]
  const yearless = found.yearless && before === undefined
  const time = before === "after"
    ? { start: end.toISOString(), end: null }
    : before === "since"
    ? { start: start.toISOString(), end: null }
    : before !== undefined
    ? { start: null, end: start.toISOString() }
    : { start: start.toISOString(), end: end.toISOString() }
  return Object.assign(cues, { asks, time: { ...time, text: found.text, yearless }, anchor: null })
}

/** The query's word n-grams (1 to 4 words, not beginning or ending with a stop word), normalised as entity keys. */
const nameCandidates = (query: string): ReadonlyArray<string> => {
  const words = query.split(/[^\p{L}\p{N}'’.&-]+/u).map((w) => w.replace(/^[.'’-]+|[.'’-]+$/g, "")).filter((w) => w !== "")
  const names = new Set<string>()
  for (let size = 1; size <= 4; size++) {
    for (let i = 0; i + size <= words.length; i++) {
      const gram = words.slice(i, i + size)
      if (stopWords.has(gram[0]!.toLowerCase()) || stopWords.has(gram[gram.length - 1]!.toLowerCase())) continue
      const key = normalizeName(gram.join(" "))
      if (key.length >= 2 && !/^\d+$/.test(key)) names.add(key)
    }
  }
  return [...names]
}

/** "before the merger", "after its acquisition", "since the launch": the side and the kinds of the event. */
const anchorIn = (query: string): QueryCues["anchor"] => {
  const match = /\b(before|prior to|until|after|since|following)\s+(?:the|its|their|his|her|our|that)\s+([\p{L}-]+)/iu
    .exec(query)
  if (match === null) return null
  const noun = match[2]!.toLowerCase()
  if (stopWords.has(noun)) return null
  const side = ["after", "since", "following"].includes(match[1]!.toLowerCase()) ? "after" : "before"
  return { side, kinds: eventNouns[noun] ?? [noun], text: match[0] }
}

/** The first time expression: chrono's, or a bare year ("in 2019"), which chrono leaves alone. */
const timeIn = (query: string, now: Date, readDates: DateReader) => {
  const parsed = readDates(readableMay(query), now).find((found) => !isMonthAsWord(found, query.slice(0, found.index)))
  if (parsed !== undefined) {
    const said = sideOf(query.slice(0, parsed.index))
    const which = said === "next" ? "next" : said === "last" ? "ended" : "begun"
    const { start, end, yearless } = periodOf(parsed.start, parsed.text, now, which)
    return {
      start,
      end: parsed.end?.date() ?? end,
      index: parsed.index,
      text: parsed.text,
      yearless: yearless && said === null && (parsed.end ?? null) === null
    }
  }
  const year = /\b(1[5-9]\d\d|2\d\d\d)\b/.exec(query)
  if (year === null) return null
  const value = Number(year[1])
  return {
    start: new Date(Date.UTC(value, 0, 1)),
    end: new Date(Date.UTC(value + 1, 0, 1)),
    index: year.index,
    text: year[0],
    yearless: false
  }
}

const dayMs = 86_400_000

/**
 * The whole period a date expression names (UTC), from the components it states: "last week", "this week" and
 * "two weeks ago" a week from Monday; a time of day from that time to the day's end; else the day, the month or the
 * year. chrono gives an instant inside it ("last week": now less seven days; "February 9": noon), which would leave
 * out what happened earlier in that period. A month or day without a year is the latest one that has begun by now
 * (after "last": that has ended; after "next": the first to begin after now), not chrono's nearest, which may lie
 * ahead: questions ask about the past.
 */
const periodOf = (component: chrono.ParsedComponents, text: string, now: Date, which: "begun" | "ended" | "next") => {
  const at = component.date()
  const day = (date: Date) => Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate())
  if (/\bweeks?\b/i.test(text)) {
    const inside = /\bthis\s+week\b/i.test(text) ? now : at
    const monday = day(inside) - ((inside.getUTCDay() + 6) % 7) * dayMs
    return { start: new Date(monday), end: new Date(monday + 7 * dayMs), yearless: false }
  }
  if (component.isCertain("hour")) return { start: at, end: new Date(day(at) + dayMs), yearless: false }
  if (component.isCertain("month") && !component.isCertain("year")) {
    const month = at.getUTCMonth()
    const dated = component.isCertain("day")
    const period = (year: number) => ({
      start: new Date(Date.UTC(year, month, dated ? at.getUTCDate() : 1)),
      end: new Date(dated ? Date.UTC(year, month, at.getUTCDate() + 1) : Date.UTC(year, month + 1, 1))
    })
    const year = now.getUTCFullYear()
    const thisYear = period(year)
    const chosen = which === "next"
      ? (thisYear.start > now ? year : year + 1)
      : (which === "ended" ? thisYear.end : thisYear.start) <= now
      ? year
      : year - 1
    return { ...period(chosen), yearless: true }
  }
  if (component.isCertain("day") || !component.isCertain("year")) {
    return { start: new Date(day(at)), end: new Date(day(at) + dayMs), yearless: false }
  }
  if (component.isCertain("month")) {
    return {
      start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
      end: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
      yearless: false
    }
  }
  return {
    start: new Date(Date.UTC(at.getUTCFullYear(), 0, 1)),
    end: new Date(Date.UTC(at.getUTCFullYear() + 1, 0, 1)),
    yearless: false
  }
}

/**
 * A yearless time moved to another year (its month and day kept); null when that year has no such day (29 February
 * outside leap years).
 */
export const inYear = (time: { readonly start: string; readonly end: string }, year: number) => {
  const start = new Date(time.start)
  const end = new Date(time.end)
  const moved = new Date(Date.UTC(year, start.getUTCMonth(), start.getUTCDate()))
  if (moved.getUTCMonth() !== start.getUTCMonth()) return null
  const endYear = year + end.getUTCFullYear() - start.getUTCFullYear()
  const until = new Date(Date.UTC(endYear, end.getUTCMonth(), end.getUTCDate()))
  return { start: moved.toISOString(), end: until.toISOString() }
}

/**
 * The notice telling which year a yearless time was read in: `"June" is read as June 2023, the latest June with
 * events in the searched sources` (`later`: the next one, none being earlier).
 */
export const yearNotice = (text: string, period: { readonly start: Date; readonly finish: Date }, later: boolean) => {
  const wholeMonth = period.start.getUTCDate() === 1 && period.finish.getUTCDate() === 1
  const read = period.start.toLocaleDateString("en-GB", {
    timeZone: "UTC",
    year: "numeric",
    month: "long",
    ...(wholeMonth ? {} : { day: "numeric" })
  })
  return `"${text}" is read as ${read}, the ${later ? "next" : "latest"} ${text} with events in the searched sources`
}

/** Levenshtein distance, stopping early once above `limit`. */
export const editDistance = (a: string, b: string, limit: number) => {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      current.push(value)
      best = Math.min(best, value)
    }
    if (best > limit) return limit + 1
    previous = current
  }
  return previous[b.length]!
}

/** Edits tolerated between a query word and an entity key: none for short names, one from 5, two from 9. */
export const fuzzLimit = (key: string) => key.length >= 9 ? 2 : key.length >= 5 ? 1 : 0
