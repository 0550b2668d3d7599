import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE EXTENSION IF NOT EXISTS vector`
  yield* sql`
    CREATE TABLE users (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      name text NOT NULL,
      email text,
      password_hash text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX users_name_unique ON users (lower(name))`
  yield* sql`
    CREATE TABLE user_settings (
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      kind text NOT NULL,
      value jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, kind)
    )`
})
