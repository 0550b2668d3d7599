import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { randomBytes } from "node:crypto"

/**
 * Runs `f` with a connection to the PostgreSQL database at `url` opened for it alone and closed after it. Not a pool
 * held for a whole run: effect 4.1.0's pool retires a connection idle for 60 s, and a pool left without one cannot
 * open another from a finalizer of its own scope — a `DROP DATABASE` there waited forever (docs/decisions.md).
 */
const withAdminConnection = <A, E>(url: string, f: (admin: PgClient.PgClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(
    Effect.provide(Reactivity.layer)
  )

/**
 * A fresh database `<prefix>_<random>` on the PostgreSQL server of `serverUrl` (whose user may create databases),
 * dropped with its connections when the scope closes (tests and benchmarks); `drop` drops it earlier.
 */
export const throwawayDatabase = (serverUrl: string, prefix: string) =>
  Effect.gen(function*() {
    const name = `${prefix}_${randomBytes(6).toString("hex")}`
    yield* withAdminConnection(serverUrl, (admin) => admin.unsafe(`CREATE DATABASE ${name}`))
    yield* Effect.addFinalizer(() =>
      withAdminConnection(serverUrl, (admin) => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).pipe(
        Effect.ignore
      )
    )
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    return {
      name,
      url: url.toString(),
      drop: withAdminConnection(serverUrl, (admin) => admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`))
    }
  })
