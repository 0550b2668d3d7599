import { Schema } from "effect"
import { trimmedTextOf } from "./Text.ts"

export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

/** `local`: a name-only identity created on first login; `password`: registered with a password. */
export const AuthKind = Schema.Literals(["local", "password"])
export type AuthKind = typeof AuthKind.Type

export const UserName = trimmedTextOf(1, 64).check(
  Schema.isPattern(/^[^\p{Cc}]*$/u, { message: "must not contain control characters" })
).annotate({ description: "1 to 64 characters after trimming, no control characters; unique regardless of case" })

export class User extends Schema.Class<User>("User")({
  id: UserId,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  auth_kind: AuthKind,
  created_at: Schema.String.annotate({ description: "ISO-8601 UTC" })
}) {}
