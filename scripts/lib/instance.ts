import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer, Logger, Option, Redacted, References, Scope } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { EngramConfig, type EngramSettings, settingsConfig } from "../../src/config.ts"
import { AppServices, ServerLive } from "../../src/server.ts"
import { Embedder } from "../../src/adapters/Embedder.ts"
import { Retriever } from "../../src/services/Retriever.ts"

/** Reads a `--name value` or `--flag` argument. */
export const argument = (name: string): string | undefined => {
  const index = process.argv.indexOf(`--${name}`)
  if (index === -1) return undefined
  const value = process.argv[index + 1]
  return value === undefined || value.startsWith("--") ? "true" : value
}

export interface Instance {
  readonly url: string
  readonly retriever: Retriever["Service"]
  readonly sql: SqlClient.SqlClient
  /** The query embedding search uses. */
  readonly embed: (query: string) => Effect.Effect<ReadonlyArray<ReadonlyArray<number>>>
  readonly settings: EngramSettings
  /** Every service of the running instance, for benchmarks that time one part alone. */
  readonly context: Context.Context<any>
}

/**
 * A real Engram server in this process on an ephemeral port, with a fresh data directory, configured from the
 * environment (ENGRAM_*, DATABASE_URL) plus `overrides`. Closed with the scope.
 */
export const startInstance = (overrides: Partial<EngramSettings>) =>
  Effect.gen(function*() {
    const base = yield* settingsConfig
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-bench-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
    const settings: EngramSettings = { ...base, dataDir, host: "127.0.0.1", port: 0, logLevel: "warn", ...overrides }
    const layer = Layer.mergeAll(ServerLive, AppServices).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provide(EngramConfig.layerWith(settings)),
      Layer.provide(Layer.mergeAll(
        Logger.layer([Logger.consoleJson]),
        Layer.succeed(References.MinimumLogLevel, "Warn")
      ))
    )
    const context = yield* Layer.build(layer)
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    return {
      url: `http://127.0.0.1:${port}`,
      retriever: Context.get(context, Retriever),
      sql: Context.get(context, SqlClient.SqlClient),
      embed: (query: string) => Context.get(context, Embedder).embed([query], "query").pipe(Effect.orDie),
      settings,
      context
    } satisfies Instance
  })

export const withDatabase = (url: string | undefined) =>
  url === undefined ? {} : { databaseUrl: Option.some(Redacted.make(url)) }

export type { Scope }

/** JSON over HTTP against the instance. */
export const call = async (url: string, path: string, init: { token?: string; json?: unknown; method?: string } = {}) => {
  const response = await fetch(url + path, {
    method: init.method ?? (init.json === undefined ? "GET" : "POST"),
    headers: {
      ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
      ...(init.json === undefined ? {} : { "content-type": "application/json" })
    },
    body: init.json === undefined ? undefined : JSON.stringify(init.json)
  })
  const text = await response.text()
  if (response.status >= 400) throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${text}`)
  return text === "" ? undefined : JSON.parse(text)
}

/** Runs `work` over `items` with at most `concurrency` at once. */
export const pool = async <T>(items: ReadonlyArray<T>, concurrency: number, work: (item: T, index: number) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const index = next++
      await work(items[index]!, index)
    }
  }))
}

/** Waits until the source has no queued or processing document. */
export const waitForSource = async (url: string, token: string, sourceId: string, expected: number) => {
  for (;;) {
    const source = await call(url, `/api/v1/sources/${sourceId}`, { token })
    if (source.status === "ready" && source.document_count >= expected) return source
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/** Milliseconds `work` takes. */
export const timed = async (work: () => Promise<unknown>) => {
  const started = performance.now()
  await work()
  return performance.now() - started
}

/** The records of a JSON Lines file (a BEIR corpus or query file). */
export const readJsonl = (file: string) =>
  Fs.readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line))

/** The peak resident memory (VmHWM) of process `pid` (or this one) so far, in bytes. */
export const peakResidentBytes = (pid: number | "self" = "self") =>
  Number(/^VmHWM:\s+(\d+) kB/m.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024

export const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

export const machine = () => ({
  cpus: Os.cpus().length,
  cpu_model: Os.cpus()[0]?.model ?? "unknown",
  memory_gib: Math.round(Os.totalmem() / 1024 ** 3),
  node: process.version,
  platform: `${Os.type()} ${Os.release()}`
})
