import { Effect, Layer } from "effect"
import { Unauthorized } from "../api/Errors.ts"
import { Authentication, CurrentUser } from "../api/Security.ts"
import { Auth } from "../services/Auth.ts"

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const auth = yield* Auth
    return Authentication.of({
      bearer: (httpEffect, { credential }) =>
        auth.authenticate(credential).pipe(
          Effect.mapError((error) => Unauthorized.create(error.reason, error.message)),
          Effect.flatMap((user) => Effect.provideService(httpEffect, CurrentUser, user))
        )
    })
  })
)
