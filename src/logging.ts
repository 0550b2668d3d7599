import { Effect, Layer, Logger, References } from "effect"
import { EngramConfig } from "./config.ts"

const minimumLevel = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None"
} as const

/** One JSON object per line on stdout (ENGRAM_LOG_FORMAT=json, the default) or human-readable lines (pretty). */
export const LoggingLive = Layer.unwrap(Effect.gen(function*() {
  const config = yield* EngramConfig
  return Layer.mergeAll(
    Logger.layer([config.logFormat === "json" ? Logger.consoleJson : Logger.consolePretty()]),
    Layer.succeed(References.MinimumLogLevel, minimumLevel[config.logLevel])
  )
}))
