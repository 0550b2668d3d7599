/**
 * Fuzzes every JSON endpoint of /openapi.json on a fresh instance (embedded PGlite, or PostgreSQL with
 * DATABASE_URL) and prints the requests sent, the 5xx responses and the responses showing internal details, by
 * endpoint. Exits 1 when either count is not 0.
 *
 *   npm run reliability:fuzz -- [--seed 1] [--requests 5000] [--seconds 300] [--per-endpoint 10] [--model-dir DIR]
 */
import { Effect, Option } from "effect"
import * as Path from "node:path"
import { createFixtures, formatReport, runFuzz } from "./lib/fuzz.ts"
import { argument, startInstance } from "./lib/instance.ts"

const root = Path.resolve(import.meta.dirname, "..")
const modelDir = Path.resolve(argument("model-dir") ?? Path.join(root, "../shared/models/_fixtures/tiny-random-bert"))
const numberArgument = (name: string, fallback: number) => {
  const value = Number(argument(name) ?? fallback)
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a number`)
  return value
}

const program = Effect.gen(function*() {
  const seed = numberArgument("seed", 1)
  const maxRequests = numberArgument("requests", 5000)
  const maxSeconds = numberArgument("seconds", 300)
  const perEndpoint = numberArgument("per-endpoint", 10)
  const instance = yield* startInstance({ embedModelDir: Option.some(modelDir), embedModel: "local", logLevel: "none" })
  const report = yield* Effect.promise(async () => {
    const fixtures = await createFixtures(instance.url)
    return runFuzz({ baseUrl: instance.url, fixtures, seed, maxRequests, maxSeconds, perEndpoint })
  })
  console.log(`engine: ${Option.isSome(instance.settings.databaseUrl) ? "postgres" : "pglite"}`)
  console.log(formatReport(report))
  return report.serverErrors + report.leaks
})

Effect.runPromise(Effect.scoped(program)).then((failures) => process.exit(failures === 0 ? 0 : 1), (error) => {
  console.error(error)
  process.exit(2)
})
