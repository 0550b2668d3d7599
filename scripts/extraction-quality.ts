/**
 * Quality of the rule-based extractor on the hand-labelled fixture (bench/fixtures/extraction/labelled.json):
 * entity precision/recall/F1 (matched by normalised name — the entity's name or one of its aliases — and kind),
 * event precision/recall/F1 (matched by kind and actor; an event labelled without an actor matches by kind),
 * and time-normalisation accuracy (start instant and precision equal) over the labelled events that have a time.
 * Writes bench/results/extraction-quality.json.
 *   npm run quality:extraction -- [--verbose]
 */
import nlp from "compromise"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ExtractedEntity, ExtractedEvent, Extraction, ExtractionInput, TimeValue } from "../src/extract/Extraction.ts"
import { normalizeName } from "../src/extract/resolve.ts"
import { extractRules } from "../src/extract/rules.ts"
import { argument, machine } from "./lib/instance.ts"

interface LabelledEvent {
  readonly kind: string
  readonly participants: ReadonlyArray<{ readonly name: string; readonly role: string }>
  readonly time: { readonly start: string; readonly precision: TimeValue["precision"] } | null
}

interface LabelledItem {
  readonly id: string
  readonly genre: "news" | "meeting" | "chat"
  /** "dev": used while writing the rules; "heldout": labelled afterwards, never tuned on. */
  readonly split: "dev" | "heldout"
  readonly input: ExtractionInput
  readonly expected: {
    readonly entities: ReadonlyArray<{ readonly name: string; readonly kind: string }>
    readonly events: ReadonlyArray<LabelledEvent>
  }
}

const root = Path.resolve(import.meta.dirname, "..")
const fixture = JSON.parse(
  Fs.readFileSync(Path.join(root, "bench/fixtures/extraction/labelled.json"), "utf8")
) as { readonly items: ReadonlyArray<LabelledItem> }
const verbose = argument("verbose") !== undefined

interface Tally {
  items: number
  sentences: number
  entities: { expected: number; extracted: number; matched: number }
  events: { expected: number; extracted: number; matched: number }
  times: { labelled: number; correct: number; labelledOnMatched: number; correctOnMatched: number }
}

const emptyTally = (): Tally => ({
  items: 0,
  sentences: 0,
  entities: { expected: 0, extracted: 0, matched: 0 },
  events: { expected: 0, extracted: 0, matched: 0 },
  times: { labelled: 0, correct: 0, labelledOnMatched: 0, correctOnMatched: 0 }
})

const namesOf = (entity: ExtractedEntity) => new Set([entity.name, ...entity.aliases].map(normalizeName))

const actorsOf = (event: ExtractedEvent, extraction: Extraction) =>
  event.participants
    .filter((participant) => participant.role === "actor")
    .flatMap((participant) => extraction.entities.filter((entity) => entity.key === participant.entity))

const sameTime = (labelled: NonNullable<LabelledEvent["time"]>, time: TimeValue | null) =>
  time !== null && Date.parse(labelled.start) === Date.parse(time.start) && labelled.precision === time.precision

const describeTime = (time: TimeValue | null) => (time === null ? "null" : `${time.start} ${time.precision}`)

const sentenceCount = (input: ExtractionInput) =>
  input.chunks.reduce(
    (sum, chunk) =>
      sum + chunk.text.split("\n").filter((line) => line.trim().length > 0).reduce((n, line) => n + nlp(line).sentences().length, 0),
    0
  )

const score = (item: LabelledItem): Tally => {
  const extraction = extractRules(item.input)
  const tally = emptyTally()
  tally.items = 1
  tally.sentences = sentenceCount(item.input)

  const unmatchedEntities = [...extraction.entities]
  for (const expected of item.expected.entities) {
    const key = normalizeName(expected.name)
    const index = unmatchedEntities.findIndex((entity) => entity.kind === expected.kind && namesOf(entity).has(key))
    if (index >= 0) {
      unmatchedEntities.splice(index, 1)
      tally.entities.matched++
    } else if (verbose) console.log(`  [${item.id}] missed entity ${expected.name} (${expected.kind})`)
  }
  if (verbose) {
    for (const entity of unmatchedEntities) console.log(`  [${item.id}] extra entity ${entity.name} (${entity.kind})`)
  }
  tally.entities.expected += item.expected.entities.length
  tally.entities.extracted += extraction.entities.length

  const unmatchedEvents = [...extraction.events]
  for (const expected of item.expected.events) {
    const actor = expected.participants.find((participant) => participant.role === "actor")
    const candidates = unmatchedEvents.filter((event) =>
      event.kind === expected.kind &&
      (actor === undefined || actorsOf(event, extraction).some((entity) => namesOf(entity).has(normalizeName(actor.name))))
    )
    const chosen = candidates.find((event) => expected.time !== null && sameTime(expected.time, event.time)) ?? candidates[0]
    if (expected.time !== null) tally.times.labelled++
    if (chosen === undefined) {
      if (verbose) console.log(`  [${item.id}] missed event ${expected.kind} by ${actor?.name ?? "-"}`)
      continue
    }
    unmatchedEvents.splice(unmatchedEvents.indexOf(chosen), 1)
    tally.events.matched++
    if (expected.time !== null) {
      tally.times.labelledOnMatched++
      if (sameTime(expected.time, chosen.time)) {
        tally.times.correct++
        tally.times.correctOnMatched++
      } else if (verbose) {
        console.log(`  [${item.id}] time of ${expected.kind}: expected ${expected.time.start} ${expected.time.precision}, got ${describeTime(chosen.time)}`)
      }
    }
  }
  if (verbose) {
    for (const event of unmatchedEvents) {
      const actors = actorsOf(event, extraction).map((entity) => entity.name).join(", ") || "-"
      console.log(`  [${item.id}] extra event ${event.kind} by ${actors}: ${event.statement}`)
    }
  }
  tally.events.expected += item.expected.events.length
  tally.events.extracted += extraction.events.length
  return tally
}

const addInto = (target: Tally, tally: Tally) => {
  target.items += tally.items
  target.sentences += tally.sentences
  for (const part of ["entities", "events"] as const) {
    target[part].expected += tally[part].expected
    target[part].extracted += tally[part].extracted
    target[part].matched += tally[part].matched
  }
  target.times.labelled += tally.times.labelled
  target.times.correct += tally.times.correct
  target.times.labelledOnMatched += tally.times.labelledOnMatched
  target.times.correctOnMatched += tally.times.correctOnMatched
}

const ratio = (numerator: number, denominator: number) => (denominator === 0 ? null : numerator / denominator)
const prf = (counts: { expected: number; extracted: number; matched: number }) => {
  const precision = ratio(counts.matched, counts.extracted)
  const recall = ratio(counts.matched, counts.expected)
  const f1 = precision === null || recall === null || precision + recall === 0 ? null : (2 * precision * recall) / (precision + recall)
  return { ...counts, precision, recall, f1 }
}
const summary = (tally: Tally) => ({
  items: tally.items,
  sentences: tally.sentences,
  entities: prf(tally.entities),
  events: prf(tally.events),
  time: {
    labelled: tally.times.labelled,
    correct: tally.times.correct,
    accuracy: ratio(tally.times.correct, tally.times.labelled),
    labelled_on_matched_events: tally.times.labelledOnMatched,
    accuracy_on_matched_events: ratio(tally.times.correctOnMatched, tally.times.labelledOnMatched)
  }
})

const overall = emptyTally()
const byGenre = new Map<string, Tally>()
const bySplit = new Map<string, Tally>()
for (const item of fixture.items) {
  const tally = score(item)
  addInto(overall, tally)
  for (const [groups, name] of [[byGenre, item.genre], [bySplit, item.split]] as const) {
    if (!groups.has(name)) groups.set(name, emptyTally())
    addInto(groups.get(name)!, tally)
  }
}

const percent = (value: number | null) => (value === null ? "  n/a" : `${(value * 100).toFixed(1).padStart(5)}%`)
const line = (label: string, tally: Tally) => {
  const s = summary(tally)
  console.log(
    `${label.padEnd(8)} entities P ${percent(s.entities.precision)} R ${percent(s.entities.recall)} F1 ${percent(s.entities.f1)}` +
      ` | events P ${percent(s.events.precision)} R ${percent(s.events.recall)} F1 ${percent(s.events.f1)}` +
      ` | time ${percent(s.time.accuracy)} (${s.time.correct}/${s.time.labelled}; ${percent(s.time.accuracy_on_matched_events)} on matched events)`
  )
}
console.log(`${overall.items} documents, ${overall.sentences} sentences`)
line("all", overall)
for (const [genre, tally] of byGenre) line(genre, tally)
for (const [split, tally] of bySplit) line(split, tally)

const result = {
  fixture: "bench/fixtures/extraction/labelled.json",
  extractor: "rules",
  matching: {
    entities: "normalised name (entity name or alias) and kind, one to one",
    events: "kind and actor (kind alone when the label has no actor), one to one",
    time: "start instant and precision equal; accuracy over labelled times (a missed event counts as wrong)"
  },
  ...summary(overall),
  by_genre: Object.fromEntries([...byGenre].map(([genre, tally]) => [genre, summary(tally)])),
  by_split: Object.fromEntries([...bySplit].map(([split, tally]) => [split, summary(tally)])),
  machine: machine(),
  date: new Date().toISOString()
}
Fs.mkdirSync(Path.join(root, "bench/results"), { recursive: true })
Fs.writeFileSync(Path.join(root, "bench/results/extraction-quality.json"), `${JSON.stringify(result, null, 2)}\n`)
console.log("written bench/results/extraction-quality.json")
