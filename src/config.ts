import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted, Schema, SchemaGetter } from "effect"
import * as Os from "node:os"
import { defaultDataDir } from "./dataDir.ts"

export type LogFormat = "json" | "pretty"
export type LogLevelName = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "none"
/** What this process does on a shared database: everything, the HTTP API only, or the ingestion workers only. */
export type Role = "all" | "api" | "worker"

/** Every ENGRAM_* setting, typed and validated once at start-up. */
export interface EngramSettings {
  readonly role: Role
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** The embedded database's buffer pool (PostgreSQL's shared_buffers), resident from the start. */
  readonly pgliteSharedBuffersMb: number
  /** How often the embedded database is vacuumed and checkpointed (PGlite has no autovacuum and no checkpointer). */
  readonly pgliteMaintenanceSeconds: number
  readonly host: string
  readonly port: number
  readonly jwtSecret: Option.Option<Redacted.Redacted<string>>
  readonly tokenTtlSeconds: number
  readonly allowRegistration: boolean
  readonly localLogin: boolean
  /** Names (trimmed, compared without case) of the users allowed instance-wide operations such as reindex. */
  readonly admins: ReadonlyArray<string>
  readonly corsOrigins: ReadonlyArray<string>
  /** The address clients reach this server at (MCP metadata and client snippets); unset: the request's Host. */
  readonly publicUrl: Option.Option<string>
  /** GET /metrics (Prometheus text format) is served. */
  readonly metrics: boolean
  /** When set, /metrics wants `Authorization: Bearer <token>`. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** How long a SIGTERM lets requests in flight, answer streams and the database finish before the process exits. */
  readonly shutdownTimeoutSeconds: number
  readonly logLevel: LogLevelName
  readonly logFormat: LogFormat
  readonly maxBodyBytes: number
  readonly maxUploadBytes: number
  readonly folderRoots: ReadonlyArray<string>
  readonly webAllowPrivate: boolean
  readonly webTimeoutSeconds: number
  readonly webMaxPageBytes: number
  /**
   * Jobs worked at once (ENGRAM_WORKER_CONCURRENCY): by default three per core with PostgreSQL (a job waits on
   * the database part of its time, when the others use the ingestion threads), two with the embedded database
   * (one connection: more jobs would only queue there).
   */
  readonly workerConcurrency: number
  readonly jobMaxAttempts: number
  readonly jobLeaseSeconds: number
  readonly parseTimeoutSeconds: number
  readonly parseMaxChars: number
  readonly chunkTokens: number
  readonly chunkOverlapTokens: number
  readonly embedModelDir: Option.Option<string>
  readonly embedModel: string
  readonly embedDtype: "fp32" | "q8"
  readonly embedPooling: Option.Option<"mean" | "cls">
  readonly embedBaseUrl: Option.Option<string>
  readonly embedApiKey: Option.Option<Redacted.Redacted<string>>
  /**
   * Passages per embedding call. An encoder's attention holds batch × heads × length² numbers: 8 full-length
   * passages were as fast on a CPU as 32 with half the memory (docs/benchmarks.md).
   */
  readonly embedBatchSize: number
  readonly rerankModelDir: Option.Option<string>
  /** How long a local model (embedder, reranker) stays loaded after its last request; -1: for good. */
  readonly modelKeepAliveSeconds: number
  readonly rerankCandidates: number
  readonly extractor: "auto" | "rules" | "llm" | "off"
  readonly extractLlmConcurrency: number
  readonly extractLlmMaxCalls: number
  readonly extractTimeoutSeconds: number
  readonly extractMaxChars: number
  readonly bm25K1: number
  readonly bm25B: number
  /** MB of BM25's largest postings kept in the service's memory once read (0: none). */
  readonly bm25CacheMb: number
  readonly fusionK: number
  readonly fusionWeightVector: number
  readonly fusionWeightLexical: number
  readonly fusionWeightGraph: number
  readonly llmBaseUrl: Option.Option<string>
  readonly llmApiKey: Option.Option<Redacted.Redacted<string>>
  readonly llmModel: string
  readonly llmTimeoutSeconds: number
  readonly llmMaxRetries: number
  readonly answerContextTokens: number
  /** Quiet time after the last graph change before a source's universe map is recomputed. */
  readonly universeSettleMs: number
}

const withMessage = (message: string) => ({ message })

const BooleanFlag = Schema.Literals(["true", "false", "1", "0", "yes", "no", "on", "off"]).annotate(
  withMessage("must be one of true, false, 1, 0, yes, no, on, off")
).pipe(Schema.decodeTo(Schema.Boolean, {
  decode: SchemaGetter.transform((s) => ["true", "1", "yes", "on"].includes(s)),
  encode: SchemaGetter.transform((b) => (b ? "true" : "false"))
}))

const integerBetween = (minimum: number, maximum: number) =>
  Schema.NumberFromString.check(
    Schema.makeFilter((n: number) => Number.isInteger(n) && n >= minimum && n <= maximum, {
      message: `must be an integer from ${minimum} to ${maximum}`
    })
  )

const numberBetween = (minimum: number, maximum: number) =>
  Schema.NumberFromString.check(
    Schema.makeFilter((n: number) => Number.isFinite(n) && n >= minimum && n <= maximum, {
      message: `must be a number from ${minimum} to ${maximum}`
    })
  )

const NonEmpty = Schema.String.check(Schema.makeFilter((s: string) => s.trim().length > 0, {
  message: "must not be empty"
}))

const PostgresUrl = Schema.String.check(
  Schema.makeFilter((s: string) => /^postgres(ql)?:\/\/.+/.test(s), {
    message: "must be a postgres:// or postgresql:// connection URL"
  })
)

const JwtSecret = Schema.String.check(
  Schema.makeFilter((s: string) => s.length >= 32, { message: "must be at least 32 characters long" })
)

const LogLevel = Schema.Literals(["trace", "debug", "info", "warn", "error", "fatal", "none"]).annotate(
  withMessage("must be one of trace, debug, info, warn, error, fatal, none")
)

const LogFormatSchema = Schema.Literals(["json", "pretty"]).annotate(withMessage("must be json or pretty"))

const CorsOrigins = Schema.String.pipe(
  Schema.decodeTo(
    Schema.Array(Schema.String).check(
      Schema.makeFilter(
        (origins: ReadonlyArray<string>) =>
          origins.every((o) => o === "*" || /^https?:\/\/[^/\s]+$/.test(o)) &&
          (!origins.includes("*") || origins.length === 1),
        { message: "must be * alone or a comma-separated list of origins such as https://app.example.com" }
      )
    ),
    {
      decode: SchemaGetter.transform((s: string) =>
        s.split(",").map((o) => o.trim().replace(/\/$/, "")).filter((o) => o.length > 0)
      ),
      encode: SchemaGetter.transform((origins: ReadonlyArray<string>) => origins.join(","))
    }
  )
)

const AbsolutePaths = Schema.String.pipe(
  Schema.decodeTo(
    Schema.Array(Schema.String).check(
      Schema.makeFilter((paths: ReadonlyArray<string>) => paths.every((p) => p.startsWith("/")), {
        message: "must be a comma-separated list of absolute directories"
      })
    ),
    {
      decode: SchemaGetter.transform((s: string) => s.split(",").map((p) => p.trim()).filter((p) => p.length > 0)),
      encode: SchemaGetter.transform((paths: ReadonlyArray<string>) => paths.join(","))
    }
  )
)

const UserNames = Schema.String.pipe(
  Schema.decodeTo(
    Schema.Array(Schema.String).check(
      Schema.makeFilter((names: ReadonlyArray<string>) => names.every((name) => name.length <= 64), {
        message: "must be a comma-separated list of user names (at most 64 characters each)"
      })
    ),
    {
      decode: SchemaGetter.transform((s: string) => s.split(",").map((n) => n.trim()).filter((n) => n.length > 0)),
      encode: SchemaGetter.transform((names: ReadonlyArray<string>) => names.join(","))
    }
  )
)

const HttpBaseUrl = Schema.String.check(
  Schema.makeFilter((s: string) => /^https?:\/\/[^\s]+$/.test(s), { message: "must be an http:// or https:// URL" })
)

/** The name of every setting below, collected as they are declared. */
const settingNames = new Set<string>()

const optionalSetting = <T>(codec: Schema.Codec<T, string>, name: string) => {
  settingNames.add(name)
  return Config.option(Config.schema(codec, name))
}

const setting = <T>(codec: Schema.Codec<T, string>, name: string, fallback: T) => {
  settingNames.add(name)
  return Config.withDefault(Config.schema(codec, name), fallback)
}

const loopbackHost = "127.0.0.1"

export const settingsConfig: Config.Config<EngramSettings> = Config.all({
  role: setting(
    Schema.Literals(["all", "api", "worker"]).annotate(withMessage("must be all, api or worker")),
    "ENGRAM_ROLE",
    "all"
  ),
  dataDir: setting(NonEmpty, "ENGRAM_DATA_DIR", defaultDataDir),
  databaseUrl: Config.map(optionalSetting(PostgresUrl, "DATABASE_URL"), Option.map(Redacted.make)),
  pgliteSharedBuffersMb: setting(integerBetween(1, 16_384), "ENGRAM_PGLITE_SHARED_BUFFERS_MB", 16),
  pgliteMaintenanceSeconds: setting(integerBetween(1, 3600), "ENGRAM_PGLITE_MAINTENANCE_SECONDS", 60),
  host: optionalSetting(NonEmpty, "ENGRAM_HOST"),
  port: setting(integerBetween(0, 65535), "ENGRAM_PORT", 8080),
  jwtSecret: Config.map(optionalSetting(JwtSecret, "ENGRAM_JWT_SECRET"), Option.map(Redacted.make)),
  tokenTtlSeconds: setting(integerBetween(1, 31_536_000), "ENGRAM_TOKEN_TTL_SECONDS", 86_400),
  allowRegistration: setting(BooleanFlag, "ENGRAM_ALLOW_REGISTRATION", false),
  localLogin: setting(BooleanFlag, "ENGRAM_LOCAL_LOGIN", true),
  admins: setting(UserNames, "ENGRAM_ADMINS", []),
  corsOrigins: setting(CorsOrigins, "ENGRAM_CORS_ORIGINS", []),
  publicUrl: optionalSetting(HttpBaseUrl, "ENGRAM_PUBLIC_URL"),
  metrics: setting(BooleanFlag, "ENGRAM_METRICS", false),
  metricsToken: Config.map(optionalSetting(NonEmpty, "ENGRAM_METRICS_TOKEN"), Option.map(Redacted.make)),
  shutdownTimeoutSeconds: setting(integerBetween(1, 3600), "ENGRAM_SHUTDOWN_TIMEOUT_SECONDS", 20),
  logLevel: setting(LogLevel, "ENGRAM_LOG_LEVEL", "info"),
  logFormat: setting(LogFormatSchema, "ENGRAM_LOG_FORMAT", "json"),
  maxBodyBytes: setting(integerBetween(1024, 1024 ** 3), "ENGRAM_MAX_BODY_BYTES", 10 * 1024 * 1024),
  maxUploadBytes: setting(integerBetween(1024, 1024 ** 3), "ENGRAM_MAX_UPLOAD_BYTES", 50 * 1024 * 1024),
  folderRoots: setting(AbsolutePaths, "ENGRAM_FOLDER_ROOTS", []),
  webAllowPrivate: setting(BooleanFlag, "ENGRAM_WEB_ALLOW_PRIVATE", false),
  webTimeoutSeconds: setting(integerBetween(1, 300), "ENGRAM_WEB_TIMEOUT_SECONDS", 15),
  webMaxPageBytes: setting(integerBetween(1024, 1024 ** 3), "ENGRAM_WEB_MAX_PAGE_BYTES", 5 * 1024 * 1024),
  workerConcurrency: optionalSetting(integerBetween(0, 64), "ENGRAM_WORKER_CONCURRENCY"),
  jobMaxAttempts: setting(integerBetween(1, 100), "ENGRAM_JOB_MAX_ATTEMPTS", 5),
  jobLeaseSeconds: setting(integerBetween(2, 3600), "ENGRAM_JOB_LEASE_SECONDS", 30),
  parseTimeoutSeconds: setting(integerBetween(1, 3600), "ENGRAM_PARSE_TIMEOUT_SECONDS", 120),
  parseMaxChars: setting(integerBetween(1000, 1_000_000_000), "ENGRAM_PARSE_MAX_CHARS", 64 * 1024 * 1024),
  chunkTokens: setting(integerBetween(32, 2048), "ENGRAM_CHUNK_TOKENS", 300),
  chunkOverlapTokens: setting(integerBetween(0, 512), "ENGRAM_CHUNK_OVERLAP_TOKENS", 40),
  embedModelDir: optionalSetting(NonEmpty, "ENGRAM_EMBED_MODEL_DIR"),
  embedModel: setting(NonEmpty, "ENGRAM_EMBED_MODEL", "Xenova/bge-small-en-v1.5"),
  embedDtype: setting(
    Schema.Literals(["fp32", "q8"]).annotate(withMessage("must be fp32 or q8")),
    "ENGRAM_EMBED_DTYPE",
    "q8"
  ),
  embedPooling: optionalSetting(
    Schema.Literals(["mean", "cls"]).annotate(withMessage("must be mean or cls")),
    "ENGRAM_EMBED_POOLING"
  ),
  embedBaseUrl: optionalSetting(HttpBaseUrl, "ENGRAM_EMBED_BASE_URL"),
  embedApiKey: Config.map(optionalSetting(NonEmpty, "ENGRAM_EMBED_API_KEY"), Option.map(Redacted.make)),
  embedBatchSize: setting(integerBetween(1, 512), "ENGRAM_EMBED_BATCH_SIZE", 8),
  rerankModelDir: optionalSetting(NonEmpty, "ENGRAM_RERANK_MODEL_DIR"),
  modelKeepAliveSeconds: setting(integerBetween(-1, 31_536_000), "ENGRAM_MODEL_KEEP_ALIVE_SECONDS", 300),
  rerankCandidates: setting(integerBetween(1, 200), "ENGRAM_RERANK_CANDIDATES", 30),
  extractor: setting(
    Schema.Literals(["auto", "rules", "llm", "off"]).annotate(withMessage("must be auto, rules, llm or off")),
    "ENGRAM_EXTRACTOR",
    "auto"
  ),
  extractLlmConcurrency: setting(integerBetween(1, 16), "ENGRAM_EXTRACT_LLM_CONCURRENCY", 1),
  extractLlmMaxCalls: setting(integerBetween(1, 100), "ENGRAM_EXTRACT_LLM_MAX_CALLS", 8),
  extractTimeoutSeconds: setting(integerBetween(1, 3600), "ENGRAM_EXTRACT_TIMEOUT_SECONDS", 300),
  extractMaxChars: setting(integerBetween(0, 1_000_000_000), "ENGRAM_EXTRACT_MAX_CHARS", 250_000),
  bm25K1: setting(numberBetween(0, 10), "ENGRAM_BM25_K1", 1.2),
  bm25B: setting(numberBetween(0, 1), "ENGRAM_BM25_B", 0.75),
  bm25CacheMb: setting(integerBetween(0, 65_536), "ENGRAM_BM25_CACHE_MB", 64),
  fusionK: setting(integerBetween(1, 1000), "ENGRAM_FUSION_K", 60),
  fusionWeightVector: setting(numberBetween(0, 10), "ENGRAM_FUSION_WEIGHT_VECTOR", 1),
  fusionWeightLexical: setting(numberBetween(0, 10), "ENGRAM_FUSION_WEIGHT_LEXICAL", 1),
  fusionWeightGraph: setting(numberBetween(0, 10), "ENGRAM_FUSION_WEIGHT_GRAPH", 0.1),
  llmBaseUrl: optionalSetting(HttpBaseUrl, "ENGRAM_LLM_BASE_URL"),
  llmApiKey: Config.map(optionalSetting(NonEmpty, "ENGRAM_LLM_API_KEY"), Option.map(Redacted.make)),
  llmModel: setting(NonEmpty, "ENGRAM_LLM_MODEL", "gpt-4o-mini"),
  llmTimeoutSeconds: setting(integerBetween(1, 3600), "ENGRAM_LLM_TIMEOUT_SECONDS", 120),
  llmMaxRetries: setting(integerBetween(0, 10), "ENGRAM_LLM_MAX_RETRIES", 2),
  answerContextTokens: setting(integerBetween(256, 200_000), "ENGRAM_ANSWER_CONTEXT_TOKENS", 3000),
  universeSettleMs: setting(integerBetween(0, 600_000), "ENGRAM_UNIVERSE_SETTLE_MS", 2000)
}).pipe(Config.map(({ host, workerConcurrency, ...settings }) => ({
  ...settings,
  // Name-only login lets anyone who reaches the port sign in as anyone: it listens on this machine only
  // unless the operator sets ENGRAM_HOST.
  host: Option.getOrElse(host, () => settings.localLogin ? loopbackHost : "0.0.0.0"),
  workerConcurrency: Option.getOrElse(
    workerConcurrency,
    () => Option.isSome(settings.databaseUrl) ? Math.min(16, 3 * Os.availableParallelism()) : 2
  )
})))

/** Whether `host` only accepts connections from this machine. */
export const isLoopbackHost = (host: string) =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

export class EngramConfig extends Context.Service<EngramConfig, EngramSettings>()("engram/Config") {
  /** Reads the settings from the current ConfigProvider (the environment by default). */
  static readonly layer = Layer.effect(EngramConfig, Effect.map(settingsConfig, EngramConfig.of))

  static readonly layerWith = (settings: EngramSettings) => Layer.succeed(EngramConfig, settings)
}

/** Edit distance between two names, to suggest the setting a misspelt name meant. */
const distance = (a: string, b: string) => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}

/** Every name under `path` that holds a value in the provider (the environment splits names on "_"). */
const namesUnder = (
  provider: ConfigProvider.ConfigProvider,
  path: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<string>> =>
  provider.load(path).pipe(
    Effect.orElseSucceed(() => undefined),
    Effect.flatMap((node) => {
      if (node === undefined) return Effect.succeed([])
      const here = node._tag === "Value" || node.value !== undefined ? [path.join("_")] : []
      if (node._tag !== "Record") return Effect.succeed(here)
      return Effect.map(
        Effect.forEach([...node.keys], (key) => namesUnder(provider, [...path, key])),
        (nested) => [...here, ...nested.flat()]
      )
    })
  )

/**
 * ENGRAM_* names that are set but are no setting of this release (a typo is otherwise silently ignored), each
 * with the closest known name when one is near.
 */
export const unknownSettings = Effect.gen(function*() {
  const provider = yield* ConfigProvider.ConfigProvider
  const names = yield* namesUnder(provider, ["ENGRAM"])
  // ENGRAM_TEST_* belong to the test suite (its database, the crash-test hook), not to the service's settings.
  return names.filter((name) => !settingNames.has(name) && !name.startsWith("ENGRAM_TEST_")).map((name) => {
    const closest = [...settingNames].map((known) => ({ known, d: distance(name, known) }))
      .sort((a, b) => a.d - b.d)[0]
    return { name, suggestion: closest !== undefined && closest.d <= 3 ? Option.some(closest.known) : Option.none() }
  })
})
