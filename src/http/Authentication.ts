import { Effect, Layer } from "effect"
import { Unauthorized, httpError } from "../api/Errors.ts"
import { Authentication, CurrentUser } from "../api/Security.ts"
import { Auth } from "../services/Auth.ts"

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const auth = yield* Auth
    return Authentication.of({
      bearer: (httpEffect, { credential }) =>
        auth.authenticate(credential).pipe(
          Effect.mapError((error) => httpError(Unauthorized, error.reason, error.message)),
          Effect.flatMap((user) => Effect.provideService(httpEffect, CurrentUser, user))
        )
    })
  })
)
