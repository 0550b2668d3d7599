/**
 * The LoCoMo conversational benchmark's file format (`locomo10.json`: an array of samples, each a two-person
 * multi-session conversation with questions and their evidence turns), read into the shape of the development set
 * (bench/fixtures/conversations), so `npm run eval:conversations -- --locomo FILE` measures a held-out set with the
 * same code. The file is not in this repository: LoCoMo is held out, and its licence is the publisher's.
 *
 * - A session is one `messages` document dated by its `session_N_date_time` ("1:56 pm on 8 May, 2023", read as
 *   UTC); its first message carries that time and the others inherit it, as the API documents.
 * - A turn's shared photo is part of its message as "[shares a photo: caption]".
 * - Categories as LoCoMo's evaluation numbers them: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop;
 *   5 (adversarial: the answer is not in the conversation) is left out, having no evidence to find.
 * - A temporal question has an answer date when its answer is one day ("7 May 2023", "May 7, 2023").
 * - Expected entities come from a separate file (`--locomo-entities`, `{ "<sample_id>": [{ name, kind, aliases }] }`),
 *   labelled from the conversations alone; without it, entity precision is not measured.
 */
import * as Fs from "node:fs"

export interface LogMessage {
  readonly id: string
  readonly speaker: string
  readonly timestamp?: string
  readonly content: string
}

export interface ExpectedEntity {
  readonly name: string
  readonly kind: string
  readonly aliases: ReadonlyArray<string>
}

export interface Log {
  readonly id: string
  readonly title: string
  readonly sessions: ReadonlyArray<{ readonly id: string; readonly date: string; readonly messages: ReadonlyArray<LogMessage> }>
  readonly expected_entities: ReadonlyArray<ExpectedEntity>
}

export interface Question {
  readonly id: string
  readonly log: string
  readonly question: string
  readonly category: string
  readonly evidence: ReadonlyArray<string>
  readonly answer: string
  readonly answer_date: string | null
}

interface Turn {
  readonly speaker: string
  readonly dia_id: string
  readonly text: string
  readonly blip_caption?: string
}

interface Sample {
  readonly sample_id: string
  readonly conversation: Record<string, unknown>
  readonly qa: ReadonlyArray<{
    readonly question: string
    readonly answer?: string | number
    readonly evidence: ReadonlyArray<string>
    readonly category: number
  }>
}

const categories: Record<number, string> = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop" }
/** Month names in lower case, January first. */
export const months = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
  "november", "december"]
const pad = (n: number) => String(n).padStart(2, "0")
const monthOf = (word: string) => months.indexOf(word.toLowerCase()) + 1

/** "1:56 pm on 8 May, 2023" as an ISO time (UTC). */
export const sessionTime = (text: string): string => {
  const found = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$/i.exec(text)
  if (found === null || monthOf(found[5]!) === 0) throw new Error(`unreadable session time: ${text}`)
  const hour = Number(found[1]) % 12 + (found[3]!.toLowerCase() === "pm" ? 12 : 0)
  return `${found[6]}-${pad(monthOf(found[5]!))}-${pad(Number(found[4]))}T${pad(hour)}:${found[2]}:00Z`
}

/** The day an answer names when it is one day and nothing else ("7 May 2023", "May 7, 2023"). */
export const answerDate = (answer: string): string | null => {
  const text = answer.trim().replace(/\.$/, "")
  const dayFirst = /^(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$/.exec(text)
  const monthFirst = /^([A-Za-z]+)\s+(\d{1,2}),?\s+(\d{4})$/.exec(text)
  const [day, month, year] = dayFirst !== null
    ? [dayFirst[1]!, dayFirst[2]!, dayFirst[3]!]
    : monthFirst !== null
    ? [monthFirst[2]!, monthFirst[1]!, monthFirst[3]!]
    : []
  if (day === undefined || monthOf(month!) === 0) return null
  return `${year}-${pad(monthOf(month!))}-${pad(Number(day))}`
}

/** Every sample of a LoCoMo file as a log, with its questions (categories 1–4). */
export const readLocomo = (
  file: string,
  entitiesFile: string | undefined
): { readonly logs: ReadonlyArray<Log>; readonly questions: ReadonlyArray<Question> } => {
  const samples = JSON.parse(Fs.readFileSync(file, "utf8")) as ReadonlyArray<Sample>
  const labelled = entitiesFile === undefined
    ? {}
    : JSON.parse(Fs.readFileSync(entitiesFile, "utf8")) as Record<string, ReadonlyArray<ExpectedEntity>>
  const logs = samples.map((sample): Log => {
    const conversation = sample.conversation
    const numbers = Object.keys(conversation)
      .flatMap((key) => /^session_(\d+)$/.exec(key)?.[1] ?? [])
      .map(Number)
      .sort((a, b) => a - b)
    return {
      id: sample.sample_id,
      title: `${conversation["speaker_a"]} and ${conversation["speaker_b"]}`,
      sessions: numbers.map((n) => {
        const time = sessionTime(String(conversation[`session_${n}_date_time`]))
        const turns = conversation[`session_${n}`] as ReadonlyArray<Turn>
        return {
          id: `session_${n}`,
          date: time.slice(0, 10),
          messages: turns.map((turn, i) => ({
            id: `${sample.sample_id}/${turn.dia_id}`,
            speaker: turn.speaker,
            ...(i === 0 ? { timestamp: time } : {}),
            content: turn.blip_caption === undefined || turn.blip_caption === ""
              ? turn.text
              : `${turn.text} [shares a photo: ${turn.blip_caption}]`
          }))
        }
      }),
      expected_entities: labelled[sample.sample_id] ?? []
    }
  })
  const questions = samples.flatMap((sample) =>
    sample.qa.flatMap((item, i): Array<Question> => {
      const category = categories[item.category]
      if (category === undefined || item.answer === undefined) return []
      const answer = String(item.answer)
      return [{
        id: `${sample.sample_id}-q${i + 1}`,
        log: sample.sample_id,
        question: item.question,
        category,
        // Some evidence entries hold two ids ("D8:6; D9:17").
        evidence: item.evidence.flatMap((entry) => entry.match(/D\d+:\d+/g) ?? []).map((id) => `${sample.sample_id}/${id}`),
        answer,
        answer_date: category === "temporal" ? answerDate(answer) : null
      }]
    })
  )
  return { logs, questions }
}
