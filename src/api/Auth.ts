import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { characters, Text } from "../domain/Text.ts"
import { User, UserName } from "../domain/User.ts"
import { Conflict, Forbidden, Unauthorized } from "./Errors.ts"
import { Authentication } from "./Security.ts"

const Password = Text.check(characters(8, 1024))

const Email = Text.check(
  characters(1, 254),
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "must be an e-mail address" })
)

export const LoginRequest = Schema.Struct({
  name: UserName,
  password: Schema.optionalKey(Text.check(characters(0, 1024))).annotate({
    description: "Required for users who registered with a password; not used for local identities"
  })
}).annotate({ identifier: "LoginRequest" })

export const RegisterRequest = Schema.Struct({
  name: UserName,
  password: Password,
  email: Schema.optionalKey(Email)
}).annotate({ identifier: "RegisterRequest" })

export const TokenResponse = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.Literal("bearer"),
  expires_in: Schema.Int.annotate({ description: "Seconds until the token expires" }),
  user: User
}).annotate({ identifier: "TokenResponse" })

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("login", "/login", {
      payload: LoginRequest,
      success: TokenResponse,
      error: [Unauthorized, Forbidden]
    }).annotateMerge(OpenApi.annotations({
      summary: "Sign in and receive a bearer token",
      description: "Name-only login signs in to a local identity, creating it on first use; it answers 403 " +
        "local_login_disabled when ENGRAM_LOCAL_LOGIN=false. Users who registered with a password must send it " +
        "(401 password_required or invalid_credentials otherwise). Names are trimmed and compared case-insensitively."
    })),
    HttpApiEndpoint.post("register", "/register", {
      payload: RegisterRequest,
      success: TokenResponse.pipe(HttpApiSchema.status(201)),
      error: [Forbidden, Conflict]
    }).annotateMerge(OpenApi.annotations({
      summary: "Register a user with a password",
      description: "Only when ENGRAM_ALLOW_REGISTRATION=true (403 registration_disabled otherwise). " +
        "The password (8 to 1024 characters) is stored as an argon2id hash. 409 name_taken when the name " +
        "is already used, by a registered user or a local identity, in any letter case."
    })),
    HttpApiEndpoint.get("me", "/me", {
      success: User
    }).middleware(Authentication).annotateMerge(OpenApi.annotations({
      summary: "The signed-in user"
    }))
  )
  .prefix("/auth")
  .annotateMerge(OpenApi.annotations({ title: "Identity", description: "Local identities, registration and tokens" }))
{}
