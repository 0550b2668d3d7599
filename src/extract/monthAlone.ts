import type * as chrono from "chrono-node"

/** Words that make a month named alone a time: "in June", "since March", "last August", "mid-June", "of May". */
const timeWord = new RegExp(
  `\\b(?:${["in", "during", "since", "until", "till", "by", "before", "after", "between", "from", "through", "throughout",
    "early", "mid", "late", "last", "next", "this", "past", "coming", "of", "around"].join("|")})[\\s-]+$`,
  "i"
)

/**
 * Whether a date chrono read is a month named alone (no day, year or weekday; no range) with no word before it that
 * makes it a time: then it is a name or a word, not a time ("April said", "Who is June?", "the March for Science",
 * "the august committee"). `before` is the text before the date.
 */
export const isMonthAsWord = (found: chrono.ParsedResult, before: string) =>
  found.start.isCertain("month") && !found.start.isCertain("day") && !found.start.isCertain("year") &&
  !found.start.isCertain("weekday") && (found.end ?? null) === null && !timeWord.test(before)

/**
 * The text as chrono should read it: chrono reads "May" alone only after "in" (it is also a verb), so "last May",
 * "next May", "this May" reach it as "in   May", of the same length (its offsets hold); the word before the month
 * is read from the text itself.
 */
export const readableMay = (text: string) =>
  text.replace(/\b([Ll]ast|[Pp]ast|[Nn]ext|[Cc]oming|[Tt]his)(\s+)(?=May\b)/g, (_, word: string, space: string) =>
    "in".padEnd(word.length) + space)

/**
 * The word just before a date that fixes which one it is: "last June" (or "past") the latest one over, "next June"
 * (or "coming") the first one ahead, "this June" the one of now; null when there is none.
 */
export const sideOf = (before: string): "last" | "this" | "next" | null => {
  const word = /\b(last|past|this|next|coming)\s*$/i.exec(before)?.[1]?.toLowerCase()
  if (word === undefined) return null
  return word === "past" ? "last" : word === "coming" ? "next" : word as "last" | "this" | "next"
}
