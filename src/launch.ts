import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Config, Effect, Exit, Layer, Runtime, Schema, SchemaIssue } from "effect"
import { HttpServer } from "effect/http"
import { EngramConfig } from "./config.ts"
import { HttpServerLive, StartupGate } from "./http/Startup.ts"
import { Db } from "./adapters/Db.ts"
import { Embedder } from "./adapters/Embedder.ts"
import { LoggingLive } from "./logging.ts"
import { TracingLive } from "./observability/Tracing.ts"

const ListeningLog = Layer.effectDiscard(Effect.gen(function*() {
  const { role } = yield* EngramConfig
  yield* HttpServer.addressFormattedWith((address) => Effect.logInfo("engram listening").pipe(
    Effect.annotateLogs(role === "worker" ? { address, role } : { address, role, docs: `${address}/docs` })
  ))
}))

/**
 * What start-up waits for, begun together once the port answers: the embedded database opens on its own thread
 * and the embedding model loads while this thread loads the service's modules (about a second). ServerLive is
 * made from those modules and uses the same Db and Embedder layers (memoised: each is built once).
 */
let imported: Promise<typeof import("./server.ts")> | undefined
const importServer = Effect.promise(() => (imported ??= import("./server.ts")))
const ServerLive = Layer.unwrap(Effect.map(importServer, (server) => server.ServerLive))
const StartTogether = Layer.mergeAll(Db.layer, Embedder.layer, Layer.effectDiscard(importServer))

const Main = ListeningLog.pipe(
  Layer.provideMerge(ServerLive),
  Layer.provideMerge(StartTogether),
  Layer.provideMerge(StartupGate.layer),
  Layer.provide(HttpServerLive),
  Layer.provide(LoggingLive),
  Layer.provide(EngramConfig.layer),
  Layer.provide(TracingLive)
)

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** Start-up failures are explained in one line naming the setting, never with a stack trace. */
const describeStartupFailure = (error: unknown): string => {
  if (error instanceof Config.ConfigError && Schema.isSchemaError(error.cause)) {
    const issues = formatIssues(error.cause.issue).issues
    return "Invalid configuration: " + issues.map((issue) =>
      `${(issue.path ?? []).map(String).join(".")} ${issue.message}`
    ).join("; ")
  }
  if (error instanceof Error) {
    if (error.message !== "") return error.message
    const cause = (error as { cause?: unknown }).cause
    // An error without a message of its own (a driver's or the platform's) is named by its tag and cause.
    const name = (error as { _tag?: string })._tag ?? error.name
    return cause === undefined ? `${name} (no detail)` : `${name}: ${describeStartupFailure(cause)}`
  }
  return String(error)
}

/** SIGTERM/SIGINT interrupt the program: after a clean shutdown that is success (exit code 0). */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

Layer.launch(Main).pipe(
  Effect.catch((error) =>
    Effect.sync(() => {
      process.stderr.write(`engram: ${describeStartupFailure(error)}\n`)
      process.exitCode = 1
    })
  ),
  NodeRuntime.runMain({ teardown })
)
