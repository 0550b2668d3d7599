import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { ServiceUnavailable, httpError } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { EngramConfig } from "../config.ts"
import { ModelSettings, Preferences } from "../domain/Settings.ts"
import { Db } from "../services/Db.ts"
import { Settings } from "../services/Settings.ts"
import { engramVersion } from "../version.ts"
import { AuthenticationLive } from "./Authentication.ts"

export const SystemHandlers = HttpApiBuilder.group(
  Api,
  "system",
  Effect.fn(function*(handlers) {
    const config = yield* EngramConfig
    const db = yield* Db
    const settings = yield* Settings

    const capabilities = {
      engine: { name: "engram" as const, version: engramVersion },
      api_version: "v1" as const,
      storage: db.engine,
      auth: { local_login: config.localLogin, registration: config.allowRegistration },
      strategies: [],
      connectors: [],
      embedding: null,
      llm: { provider: "none", model: null }
    }

    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        db.check.pipe(
          Effect.as({ status: "ready" as const, checks: [{ name: "database", ready: true, detail: "ok" }] }),
          Effect.mapError((error) => httpError(ServiceUnavailable, "not_ready", `Not ready: ${error.message}`))
        ))
      .handle("capabilities", () => Effect.succeed(capabilities))
      .handle("getModelSettings", () =>
        Effect.flatMap(CurrentUser, (user) => settings.get(user.id, "model_settings", ModelSettings)))
      .handle("putModelSettings", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => settings.put(user.id, "model_settings", ModelSettings, payload)))
      .handle("getPreferences", () =>
        Effect.flatMap(CurrentUser, (user) => settings.get(user.id, "preferences", Preferences)))
      .handle("putPreferences", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => settings.put(user.id, "preferences", Preferences, payload)))
  })
).pipe(Layer.provide(AuthenticationLive))
