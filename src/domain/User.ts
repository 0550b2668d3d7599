import { Schema } from "effect"

export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

/** `local`: a name-only identity created on first login; `password`: registered with a password. */
export const AuthKind = Schema.Literals(["local", "password"])
export type AuthKind = typeof AuthKind.Type

export const UserName = Schema.Trim.check(
  Schema.isMinLength(1, { message: "must not be empty" }),
  Schema.isMaxLength(64, { message: "must be at most 64 characters" }),
  Schema.isPattern(/^[^\p{Cc}]*$/u, { message: "must not contain control characters" })
).annotate({ description: "1 to 64 characters after trimming, no control characters; unique regardless of case" })

export class User extends Schema.Class<User>("User")({
  id: UserId,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  auth_kind: AuthKind,
  created_at: Schema.String.annotate({ description: "ISO-8601 UTC" })
}) {}
