import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer, Logger, Option, Redacted, References } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import { createServer } from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { EngramConfig, type EngramSettings } from "../../src/config.ts"
import { AppServices, ServerLive } from "../../src/server.ts"
import { throwawayDatabase } from "../../scripts/lib/admin.ts"
import { fixtureModelDir } from "./datasets.ts"

export type Engine = "pglite" | "postgres"
export const engines: ReadonlyArray<Engine> = ["pglite", "postgres"]

/** The real PostgreSQL with pgvector that tests create throwaway databases in (scripts/setup-postgres-pgvector.sh). */
export const adminDatabaseUrl = process.env.ENGRAM_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

/** A fresh PostgreSQL database for the scope; dropped (with its connections) when the scope closes. */
export const scratchDatabase = throwawayDatabase(adminDatabaseUrl, "engram_test")

/** A temporary directory for the scope. */
export const scratchDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-test-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

export const defaultSettings = (dataDir: string, databaseUrl?: string): EngramSettings => ({
  role: "all",
  dataDir,
  databaseUrl: databaseUrl === undefined ? Option.none() : Option.some(Redacted.make(databaseUrl)),
  pgliteSharedBuffersMb: 16,
  pgliteMaintenanceSeconds: 60,
  host: "127.0.0.1",
  port: 0,
  jwtSecret: Option.none(),
  tokenTtlSeconds: 3600,
  allowRegistration: false,
  localLogin: true,
  admins: [],
  corsOrigins: [],
  publicUrl: Option.none(),
  metrics: false,
  metricsToken: Option.none(),
  shutdownTimeoutSeconds: 20,
  logLevel: "none",
  logFormat: "json",
  maxBodyBytes: 64 * 1024,
  maxUploadBytes: 1024 * 1024,
  folderRoots: [],
  webAllowPrivate: true,
  webTimeoutSeconds: 5,
  webMaxPageBytes: 1024 * 1024,
  workerConcurrency: 2,
  jobMaxAttempts: 3,
  jobLeaseSeconds: 30,
  parseTimeoutSeconds: 60,
  parseMaxChars: 64 * 1024 * 1024,
  chunkTokens: 300,
  chunkOverlapTokens: 40,
  embedModelDir: Option.some(fixtureModelDir),
  embedModel: "Xenova/bge-small-en-v1.5",
  embedDtype: "q8",
  embedPooling: Option.none(),
  embedBaseUrl: Option.none(),
  embedApiKey: Option.none(),
  embedBatchSize: 8,
  rerankModelDir: Option.none(),
  rerankCandidates: 30,
  modelKeepAliveSeconds: 300,
  extractor: "auto",
  extractLlmConcurrency: 1,
  extractLlmMaxCalls: 8,
  extractTimeoutSeconds: 60,
  extractMaxChars: 250_000,
  bm25K1: 1.2,
  bm25B: 0.75,
  bm25CacheMb: 64,
  fusionK: 60,
  fusionWeightVector: 1,
  fusionWeightLexical: 1,
  fusionWeightGraph: 1,
  llmBaseUrl: Option.none(),
  llmApiKey: Option.none(),
  llmModel: "gpt-4o-mini",
  llmTimeoutSeconds: 120,
  llmMaxRetries: 2,
  answerContextTokens: 3000,
  universeSettleMs: 2000
})

export class TestServer extends Context.Service<TestServer, {
  readonly url: string
  readonly settings: EngramSettings
  /** The server's own database connection, to provoke failures underneath it. */
  readonly sql: SqlClient.SqlClient
}>()("test/TestServer") {}

const QuietLogs = Layer.mergeAll(Logger.layer([]), Layer.succeed(References.MinimumLogLevel, "None"))

/** The real server, in this process, on an ephemeral port, with the given settings. */
export const serverLayer = (settings: EngramSettings) =>
  Layer.effect(
    TestServer,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const address = server.address
      if (address._tag === "UnixPathAddress") return yield* Effect.die("expected a TCP address")
      const sql = yield* SqlClient.SqlClient
      return TestServer.of({ url: `http://127.0.0.1:${address.port}`, settings, sql })
    })
  ).pipe(
    Layer.provideMerge(ServerLive),
    Layer.provideMerge(AppServices),
    Layer.provide(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provide(EngramConfig.layerWith(settings)),
    Layer.provide(QuietLogs)
  )

/** Settings for a fresh instance of the engine: a new data directory, and a new database for postgres. */
export const freshSettings = (engine: Engine, overrides: Partial<EngramSettings> = {}) =>
  Effect.gen(function*() {
    const dataDir = yield* scratchDir
    const databaseUrl = engine === "postgres" ? (yield* scratchDatabase).url : undefined
    return { ...defaultSettings(dataDir, databaseUrl), ...overrides }
  })

/** A fresh server of the engine for a whole suite (use with @effect/vitest `layer`). */
export const freshServer = (engine: Engine, overrides: Partial<EngramSettings> = {}) =>
  Layer.unwrap(Effect.map(freshSettings(engine, overrides), serverLayer))

/** Runs `use` against a server started with `settings`, stopping it afterwards. */
export const withServer = <A, E, R>(
  settings: EngramSettings,
  use: (server: TestServer["Service"]) => Effect.Effect<A, E, R>
) => Effect.scoped(Effect.flatMap(Layer.build(serverLayer(settings)), (context) => use(Context.get(context, TestServer))))
