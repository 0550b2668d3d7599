import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE agents (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      owner_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      instructions text NOT NULL DEFAULT '',
      model_settings jsonb NOT NULL,
      retrieval_settings jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX agents_owner ON agents (owner_id, created_at DESC, id DESC)`

  yield* sql`
    CREATE TABLE agent_bindings (
      agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, source_id)
    )`

  yield* sql`
    CREATE TABLE conversations (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
      owner_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      title text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX conversations_agent ON conversations (agent_id, updated_at DESC, id DESC)`

  yield* sql`
    CREATE TABLE messages (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('user', 'assistant')),
      content text NOT NULL,
      run_id text,
      citations jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX messages_conversation ON messages (conversation_id, created_at, id)`

  yield* sql`
    CREATE TABLE runs (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      agent_id text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
      owner_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      conversation_id text REFERENCES conversations (id) ON DELETE SET NULL,
      question text NOT NULL,
      status text NOT NULL CHECK (status IN ('running', 'completed', 'cancelled', 'failed')),
      answer text NOT NULL DEFAULT '',
      citations jsonb NOT NULL DEFAULT '[]',
      retrieval jsonb,
      usage jsonb,
      provider text NOT NULL,
      model text,
      error_code text,
      error_message text,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      heartbeat_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX runs_agent ON runs (agent_id, created_at DESC)`
  yield* sql`CREATE INDEX runs_running ON runs (heartbeat_at) WHERE status = 'running'`
})
