import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { User, UserId } from "../domain/User.ts"

/** A user row, with the password hash that never leaves the server. */
export interface StoredUser {
  readonly user: User
  readonly passwordHash: Option.Option<string>
}

export class NameTaken extends Schema.TaggedError<NameTaken>()("NameTaken", { name: Schema.String }) {}

const UserRow = Schema.Struct({
  id: UserId,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  password_hash: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})

const toStored = (row: typeof UserRow.Type): StoredUser => ({
  user: new User({
    id: row.id,
    name: row.name,
    email: row.email,
    auth_kind: row.password_hash === null ? "local" : "password",
    created_at: row.created_at.toISOString()
  }),
  passwordHash: Option.fromNullishOr(row.password_hash)
})

/** Users the process keeps at hand after a lookup by id. */
const rememberedUsers = 10_000

export class Users extends Context.Service<Users, {
  readonly findById: (id: UserId) => Effect.Effect<Option.Option<StoredUser>>
  /** Case-insensitive, on the trimmed name. */
  readonly findByName: (name: string) => Effect.Effect<Option.Option<StoredUser>>
  readonly create: (input: {
    readonly name: string
    readonly email: string | null
    readonly passwordHash: string | null
  }) => Effect.Effect<StoredUser, NameTaken>
}>()("engram/Users") {
  static readonly layer = Layer.effect(
    Users,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const byId = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: UserRow,
        execute: (id) => sql`SELECT * FROM users WHERE id = ${id}`
      })
      const byName = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: UserRow,
        execute: (name) => sql`SELECT * FROM users WHERE lower(name) = lower(${name})`
      })
      const insert = SqlSchema.findOne({
        Request: Schema.Struct({
          name: Schema.String,
          email: Schema.NullOr(Schema.String),
          password_hash: Schema.NullOr(Schema.String)
        }),
        Result: UserRow,
        execute: (row) => sql`INSERT INTO users ${sql.insert(row)} RETURNING *`
      })

      // A user row never changes and is never deleted once created, so every request's token check can skip the
      // database for users it has seen (the last `rememberedUsers` fetched; nothing absent is remembered).
      const seen = new Map<string, StoredUser>()
      const remember = (stored: StoredUser) => {
        seen.set(stored.user.id, stored)
        if (seen.size > rememberedUsers) seen.delete(seen.keys().next().value!)
      }

      return Users.of({
        findById: Effect.fn("Users.findById")(function*(id) {
          const known = seen.get(id)
          if (known !== undefined) return Option.some(known)
          const found = Option.map(yield* Effect.orDie(byId(id)), toStored)
          if (Option.isSome(found)) remember(found.value)
          return found
        }),
        findByName: Effect.fn("Users.findByName")((name) =>
          byName(name.trim()).pipe(Effect.map(Option.map(toStored)), Effect.orDie)
        ),
        create: Effect.fn("Users.create")((input) =>
          insert({ name: input.name.trim(), email: input.email, password_hash: input.passwordHash }).pipe(
            Effect.map(toStored),
            Effect.catchTag("SqlError", (error) =>
              error.reason._tag === "UniqueViolation" || error.reason._tag === "ConstraintError"
                ? Effect.fail(new NameTaken({ name: input.name }))
                : Effect.die(error)),
            Effect.catchTag(["SchemaError", "NoSuchElementError"], Effect.die)
          )
        )
      })
    })
  )
}
