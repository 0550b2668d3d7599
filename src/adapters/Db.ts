import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Worker } from "node:worker_threads"
import { EngramConfig } from "../config.ts"
import { createDirectory } from "../dataDir.ts"
import { errorText } from "../errorText.ts"
import { discardEarly, openDatabase } from "./databaseThread.ts"
import { templatePath } from "./pgliteTemplate.ts"
import { latestMigrationId, migrations, migrationsTable } from "../migrations/index.ts"

export type StorageEngine = "pglite" | "postgres"

/** A failure that stops start-up; its message is written for the operator. */
export class StartupError extends Schema.TaggedError<StartupError>()("StartupError", {
  message: Schema.String
}) {}

/** The database is unreachable or not migrated; `message` is safe to show to API clients. */
export class DbNotReady extends Schema.TaggedError<DbNotReady>()("DbNotReady", {
  message: Schema.String
}) {}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** One process per data directory: a lock file holding the owner's pid; a dead owner's lock is taken over. */
const lockDataDir = (dir: string) => {
  const lockPath = Path.join(dir, "engram.lock")
  const take = Effect.try({
    try: () => {
      try {
        Fs.writeFileSync(lockPath, String(process.pid), { flag: "wx" })
        return
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      }
      const owner = Number.parseInt(Fs.readFileSync(lockPath, "utf8"), 10)
      if (Number.isInteger(owner) && owner > 0 && isAlive(owner)) {
        throw new StartupError({
          message: `The data directory ${dir} is in use by another Engram process (pid ${owner}). ` +
            "Stop that process, or set ENGRAM_DATA_DIR to another directory."
        })
      }
      Fs.writeFileSync(lockPath, String(process.pid))
    },
    catch: (error) =>
      error instanceof StartupError
        ? error
        : new StartupError({
          message: `Cannot lock the data directory ${dir}: ${errorText(error)}. ${writableDataDirHint}`
        })
  })
  const release = Effect.sync(() => {
    try {
      if (Fs.readFileSync(lockPath, "utf8") === String(process.pid)) Fs.rmSync(lockPath)
    } catch {
      // already gone
    }
  })
  return Effect.acquireRelease(take, () => release)
}

/** Unix socket paths are limited to about 107 bytes; a deep data directory gets one in the temp directory. */
const socketPathFor = (dir: string) => {
  const inDataDir = Path.join(dir, ".s.PGSQL.engram")
  return Buffer.byteLength(inDataDir) <= 100
    ? inDataDir
    : Path.join(Os.tmpdir(), `engram-${createHash("sha256").update(dir).digest("hex").slice(0, 16)}.sock`)
}

/**
 * The largest message the client accepts from the server: rows as large as ingestion writes (an original up to
 * ENGRAM_MAX_UPLOAD_BYTES, a parse holding its text twice) must read back. The driver's default, 16 MiB, failed
 * every upload over about 7 MB; 1 GiB is PostgreSQL's own limit on one value.
 */
const maxMessageSize = 1024 ** 3

/** This installation's template for new databases (src/adapters/pgliteTemplate.ts), where it can be named. */
const templateFor = () => {
  try {
    return templatePath()
  } catch {
    return undefined // PGlite bundled (the single binary): no package to read the version of
  }
}

/**
 * Opens the embedded database on its thread (src/adapters/databaseThread.ts); resolves once it serves the socket, with
 * why the template for new databases could not be used, if it could not.
 */
const startDatabaseThread = async (dataDir: string, socketPath: string, sharedBuffersMb: number) => {
  const { worker, answer } = await openDatabase({
    dataDir,
    socketPath,
    template: templateFor(),
    sharedBuffersMb,
    settings: embeddedSettings
  }).catch((error) => {
    throw new StartupError({ message: `The embedded database stopped: ${errorText(error)}` })
  })
  if ("ready" in answer) return { worker, templateFailed: answer.templateFailed }
  void worker.terminate()
  throw new StartupError({
    message: answer.failed === "serve"
      ? `Cannot serve the embedded database on the socket ${socketPath}: ${answer.message}. ${writableDataDirHint}`
      : `Cannot open the embedded database in ${Path.dirname(dataDir)}: ${answer.message}. ${writableDataDirHint}`
  })
}

/** Closes the embedded database (it checkpoints its files), then ends its thread; bounded, so a stuck close cannot hold up shut-down. */
const stopDatabaseThread = (worker: Worker) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        void worker.terminate().then(() => resolve(), () => resolve())
      }
      const timer = setTimeout(done, 30_000)
      worker.once("message", done)
      worker.once("exit", done)
      worker.postMessage("close")
    })
  )

/**
 * PGlite (Postgres in WASM) with pgvector, persisted in the data directory, on a thread of its own and served on a
 * unix socket: the service talks to it with the same driver as to PostgreSQL.
 */
const embeddedClient = (dataDir: string, sharedBuffersMb: number) =>
  Effect.gen(function*() {
    const dir = Path.resolve(dataDir)
    yield* Effect.try({
      try: () => createDirectory(dir),
      catch: (error) =>
        new StartupError({ message: `Cannot create the data directory ${dir}: ${errorText(error)}. ${writableDataDirHint}` })
    })
    yield* lockDataDir(dir)
    const socketPath = socketPathFor(dir)
    const { templateFailed } = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => startDatabaseThread(Path.join(dir, "pglite"), socketPath, sharedBuffersMb),
        catch: (error) => error instanceof StartupError ? error : new StartupError({ message: errorText(error) })
      }),
      ({ worker }) => stopDatabaseThread(worker)
    )
    if (templateFailed !== undefined) {
      yield* Effect.logWarning("the template for new databases could not be used; the database was initialised " +
        "without it (run `npm ci` again to remake it)").pipe(Effect.annotateLogs({ reason: templateFailed }))
    }
    return yield* PgClient.make({
      path: socketPath,
      username: "postgres",
      database: "postgres",
      maxConnections: 1,
      minConnections: 1,
      maxMessageSize
    }).pipe(
      Effect.mapError((error) =>
        new StartupError({ message: `Cannot connect to the embedded database: ${errorText(error)}` })
      )
    )
  })

const writableDataDirHint = "Set ENGRAM_DATA_DIR to a directory this user can create and write to, " +
  "used by no other program."

/** Where DATABASE_URL points, without its password, for start-up messages. */
const describeDatabaseUrl = (url: Redacted.Redacted<string>) => {
  try {
    const parsed = new URL(Redacted.value(url))
    const user = parsed.username === "" ? "" : ` as user ${decodeURIComponent(parsed.username)}`
    return `${parsed.host}, database ${decodeURIComponent(parsed.pathname.slice(1)) || "(default)"}${user}`
  } catch {
    return "an unparsable URL"
  }
}

/** HNSW's `ef_search` of every database session: enough for a nearest-neighbour list of a quarter of it. */
export const sessionEfSearch = 200

/**
 * Every database session's HNSW settings (pgvector 0.8): iterative scans walk the graph on until enough rows pass a
 * query's filters, and each scan keeps `sessionEfSearch` candidates. PostgreSQL gets them in each connection's
 * startup packet, PGlite as server options; so the vector search of most queries is one statement
 * (VectorIndex.nearest).
 */
const hnswSettings: Readonly<Record<string, string>> = {
  "hnsw.iterative_scan": "relaxed_order",
  "hnsw.ef_search": String(sessionEfSearch)
}

/**
 * The embedded database's server options: the sessions' HNSW settings, and the write-ahead log segments a checkpoint
 * keeps for reuse (the service checkpoints it, `Db`): 128 MB of them, not PostgreSQL's default of up to 1 GB.
 */
const embeddedSettings: Readonly<Record<string, string>> = {
  ...hnswSettings,
  max_wal_size: "128MB",
  min_wal_size: "32MB"
}

/**
 * An external PostgreSQL (>= 15) with the pgvector extension, with a connection for each ingestion worker (a job
 * may wait on a lock inside its transaction) and eight more for requests and background work.
 */
const postgresClient = (url: Redacted.Redacted<string>, workers: number) =>
  Effect.gen(function*() {
    const unreachable = (error: unknown) =>
      new StartupError({
        message: `Cannot connect to the PostgreSQL server in DATABASE_URL (${describeDatabaseUrl(url)}): ` +
          `${errorText(error)}. Check that PostgreSQL runs and accepts connections there, and that DATABASE_URL's ` +
          "host, port, database, user and password are right."
      })
    const client = yield* PgClient.make({
      url,
      maxConnections: workers + 8,
      maxMessageSize,
      startupParameters: hnswSettings
    }).pipe(Effect.mapError(unreachable))
    const available = yield* client<{ name: string }>`
      SELECT name FROM pg_available_extensions WHERE name = 'vector'`.pipe(Effect.mapError(unreachable))
    if (available.length === 0) {
      return yield* new StartupError({
        message: "The PostgreSQL server in DATABASE_URL does not have the pgvector extension installed. " +
          "Install it on the database server (Debian/Ubuntu: `sudo bash scripts/setup-postgres-pgvector.sh` from " +
          "this repository, or the postgresql-<version>-pgvector package; managed services: enable the " +
          "`vector` extension), then start Engram again."
      })
    }
    return client
  })

const clientLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* EngramConfig
  if (config.role !== "all" && Option.isNone(config.databaseUrl)) {
    return yield* new StartupError({
      message: `ENGRAM_ROLE=${config.role} needs a database shared with the other processes, but the embedded ` +
        "database (PGlite) belongs to one process. Set DATABASE_URL to a PostgreSQL database that every api and " +
        "worker process uses, or run a single process with ENGRAM_ROLE=all (the default)."
    })
  }
  return PgClient.layerFrom(
    Option.match(config.databaseUrl, {
      onNone: () => embeddedClient(config.dataDir, config.pgliteSharedBuffersMb),
      onSome: (url) => Effect.andThen(Effect.sync(discardEarly), postgresClient(url, config.workerConcurrency))
    })
  )
}))

const migrate = Layer.effectDiscard(
  Migrator.make({})({ loader: migrations, table: migrationsTable }).pipe(
    Effect.mapError((error) =>
      new StartupError({
        message: `Database migration failed: ${errorText(error)}. Check that the database user may create ` +
          "tables and extensions and that no newer Engram release migrated this database, then start Engram again."
      })
    )
  )
)

/** Runs `work` every `pause` after it ends, for the scope; a failed run waits for the next. */
const periodically = <E, R>(work: Effect.Effect<unknown, E, R>, pause: Duration.Duration) =>
  Effect.sleep(pause).pipe(Effect.andThen(Effect.ignore(work)), Effect.forever, Effect.forkScoped)

export class Db extends Context.Service<Db, {
  readonly engine: StorageEngine
  /** Succeeds when the database answers and has every migration applied. */
  readonly check: Effect.Effect<void, DbNotReady>
}>()("engram/Db") {
  static readonly layer = Layer.effect(
    Db,
    Effect.gen(function*() {
      const config = yield* EngramConfig
      const sql = yield* SqlClient.SqlClient
      const check = sql<{ latest: number | null }>`
        SELECT max(migration_id) AS latest FROM ${sql(migrationsTable)}`.pipe(
        Effect.timeout("3 seconds"),
        Effect.catchCause((cause) =>
          Effect.logWarning("database readiness check failed", cause).pipe(
            Effect.andThen(Effect.fail(new DbNotReady({ message: "database is unreachable" })))
          )
        ),
        Effect.flatMap(([row]) =>
          row?.latest === latestMigrationId
            ? Effect.void
            : Effect.fail(new DbNotReady({ message: "database is not migrated to the version this release needs" }))
        )
      )
      const engine = Option.isSome(config.databaseUrl) ? "postgres" as const : "pglite" as const
      if (engine === "pglite") {
        // PGlite has no autovacuum: reclaim dead rows, mark pages all-visible (so BM25's covering index needs no
        // table visits) and refresh the planner's statistics as the data grows. Nor does it checkpoint by itself
        // (in one process, max_wal_size triggers nothing): without a checkpoint the write-ahead log keeps every
        // segment until the database closes, and a start after a crash replays all of it.
        yield* periodically(
          Effect.ignore(sql`VACUUM (ANALYZE)`).pipe(Effect.andThen(sql`CHECKPOINT`)),
          Duration.seconds(config.pgliteMaintenanceSeconds)
        )
      }
      if (engine === "postgres") {
        // A server with autovacuum off neither gathers planner statistics nor reclaims dead rows on its own: the
        // plans of statements prepared while the tables were small (sequential scans) stay as the tables grow, and
        // index-only scans visit the table for every row. The service then does what autovacuum would, by its rule
        // and the server's settings (a table whose changes since its last analysis or vacuum pass the threshold
        // plus the scale factor times its rows), checked every few seconds rather than once a minute: a bulk
        // ingest changes the tables' sizes by orders of magnitude in its first minute.
        const [setting] = yield* sql<{ on: boolean }>`SELECT current_setting('autovacuum') = 'on' AS on`.pipe(
          Effect.orDie
        )
        if (setting?.on === false) {
          const maintain = Effect.gen(function*() {
            const due = yield* sql<{ name: string; vacuum: boolean; analyze: boolean }>`
              WITH settings AS (
                SELECT
                  current_setting('autovacuum_vacuum_threshold')::float8 AS vt,
                  current_setting('autovacuum_vacuum_scale_factor')::float8 AS vs,
                  current_setting('autovacuum_vacuum_insert_threshold')::float8 AS it,
                  current_setting('autovacuum_vacuum_insert_scale_factor')::float8 AS "is",
                  current_setting('autovacuum_analyze_threshold')::float8 AS at,
                  current_setting('autovacuum_analyze_scale_factor')::float8 AS "as"
              )
              SELECT format('%I.%I', t.schemaname, t.relname) AS name,
                t.n_dead_tup > vt + vs * greatest(c.reltuples, 0)
                  OR t.n_ins_since_vacuum > it + "is" * greatest(c.reltuples, 0) AS vacuum,
                t.last_analyze IS NULL OR t.n_mod_since_analyze > at + "as" * greatest(c.reltuples, 0) AS analyze
              FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid, settings
              WHERE t.schemaname = current_schema()
              ORDER BY t.relname`
            for (const table of due) {
              if (table.vacuum) yield* sql.unsafe(`VACUUM (ANALYZE) ${table.name}`)
              else if (table.analyze) yield* sql.unsafe(`ANALYZE ${table.name}`)
            }
          })
          yield* periodically(maintain, Duration.seconds(5))
        }
      }
      return Db.of({ engine, check })
    })
  ).pipe(Layer.provideMerge(migrate), Layer.provideMerge(clientLayer))
}
