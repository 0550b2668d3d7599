import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { User } from "../domain/User.ts"
import { Unauthorized } from "./Errors.ts"

/** The user a verified bearer token belongs to. */
export class CurrentUser extends Context.Service<CurrentUser, User>()("engram/CurrentUser") {}

/** Requires `Authorization: Bearer <access_token>` from POST /auth/login or /auth/register. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, {
  provides: CurrentUser
  requires: never
}>()("engram/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: Unauthorized
}) {}
