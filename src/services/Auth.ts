import { hash, verify } from "@node-rs/argon2"
import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { errors as JoseErrors, jwtVerify, SignJWT } from "jose"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { EngramConfig } from "../config.ts"
import { createDirectory } from "../dataDir.ts"
import type { User } from "../domain/User.ts"
import { UserId } from "../domain/User.ts"
import { StartupError } from "../adapters/Db.ts"
import { Users } from "./Users.ts"

export const AuthFailure = Schema.Literals([
  "local_login_disabled",
  "registration_disabled",
  "password_required",
  "invalid_credentials",
  "name_taken",
  "token_missing",
  "token_malformed",
  "token_expired",
  "token_signature_invalid",
  "token_user_unknown"
])
export type AuthFailure = typeof AuthFailure.Type

export class AuthError extends Schema.TaggedError<AuthError>()("AuthError", {
  reason: AuthFailure,
  message: Schema.String
}) {}

export interface Session {
  readonly accessToken: string
  readonly expiresIn: number
  readonly user: User
}

const issuer = "engram"
/** How many verified tokens are remembered (a few hundred bytes each). */
const verifiedTokenLimit = 4096

/** ENGRAM_JWT_SECRET, or a random secret generated once and kept in the data directory (mode 0600). */
const loadSigningKey = Effect.gen(function*() {
  const config = yield* EngramConfig
  if (Option.isSome(config.jwtSecret)) {
    return new TextEncoder().encode(Redacted.value(config.jwtSecret.value))
  }
  const file = Path.join(Path.resolve(config.dataDir), "jwt-secret")
  return yield* Effect.try({
    try: () => {
      createDirectory(Path.dirname(file))
      try {
        Fs.writeFileSync(file, randomBytes(48).toString("base64url"), { flag: "wx", mode: 0o600 })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      }
      const secret = Fs.readFileSync(file, "utf8").trim()
      if (secret.length < 32) throw new Error(`${file} holds fewer than 32 characters`)
      return new TextEncoder().encode(secret)
    },
    catch: (error) =>
      new StartupError({ message: `Cannot prepare the token signing secret: ${(error as Error).message}` })
  })
})

const tokenFailure = (error: unknown): AuthError => {
  if (error instanceof JoseErrors.JWTExpired) {
    return new AuthError({ reason: "token_expired", message: "The access token has expired; log in again" })
  }
  if (error instanceof JoseErrors.JWSSignatureVerificationFailed) {
    return new AuthError({ reason: "token_signature_invalid", message: "The access token's signature is not valid" })
  }
  return new AuthError({ reason: "token_malformed", message: "The access token is malformed" })
}

export class Auth extends Context.Service<Auth, {
  readonly login: (input: { readonly name: string; readonly password?: string | undefined }) => Effect.Effect<
    Session,
    AuthError
  >
  readonly register: (input: {
    readonly name: string
    readonly password: string
    readonly email?: string | undefined
  }) => Effect.Effect<Session, AuthError>
  readonly authenticate: (token: Redacted.Redacted<string>) => Effect.Effect<User, AuthError>
  /** Administrators may run instance-wide operations: the users named in ENGRAM_ADMINS (case-insensitive). */
  readonly isAdministrator: (user: User) => boolean
}>()("engram/Auth") {
  static readonly layer = Layer.effect(
    Auth,
    Effect.gen(function*() {
      const config = yield* EngramConfig
      const users = yield* Users
      const key = yield* loadSigningKey

      const issue = Effect.fn("Auth.issue")(function*(user: User) {
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const accessToken = yield* Effect.promise(() =>
          new SignJWT({})
            .setProtectedHeader({ alg: "HS256", typ: "JWT" })
            .setSubject(user.id)
            .setIssuer(issuer)
            .setIssuedAt(now)
            .setExpirationTime(now + config.tokenTtlSeconds)
            .sign(key)
        )
        return { accessToken, expiresIn: config.tokenTtlSeconds, user } satisfies Session
      })

      const invalidCredentials = new AuthError({
        reason: "invalid_credentials",
        message: "Wrong name or password"
      })

      const login = Effect.fn("Auth.login")(function*(input: {
        readonly name: string
        readonly password?: string | undefined
      }) {
        const existing = yield* users.findByName(input.name)
        const passwordHash = Option.flatMap(existing, (stored) => stored.passwordHash)
        if (Option.isSome(existing) && Option.isSome(passwordHash)) {
          const password = input.password
          if (password === undefined) {
            return yield* new AuthError({
              reason: "password_required",
              message: "This user registered with a password; send it with the name"
            })
          }
          const matches = yield* Effect.promise(() => verify(passwordHash.value, password))
          if (!matches) return yield* invalidCredentials
          return yield* issue(existing.value.user)
        }
        if (input.password !== undefined) return yield* invalidCredentials
        if (!config.localLogin) {
          return yield* new AuthError({
            reason: "local_login_disabled",
            message: "Name-only login is disabled on this server (ENGRAM_LOCAL_LOGIN=false); log in with a password"
          })
        }
        if (Option.isSome(existing)) return yield* issue(existing.value.user)
        const created = yield* users.create({ name: input.name, email: null, passwordHash: null }).pipe(
          // Two first logins with one name race to create it: the loser signs in to the winner's identity.
          Effect.catchTag("NameTaken", () =>
            users.findByName(input.name).pipe(Effect.flatMap(Effect.fromOption), Effect.orDie)
          )
        )
        yield* Effect.logInfo("local identity created").pipe(Effect.annotateLogs("user_id", created.user.id))
        return yield* issue(created.user)
      })

      const register = Effect.fn("Auth.register")(function*(input: {
        readonly name: string
        readonly password: string
        readonly email?: string | undefined
      }) {
        if (!config.allowRegistration) {
          return yield* new AuthError({
            reason: "registration_disabled",
            message: "Registration is disabled on this server (ENGRAM_ALLOW_REGISTRATION=false)"
          })
        }
        const passwordHash = yield* Effect.promise(() => hash(input.password))
        const created = yield* users.create({ name: input.name, email: input.email ?? null, passwordHash }).pipe(
          Effect.catchTag("NameTaken", () =>
            Effect.fail(new AuthError({ reason: "name_taken", message: `The name "${input.name}" is already taken` }))
          )
        )
        yield* Effect.logInfo("user registered").pipe(Effect.annotateLogs("user_id", created.user.id))
        return yield* issue(created.user)
      })

      /**
       * Tokens verified before, by their text, with their subject and expiry (seconds), oldest first: a client sends
       * the same token with every request, and its signature and claims need checking once. At most
       * `verifiedTokenLimit` are kept; the expiry is checked on every use.
       */
      const verified = new Map<string, { readonly subject: string; readonly expires: number }>()
      const verifiedSubject = (token: string, now: number) => {
        const known = verified.get(token)
        if (known !== undefined && known.expires > Math.floor(now / 1000)) return Effect.succeed(known.subject)
        verified.delete(token)
        return Effect.tryPromise({
          try: () =>
            jwtVerify(token, key, {
              algorithms: ["HS256"],
              issuer,
              requiredClaims: ["sub", "iat", "exp"],
              currentDate: new Date(now)
            }),
          catch: tokenFailure
        }).pipe(Effect.map(({ payload }) => {
          if (verified.size >= verifiedTokenLimit) verified.delete(verified.keys().next().value!)
          verified.set(token, { subject: payload.sub!, expires: payload.exp! })
          return payload.sub!
        }))
      }

      const authenticate = Effect.fn("Auth.authenticate")(function*(token: Redacted.Redacted<string>) {
        const raw = Redacted.value(token)
        if (raw === "") {
          return yield* new AuthError({
            reason: "token_missing",
            message: "Send the access token from /auth/login as `Authorization: Bearer <token>`"
          })
        }
        const now = yield* Clock.currentTimeMillis
        const subject = yield* verifiedSubject(raw, now)
        const stored = yield* users.findById(UserId.make(subject))
        if (Option.isNone(stored)) {
          return yield* new AuthError({ reason: "token_user_unknown", message: "The token's user no longer exists" })
        }
        return stored.value.user
      })

      const administrators = new Set(config.admins.map((name) => name.toLowerCase()))
      const isAdministrator = (user: User) => administrators.has(user.name.trim().toLowerCase())

      return Auth.of({ login, register, authenticate, isAdministrator })
    })
  )
}
