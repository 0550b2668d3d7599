import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"

/**
 * Runs `f` with a connection to the PostgreSQL database at `url` opened for it alone and closed after it (tests and
 * scripts creating and dropping throwaway databases). Not a pool held for a whole run: effect 4.1.0's pool retires a
 * connection idle for 60 s, and a pool left without one cannot open another from a finalizer of its own scope — a
 * `DROP DATABASE` there waited forever (docs/decisions.md).
 */
export const withAdminConnection = <A, E>(url: string, f: (admin: PgClient.PgClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(
    Effect.provide(Reactivity.layer)
  )
