import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SettingsKind } from "../domain/Settings.ts"
import type { UserId } from "../domain/User.ts"

/** Per-user JSON documents (model settings, preferences); validated by the caller's schema. */
export class Settings extends Context.Service<Settings, {
  readonly get: <S extends Schema.Codec<any, any>>(
    userId: UserId,
    kind: SettingsKind,
    schema: S
  ) => Effect.Effect<S["Type"]>
  readonly put: <S extends Schema.Codec<any, any>>(
    userId: UserId,
    kind: SettingsKind,
    schema: S,
    value: S["Type"]
  ) => Effect.Effect<S["Type"]>
}>()("engram/Settings") {
  static readonly layer = Layer.effect(
    Settings,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const get = Effect.fn("Settings.get")(function*<S extends Schema.Codec<any, any>>(
        userId: UserId,
        kind: SettingsKind,
        schema: S
      ) {
        const rows = yield* sql<{ value: unknown }>`
          SELECT value FROM user_settings WHERE user_id = ${userId} AND kind = ${kind}`.pipe(Effect.orDie)
        const stored = rows[0]?.value ?? {}
        return yield* Schema.decodeUnknownEffect(schema)(stored).pipe(Effect.orDie)
      })

      const put = Effect.fn("Settings.put")(function*<S extends Schema.Codec<any, any>>(
        userId: UserId,
        kind: SettingsKind,
        schema: S,
        value: S["Type"]
      ) {
        const encoded = yield* Schema.encodeEffect(schema)(value).pipe(Effect.orDie)
        yield* sql`
          INSERT INTO user_settings (user_id, kind, value) VALUES (${userId}, ${kind}, ${JSON.stringify(encoded)}::jsonb)
          ON CONFLICT (user_id, kind) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`.pipe(Effect.orDie)
        return value
      })

      return Settings.of({ get, put })
    })
  )
}
