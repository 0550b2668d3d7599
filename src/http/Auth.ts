import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { Conflict, Forbidden, Unauthorized, httpError } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { Auth, type AuthError, type Session } from "../services/Auth.ts"
import { AuthenticationLive } from "./Authentication.ts"

const tokenResponse = (session: Session) => ({
  access_token: session.accessToken,
  token_type: "bearer" as const,
  expires_in: session.expiresIn,
  user: session.user
})

const loginError = (error: AuthError) =>
  error.reason === "local_login_disabled"
    ? httpError(Forbidden, error.reason, error.message)
    : httpError(Unauthorized, error.reason, error.message)

const registerError = (error: AuthError) =>
  error.reason === "name_taken"
    ? httpError(Conflict, error.reason, error.message)
    : httpError(Forbidden, error.reason, error.message)

export const AuthHandlers = HttpApiBuilder.group(
  Api,
  "auth",
  Effect.fn(function*(handlers) {
    const auth = yield* Auth
    return handlers
      .handle("login", ({ payload }) =>
        auth.login(payload).pipe(
          Effect.map(tokenResponse),
          Effect.mapError(loginError)
        ))
      .handle("register", ({ payload }) =>
        auth.register(payload).pipe(
          Effect.map(tokenResponse),
          Effect.mapError(registerError)
        ))
      .handle("me", () => CurrentUser)
  })
).pipe(Layer.provide(AuthenticationLive))
