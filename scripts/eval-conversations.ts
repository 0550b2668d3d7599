/**
 * Conversational memory on the hand-written development set (bench/fixtures/conversations), or with `--locomo FILE`
 * on a held-out set in LoCoMo's format (scripts/lib/locomo.ts): each log is one source with one `messages` document
 * per session, ingested through the real pipeline (extraction included).
 * Reports per log and overall:
 * - entity precision of the top 25 entities by mentions, ties by name (correct: its name or an alias equals, normalised, an
 *   expected entity's name or alias; "by name": its own name does; "kind": and its kind is the expected one) and how
 *   many expected entities were found among all of the source's (logs without expected entities are left out);
 * - evidence recall@3 and @10 per question category for lexical, multi without the graph and multi (an evidence
 *   message is found when a returned chunk holds its text);
 * - temporal answer accuracy of `ask` (the instance's answerer: extractive without an LLM) on questions with an
 *   answer_date (the date in any common spelling).
 * Writes bench/results/eval-conversations.json (eval-conversations-locomo.json with --locomo).
 *   npm run eval:conversations -- [--model-dir DIR] [--logs log-01,log-02] [--verbose]
 *     [--locomo locomo10.json [--locomo-entities entities.json]]
 * Embedded PGlite by default; DATABASE_URL for PostgreSQL.
 */
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { UserId } from "../src/domain/User.ts"
import { normalizeName } from "../src/extract/resolve.ts"
import { argument, call, machine, startInstance, waitForSource } from "./lib/instance.ts"
import { type Log, months, type Question, readLocomo } from "./lib/locomo.ts"
import { mean } from "./lib/metrics.ts"

interface EntityRow {
  readonly name: string
  readonly kind: string
  readonly aliases: ReadonlyArray<string>
  readonly mention_count: number
}

const root = Path.resolve(import.meta.dirname, "..")
const folder = Path.join(root, "bench/fixtures/conversations")
const locomo = argument("locomo")
const chosen = argument("logs")?.split(",")
const set = locomo !== undefined
  ? readLocomo(Path.resolve(locomo), argument("locomo-entities"))
  : {
    logs: Fs.readdirSync(folder)
      .filter((file) => /^log-\d+\.json$/.test(file))
      .sort()
      .map((file) => JSON.parse(Fs.readFileSync(Path.join(folder, file), "utf8")) as Log),
    questions: (JSON.parse(Fs.readFileSync(Path.join(folder, "questions.json"), "utf8")) as {
      questions: ReadonlyArray<Question>
    }).questions
  }
const logs = set.logs.filter((log) => chosen === undefined || chosen.includes(log.id))
const questions = set.questions
const modelDir = argument("model-dir")
const verbose = argument("verbose") !== undefined
const categories = ["single-hop", "multi-hop", "temporal", "open-domain"]
  .filter((category) => questions.some((question) => question.category === category))
const runs = [
  { name: "lexical", strategy: "lexical" as const, graph: true },
  { name: "multi-graph", strategy: "multi" as const, graph: false },
  { name: "multi", strategy: "multi" as const, graph: true }
]
const topEntities = 25

const squashed = (text: string) => text.replace(/\s+/g, " ").trim()

/** A chunk holds the message when it contains its text, or (a long message split) the chunk lies inside it. */
const holds = (chunk: string, message: string) => {
  const a = squashed(chunk)
  const b = squashed(message)
  return a.includes(b) || (a.length >= 40 && b.includes(a.replace(/^[^:]{1,60}:\s*/, "")))
}


/** 2023-05-07, 7 May 2023, 7th of May, May 7, 2023, May 7th, 07/05/2023, 05/07/2023. */
const mentionsDate = (answer: string, iso: string) => {
  const [year, month, day] = iso.split("-").map(Number) as [number, number, number]
  const name = months[month - 1]!
  const monthWord = `(?:${name}|${name.slice(0, 3)}\\.?)`
  const dayWord = `0?${day}(?:st|nd|rd|th)?`
  const text = answer.toLowerCase()
  const pad = (n: number) => String(n).padStart(2, "0")
  return text.includes(iso) ||
    new RegExp(`\\b${dayWord}\\s+(?:of\\s+)?${monthWord}(?![a-z])`).test(text) ||
    new RegExp(`\\b${monthWord}\\s+(?:the\\s+)?${dayWord}\\b`).test(text) ||
    text.includes(`${pad(day)}/${pad(month)}/${year}`) || text.includes(`${pad(month)}/${pad(day)}/${year}`) ||
    text.includes(`${day}/${month}/${year}`) || text.includes(`${month}/${day}/${year}`)
}

const entityNames = (entity: { readonly name: string; readonly aliases: ReadonlyArray<string> }) =>
  new Set([entity.name, ...entity.aliases].map(normalizeName).filter((key) => key.length > 0))

const program = Effect.gen(function*() {
  const instance = yield* startInstance({
    embedModelDir: modelDir === undefined ? Option.none() : Option.some(Path.resolve(modelDir)),
    embedModel: modelDir === undefined ? "none" : "local"
  })
  const { url, retriever } = instance
  const session = yield* Effect.promise(() => call(url, "/api/v1/auth/login", { json: { name: "conversation-evaluator" } }))
  const token: string = session.access_token
  const owner = session.user.id as UserId
  const started = performance.now()

  const perLog: Array<Record<string, unknown>> = []
  const recall = new Map<string, Array<number>>()
  const temporal: Array<number> = []
  const precisions: Array<{ correct: number; listed: number; byName: number; kindRight: number }> = []
  const found: Array<{ found: number; expected: number }> = []
  const note = (key: string, value: number) => recall.set(key, [...(recall.get(key) ?? []), value])

  for (const log of logs) {
    const source = yield* Effect.promise(() =>
      call(url, "/api/v1/sources", { token, json: { name: log.id, connector_kind: "file_upload", config: {} } })
    )
    for (const one of log.sessions) {
      yield* Effect.promise(() =>
        call(url, `/api/v1/sources/${source.id}/documents/ingest`, {
          token,
          json: {
            title: `${log.id} ${one.id} (${one.date})`,
            messages: one.messages.map((message) => ({
              speaker: message.speaker,
              content: message.content,
              ...(message.timestamp === undefined ? {} : { timestamp: message.timestamp })
            }))
          }
        })
      )
    }
    yield* Effect.promise(() => waitForSource(url, token, source.id, log.sessions.length))

    const entities: Array<EntityRow> = []
    for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
      const page: { items: Array<EntityRow>; next_cursor: string | null } = yield* Effect.promise(() =>
        call(url, `/api/v1/sources/${source.id}/entities?sort=mentions&limit=100${cursor === null ? "" : `&cursor=${cursor}`}`, { token })
      )
      entities.push(...page.items)
      cursor = page.next_cursor
    }
    // The API breaks ties between equal counts by id (random); by name here, so that a run repeats.
    entities.sort((a, b) => b.mention_count - a.mention_count || a.name.localeCompare(b.name))
    const expected = log.expected_entities.map(entityNames)
    const isExpected = (entity: EntityRow) => {
      const names = entityNames(entity)
      return expected.some((keys) => [...keys].some((key) => names.has(key)))
    }
    const expectedOf = (entity: EntityRow) => {
      const names = entityNames(entity)
      return log.expected_entities.find((_, i) => [...expected[i]!].some((key) => names.has(key)))
    }
    // Stricter: the entity's own name is an expected name or alias ("Thanks Pri" aka Pri is not).
    const isExpectedByName = (entity: EntityRow) => expected.some((keys) => keys.has(normalizeName(entity.name)))
    const top = entities.slice(0, topEntities)
    const correct = top.filter(isExpected).length
    const correctByName = top.filter(isExpectedByName).length
    const kindRight = top.filter((entity) => expectedOf(entity)?.kind === entity.kind).length
    const foundCount = expected.filter((keys) => entities.some((entity) => [...entityNames(entity)].some((key) => keys.has(key)))).length
    const labelled = expected.length > 0
    if (labelled) {
      precisions.push({ correct, listed: top.length, byName: correctByName, kindRight })
      found.push({ found: foundCount, expected: expected.length })
    }

    const messages = new Map(log.sessions.flatMap((one) => one.messages.map((message) => [message.id, message.content] as const)))
    const logQuestions = questions.filter((question) => question.log === log.id)
    const logRecall = new Map<string, Array<number>>()
    for (const run of runs) {
      for (const question of logQuestions) {
        const response = yield* retriever.search({
          owner,
          query: question.question,
          strategy: run.strategy,
          topK: 10,
          sourceIds: [source.id],
          saveExploration: false,
          graph: run.graph
        }).pipe(Effect.orDie)
        const texts = response.results.map((result) => result.text)
        for (const k of [3, 10]) {
          const shown = texts.slice(0, k)
          const share = question.evidence.filter((id) => shown.some((text) => holds(text, messages.get(id) ?? "\u0000"))).length /
            Math.max(question.evidence.length, 1)
          for (const key of [`${run.name}|${question.category}|${k}`, `${run.name}|all|${k}`]) {
            note(key, share)
            logRecall.set(key, [...(logRecall.get(key) ?? []), share])
          }
        }
      }
    }

    const agent = yield* Effect.promise(() =>
      call(url, "/api/v1/agents", {
        token,
        json: { name: `${log.id} memory`, source_ids: [source.id], retrieval_settings: { strategy: "multi" } }
      })
    )
    const dated = logQuestions.filter((question) => question.answer_date !== null)
    let right = 0
    let provider = ""
    for (const question of dated) {
      const run = yield* Effect.promise(() =>
        call(url, `/api/v1/agents/${agent.id}/ask`, { token, json: { question: question.question } })
      )
      provider = run.provider
      const ok = mentionsDate(run.answer ?? "", question.answer_date!)
      if (ok) right++
      temporal.push(ok ? 1 : 0)
      if (verbose) console.log(`${ok ? "✓" : "✗"} ${question.id} ${question.answer_date} | ${squashed(run.answer ?? "").slice(0, 160)}`)
    }

    if (verbose) {
      const missing = log.expected_entities.filter((_, i) =>
        !entities.some((entity) => [...entityNames(entity)].some((key) => expected[i]!.has(key)))
      )
      console.log(`\n${log.id} expected, not found: ${missing.map((entity) => entity.name).join(", ")}`)
      console.log(`${log.id} top ${topEntities}:`)
      for (const entity of top) {
        console.log(`  ${isExpected(entity) ? "✓" : "✗"}${expectedOf(entity) !== undefined && expectedOf(entity)!.kind !== entity.kind ? ` (kind: ${expectedOf(entity)!.kind})` : ""} ${entity.name} (${entity.kind}, ${entity.mention_count})${entity.aliases.length > 0 ? ` aka ${entity.aliases.join(", ")}` : ""}`)
      }
    }
    const recallOf = (table: Map<string, Array<number>>) =>
      Object.fromEntries(runs.map((run) => [
        run.name,
        Object.fromEntries(["all", ...categories].map((category) => [category, {
          recall_at_3: mean(table.get(`${run.name}|${category}|3`) ?? []),
          recall_at_10: mean(table.get(`${run.name}|${category}|10`) ?? [])
        }]))
      ]))
    perLog.push({
      log: log.id,
      sessions: log.sessions.length,
      messages: messages.size,
      questions: logQuestions.length,
      entities: entities.length,
      entity_precision_top25: !labelled ? null : top.length === 0 ? 0 : correct / top.length,
      entity_precision_top25_by_name: !labelled ? null : top.length === 0 ? 0 : correctByName / top.length,
      kind_right_top25: !labelled ? null : top.length === 0 ? 0 : kindRight / top.length,
      top25: top.map((entity) => ({ name: entity.name, kind: entity.kind, mentions: entity.mention_count, correct: isExpected(entity) })),
      expected_entities_found: foundCount,
      expected_entities: expected.length,
      evidence_recall: recallOf(logRecall),
      temporal_answer_accuracy: dated.length === 0 ? null : right / dated.length,
      temporal_questions_with_date: dated.length,
      answer_provider: provider
    })
    console.log(
      `${log.id}: ${entities.length} entities, ` +
        (labelled
          ? `precision@${topEntities} ${(correct / Math.max(top.length, 1)).toFixed(2)}, ` +
            `expected found ${foundCount}/${expected.length}, `
          : "no expected entities, ") +
        `temporal answers ${right}/${dated.length}`
    )
  }

  const precisionOf = (part: (p: typeof precisions[number]) => number) =>
    precisions.length === 0 ? null : mean(precisions.map((p) => (p.listed === 0 ? 0 : part(p) / p.listed)))
  const overall = {
    entity_precision_top25: precisionOf((p) => p.correct),
    entity_precision_top25_by_name: precisionOf((p) => p.byName),
    kind_right_top25: precisionOf((p) => p.kindRight),
    expected_entities_found: found.reduce((sum, f) => sum + f.found, 0),
    expected_entities: found.reduce((sum, f) => sum + f.expected, 0),
    evidence_recall: Object.fromEntries(runs.map((run) => [
      run.name,
      Object.fromEntries(["all", ...categories].map((category) => [category, {
        recall_at_3: mean(recall.get(`${run.name}|${category}|3`) ?? []),
        recall_at_10: mean(recall.get(`${run.name}|${category}|10`) ?? [])
      }]))
    ])),
    temporal_answer_accuracy: mean(temporal),
    temporal_questions_with_date: temporal.length
  }

  console.log(`\nlog     P@25   by name  kind   found     ${runs.map((run) => run.name.padEnd(11)).join(" ")}  (R@3 all)  temporal`)
  const shown = (value: unknown) => typeof value === "number" ? value.toFixed(2) : " -  "
  for (const entry of perLog) {
    const recallOf = entry.evidence_recall as Record<string, Record<string, { recall_at_3: number }>>
    console.log(
      `${String(entry.log).padEnd(7)} ${shown(entry.entity_precision_top25)}   ` +
        `${shown(entry.entity_precision_top25_by_name)}     ${shown(entry.kind_right_top25)}   ` +
        `${`${entry.expected_entities_found}/${entry.expected_entities}`.padEnd(9)} ` +
        runs.map((run) => recallOf[run.name]!.all!.recall_at_3.toFixed(3).padEnd(11)).join(" ") +
        `             ${entry.temporal_answer_accuracy === null ? "-" : (entry.temporal_answer_accuracy as number).toFixed(2)}`
    )
  }
  console.log(
    `all     ${shown(overall.entity_precision_top25)}   ${shown(overall.entity_precision_top25_by_name)}     ` +
      `${shown(overall.kind_right_top25)}   ` +
      `${`${overall.expected_entities_found}/${overall.expected_entities}`.padEnd(9)} ` +
      runs.map((run) => overall.evidence_recall[run.name]!.all!.recall_at_3.toFixed(3).padEnd(11)).join(" ") +
      `             ${overall.temporal_answer_accuracy.toFixed(2)} (${temporal.filter((x) => x === 1).length}/${temporal.length})`
  )
  console.log("\nevidence recall   category     R@3     R@10")
  for (const run of runs) {
    for (const category of ["all", ...categories]) {
      const m = overall.evidence_recall[run.name]![category]!
      console.log(`${run.name.padEnd(17)} ${category.padEnd(12)} ${m.recall_at_3.toFixed(3)}   ${m.recall_at_10.toFixed(3)}`)
    }
  }

  const result = {
    fixture: locomo === undefined ? "bench/fixtures/conversations" : Path.basename(locomo),
    logs: logs.length,
    questions: questions.filter((question) => logs.some((log) => log.id === question.log)).length,
    engine: Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite",
    dense: modelDir === undefined ? "off" : Path.resolve(modelDir),
    extractor: instance.settings.extractor,
    seconds: (performance.now() - started) / 1000,
    machine: machine(),
    date: new Date().toISOString(),
    overall,
    per_log: perLog
  }
  const outDir = Path.join(root, "bench/results")
  Fs.mkdirSync(outDir, { recursive: true })
  const written = `eval-conversations${locomo === undefined ? "" : "-locomo"}.json`
  Fs.writeFileSync(Path.join(outDir, written), JSON.stringify(result, null, 2) + "\n")
  console.log(`\n${result.seconds.toFixed(0)} s; written to bench/results/${written}`)
})

Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
