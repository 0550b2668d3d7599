/**
 * Crash reliability: for every transition of a document's ingestion (queue, enter/done of each stage, activate)
 * and of user actions and failures (pause, resume, reprocess, fail, remove),
 * start the service with the test hook ENGRAM_TEST_CRASH_AFTER=<transition> so it kills itself (-9) right after
 * that transition commits, restart it, and check that the document and its job agree: the document ready exactly
 * once (BM25 statistics count its chunks once), its job succeeded with progress done = total, no duplicated or
 * left-over chunk, no unfinished job left behind.
 *   npm run reliability:crash -- [--runs 3] [--engines pglite,postgres] [--transitions activate,enter:embed]
 * PostgreSQL runs use scratch databases on ENGRAM_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432).
 */
import { Cause, Effect, Exit } from "effect"
import {
  actionConsistent,
  type ActionCrashOutcome,
  actionTransitions,
  consistent,
  type CrashOutcome,
  crashAt,
  crashAtAction,
  ingestionTransitions
} from "../test/support/crash.ts"
import type { Engine } from "../test/support/server.ts"
import { argument } from "./lib/instance.ts"

const runs = Number(argument("runs") ?? 3)
const engines = (argument("engines") ?? "pglite,postgres").split(",") as Array<Engine>
const transitions = argument("transitions")?.split(",") ?? [...ingestionTransitions, ...Object.keys(actionTransitions)]

const isAction = (transition: string): transition is keyof typeof actionTransitions => transition in actionTransitions

/** One kill -9 at the transition and a restart; whether document and job ended consistent. */
interface Trial {
  readonly outcome: CrashOutcome | ActionCrashOutcome
  readonly ok: boolean
}

const trial = (engine: Engine, transition: string): Effect.Effect<Trial, unknown> =>
  isAction(transition)
    ? Effect.map(crashAtAction(engine, transition), (outcome): Trial => ({ outcome, ok: actionConsistent(outcome) }))
    : Effect.map(crashAt(engine, transition), (outcome): Trial => ({ outcome, ok: consistent(outcome) }))

interface Tally {
  runs: number
  killed: number
  consistent: number
  stuckJobs: number
  duplicateChunks: number
  notReadyOnce: number
  errors: number
}

const empty = (): Tally => ({
  runs: 0,
  killed: 0,
  consistent: 0,
  stuckJobs: 0,
  duplicateChunks: 0,
  notReadyOnce: 0,
  errors: 0
})

const count = (
  tally: Tally,
  exit: Exit.Exit<Trial, unknown>
) => {
  tally.runs += 1
  if (Exit.isFailure(exit)) {
    tally.errors += 1
    return
  }
  const { outcome, ok } = exit.value
  if (outcome.killed) tally.killed += 1
  if (ok) tally.consistent += 1
  tally.stuckJobs += outcome.stuckJobs
  if (!outcome.chunksExact) tally.duplicateChunks += 1
  if (!outcome.readyOnce) tally.notReadyOnce += 1
}

const program = Effect.gen(function*() {
  const totals = new Map<Engine, Tally>()
  for (const engine of engines) {
    const total = empty()
    totals.set(engine, total)
    for (const transition of transitions) {
      const tally = empty()
      for (let run = 0; run < runs; run++) {
        const exit = yield* Effect.exit(trial(engine, transition))
        if (Exit.isFailure(exit)) console.error(`${engine} ${transition}: ${Cause.pretty(exit.cause)}`)
        else if (!exit.value.ok) console.error(`${engine} ${transition}: ${JSON.stringify(exit.value.outcome)}`)
        count(tally, exit)
        count(total, exit)
      }
      console.log(
        `${engine.padEnd(8)} ${transition.padEnd(14)} runs ${tally.runs}  killed ${tally.killed}  ` +
          `consistent ${tally.consistent}  stuck jobs ${tally.stuckJobs}  duplicate chunks ${tally.duplicateChunks}  ` +
          `errors ${tally.errors}`
      )
    }
  }
  console.log("\n| engine | runs (transitions × runs) | killed at the transition | consistent outcomes | stuck jobs | " +
    "duplicate chunks | ready more than once | errors |")
  console.log("|---|---|---|---|---|---|---|---|")
  for (const [engine, t] of totals) {
    console.log(
      `| ${engine} | ${t.runs} (${transitions.length} × ${runs}) | ${t.killed} | ${t.consistent} | ${t.stuckJobs} | ` +
        `${t.duplicateChunks} | ${t.notReadyOnce} | ${t.errors} |`
    )
  }
  const failed = [...totals.values()].some((t) => t.consistent !== t.runs)
  process.exitCode = failed ? 1 : 0
})

Effect.runPromise(program)
