import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SignJWT } from "jose"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { engines, freshServer, TestServer } from "../support/server.ts"
import { login, request } from "../support/http.ts"

const signWith = (secret: Uint8Array, sub: string) =>
  Effect.promise(() =>
    new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(sub)
      .setIssuer("engram")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(secret)
  )

for (const engine of engines) {
  layer(freshServer(engine))(`identity with local login (${engine})`, (it) => {
    it.effect("first login creates a local identity and /auth/me returns it", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/auth/login", { json: { name: "  Ada Lovelace " } })
        assert.strictEqual(reply.status, 200)
        assert.strictEqual(reply.body.token_type, "bearer")
        assert.strictEqual(reply.body.expires_in, 3600)
        assert.strictEqual(reply.body.user.name, "Ada Lovelace")
        assert.strictEqual(reply.body.user.auth_kind, "local")
        const me = yield* request(url, "/api/v1/auth/me", { token: reply.body.access_token })
        assert.strictEqual(me.status, 200)
        assert.deepStrictEqual(me.body, reply.body.user)
        assert.match(me.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      }))

    it.effect("names are trimmed and case-insensitive: the same identity signs in", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const first = yield* request(url, "/api/v1/auth/login", { json: { name: "Grace" } })
        const second = yield* request(url, "/api/v1/auth/login", { json: { name: "  GRACE  " } })
        assert.strictEqual(first.body.user.id, second.body.user.id)
        assert.strictEqual(second.body.user.name, "Grace")
      }))

    it.effect("invalid names are 422 with the issue's path", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (const name of ["", "   ", "x".repeat(65), "bad\u0000name", "tab\tname"]) {
          const reply = yield* request(url, "/api/v1/auth/login", { json: { name } })
          assert.strictEqual(reply.status, 422, JSON.stringify(name))
          assert.strictEqual(reply.body.error.code, "validation_failed")
          assert.strictEqual(reply.body.error.issues[0].path, "body.name")
        }
        const ok = yield* request(url, "/api/v1/auth/login", { json: { name: "y".repeat(64) } })
        assert.strictEqual(ok.status, 200)
      }))

    it.effect("a password for an unknown or local user is invalid_credentials", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* login(url, "Linus")
        for (const name of ["Linus", "Nobody"]) {
          const reply = yield* request(url, "/api/v1/auth/login", { json: { name, password: "whatever-123" } })
          assert.strictEqual(reply.status, 401)
          assert.strictEqual(reply.body.error.code, "invalid_credentials")
        }
      }))

    it.effect("registration is 403 unless ENGRAM_ALLOW_REGISTRATION is true", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/auth/register", {
          json: { name: "Eve", password: "correct horse battery" }
        })
        assert.strictEqual(reply.status, 403)
        assert.strictEqual(reply.body.error.code, "registration_disabled")
        assert.match(reply.body.error.message, /ENGRAM_ALLOW_REGISTRATION/)
      }))

    it.effect("missing, malformed, wrongly signed and orphaned tokens are 401 with WWW-Authenticate", () =>
      Effect.gen(function*() {
        const { url, settings } = yield* TestServer
        const serverSecret = new TextEncoder().encode(
          Fs.readFileSync(Path.join(settings.dataDir, "jwt-secret"), "utf8").trim()
        )
        const userId = (yield* request(url, "/api/v1/auth/login", { json: { name: "Token Tester" } })).body.user.id
        const cases: ReadonlyArray<readonly [string | undefined, string]> = [
          [undefined, "token_missing"],
          ["not-a-jwt", "token_malformed"],
          [yield* signWith(new TextEncoder().encode("x".repeat(48)), userId), "token_signature_invalid"],
          [yield* signWith(serverSecret, "00000000-0000-0000-0000-000000000000"), "token_user_unknown"]
        ]
        for (const [token, code] of cases) {
          const reply = yield* request(url, "/api/v1/auth/me", token === undefined ? {} : { token })
          assert.strictEqual(reply.status, 401, code)
          assert.strictEqual(reply.body.error.code, code)
          assert.match(reply.headers.get("www-authenticate") ?? "", /^Bearer realm="engram"/)
        }
        const good = yield* request(url, "/api/v1/auth/me", { token: yield* signWith(serverSecret, userId) })
        assert.strictEqual(good.status, 200)
      }))

    it.effect("a token is checked before the body: no token and a bad body is 401, not 422", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/system/preferences", { method: "PUT", json: { theme: 42 } })
        assert.strictEqual(reply.status, 401)
      }))
  })

  layer(freshServer(engine, { allowRegistration: true }))(`identity with registration (${engine})`, (it) => {
    it.effect("register, then log in only with the right password", () =>
      Effect.gen(function*() {
        const { url, sql } = yield* TestServer
        const registered = yield* request(url, "/api/v1/auth/register", {
          json: { name: "Margaret", password: "apollo-guidance", email: "m@example.com" }
        })
        assert.strictEqual(registered.status, 201)
        assert.strictEqual(registered.body.user.auth_kind, "password")
        assert.strictEqual(registered.body.user.email, "m@example.com")
        const rows = yield* sql<{ password_hash: string }>`SELECT password_hash FROM users WHERE name = 'Margaret'`
        assert.match(rows[0]!.password_hash, /^\$argon2id\$/)

        const noPassword = yield* request(url, "/api/v1/auth/login", { json: { name: "margaret" } })
        assert.strictEqual(noPassword.status, 401)
        assert.strictEqual(noPassword.body.error.code, "password_required")
        const wrong = yield* request(url, "/api/v1/auth/login", { json: { name: "Margaret", password: "wrong-password" } })
        assert.strictEqual(wrong.status, 401)
        assert.strictEqual(wrong.body.error.code, "invalid_credentials")
        const right = yield* request(url, "/api/v1/auth/login", { json: { name: "MARGARET", password: "apollo-guidance" } })
        assert.strictEqual(right.status, 200)
        assert.strictEqual(right.body.user.id, registered.body.user.id)
      }))

    it.effect("a taken name is 409 in any letter case, for registered and local users", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* login(url, "Local Larry")
        for (const name of ["local larry", "MARGARET"]) {
          const reply = yield* request(url, "/api/v1/auth/register", { json: { name, password: "long-enough-pw" } })
          assert.strictEqual(reply.status, 409, name)
          assert.strictEqual(reply.body.error.code, "name_taken")
        }
      }))

    it.effect("short passwords and bad e-mails are 422", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const reply = yield* request(url, "/api/v1/auth/register", {
          json: { name: "Short", password: "1234567", email: "not-an-email" }
        })
        assert.strictEqual(reply.status, 422)
        const paths = reply.body.error.issues.map((issue: { path: string }) => issue.path).sort()
        assert.deepStrictEqual(paths, ["body.email", "body.password"])
      }))
  })

  layer(freshServer(engine, { allowRegistration: true, localLogin: false }))(
    `identity with local login off (${engine})`,
    (it) => {
      it.effect("name-only login is 403; password users still sign in", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const local = yield* request(url, "/api/v1/auth/login", { json: { name: "Anon" } })
          assert.strictEqual(local.status, 403)
          assert.strictEqual(local.body.error.code, "local_login_disabled")
          assert.match(local.body.error.message, /ENGRAM_LOCAL_LOGIN/)
          yield* request(url, "/api/v1/auth/register", { json: { name: "Barbara", password: "liskov-substitution" } })
          const reply = yield* request(url, "/api/v1/auth/login", {
            json: { name: "Barbara", password: "liskov-substitution" }
          })
          assert.strictEqual(reply.status, 200)
        }))
    }
  )

  // Three seconds leave time for the first check on a loaded machine; the token is then surely past its lifetime.
  layer(freshServer(engine, { tokenTtlSeconds: 3 }), { excludeTestServices: true })(`token expiry (${engine})`, (it) => {
    it.effect("a token stops working after its lifetime", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const token = yield* login(url, "Shortlived")
        // The second use is answered from the tokens already verified; their expiry still holds them.
        assert.strictEqual((yield* request(url, "/api/v1/auth/me", { token })).status, 200)
        assert.strictEqual((yield* request(url, "/api/v1/auth/me", { token })).status, 200)
        yield* Effect.sleep("4100 millis")
        const reply = yield* request(url, "/api/v1/auth/me", { token })
        assert.strictEqual(reply.status, 401)
        assert.strictEqual(reply.body.error.code, "token_expired")
      }))
  })
}
