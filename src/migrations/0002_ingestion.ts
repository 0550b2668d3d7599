import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sources (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      owner_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      connector_kind text NOT NULL,
      config jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      last_synced_at timestamptz
    )`
  yield* sql`CREATE INDEX sources_owner ON sources (owner_id, created_at DESC, id DESC)`

  yield* sql`
    CREATE TABLE documents (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      title text NOT NULL,
      kind text NOT NULL,
      format text NOT NULL,
      mime_type text NOT NULL,
      size_bytes integer NOT NULL,
      content_hash text NOT NULL,
      external_key text,
      status text NOT NULL,
      stage text,
      error_code text,
      error_message text,
      error_stage text,
      job_id text,
      active_version integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      ready_at timestamptz,
      UNIQUE (source_id, content_hash)
    )`
  yield* sql`CREATE INDEX documents_source ON documents (source_id, created_at DESC, id DESC)`
  yield* sql`CREATE UNIQUE INDEX documents_external_key ON documents (source_id, external_key)`

  yield* sql`
    CREATE TABLE document_originals (
      document_id text PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
      content bytea NOT NULL
    )`

  yield* sql`
    CREATE TABLE document_parses (
      document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
      version integer NOT NULL,
      text text NOT NULL,
      blocks jsonb NOT NULL,
      parser text NOT NULL,
      PRIMARY KEY (document_id, version)
    )`

  yield* sql`
    CREATE TABLE chunks (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      version integer NOT NULL,
      ordinal integer NOT NULL,
      text text NOT NULL,
      token_count integer NOT NULL,
      section_path jsonb NOT NULL,
      char_start integer NOT NULL,
      char_end integer NOT NULL,
      speaker text,
      spoken_at timestamptz,
      UNIQUE (document_id, version, ordinal)
    )`
  yield* sql`CREATE INDEX chunks_source ON chunks (source_id)`

  yield* sql`
    CREATE TABLE embedding_models (
      id text PRIMARY KEY,
      name text NOT NULL,
      dimension integer NOT NULL,
      table_name text NOT NULL UNIQUE,
      status text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      activated_at timestamptz
    )`

  yield* sql`
    CREATE TABLE jobs (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      owner_id text REFERENCES users (id) ON DELETE CASCADE,
      kind text NOT NULL,
      source_id text REFERENCES sources (id) ON DELETE CASCADE,
      document_id text,
      document_version integer,
      status text NOT NULL,
      stage text,
      completed_stage text,
      progress_done integer NOT NULL DEFAULT 0,
      progress_total integer NOT NULL DEFAULT 0,
      attempts integer NOT NULL DEFAULT 0,
      run_after timestamptz NOT NULL DEFAULT now(),
      lease_owner text,
      lease_expires_at timestamptz,
      error_code text,
      error_message text,
      error_stage text,
      result jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX jobs_claimable ON jobs (run_after, created_at) WHERE status IN ('queued', 'running')`
  yield* sql`CREATE INDEX jobs_document ON jobs (document_id)`
})
