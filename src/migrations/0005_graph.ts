import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE entities (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      name text NOT NULL,
      kind text NOT NULL,
      description text,
      mention_count integer NOT NULL DEFAULT 0,
      first_seen timestamptz,
      last_seen timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX entities_mentions ON entities (source_id, mention_count DESC, id)`
  yield* sql`CREATE INDEX entities_recent ON entities (source_id, last_seen DESC NULLS LAST, id)`

  // A key may name entities of incompatible kinds ("Jordan" the person and the place), so the entity is in the key.
  yield* sql`
    CREATE TABLE entity_keys (
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      key text NOT NULL,
      entity_id text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
      PRIMARY KEY (source_id, key, entity_id)
    )`
  yield* sql`CREATE INDEX entity_keys_entity ON entity_keys (entity_id)`

  yield* sql`
    CREATE TABLE entity_aliases (
      entity_id text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
      alias text NOT NULL,
      PRIMARY KEY (entity_id, alias)
    )`

  yield* sql`
    CREATE TABLE entity_mentions (
      entity_id text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
      document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
      version integer NOT NULL,
      chunk_id text REFERENCES chunks (id) ON DELETE CASCADE,
      count integer NOT NULL
    )`
  yield* sql`CREATE INDEX entity_mentions_entity ON entity_mentions (entity_id, document_id, version)`
  yield* sql`CREATE INDEX entity_mentions_document ON entity_mentions (document_id, version)`
  yield* sql`CREATE INDEX entity_mentions_chunk ON entity_mentions (chunk_id) WHERE chunk_id IS NOT NULL`

  yield* sql`
    CREATE TABLE events (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      source_id text NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
      document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
      version integer NOT NULL,
      ordinal integer NOT NULL,
      statement text NOT NULL,
      kind text NOT NULL,
      time_start timestamptz,
      time_end timestamptz,
      time_precision text,
      time_text text,
      time_relative boolean NOT NULL DEFAULT false,
      place_entity_id text REFERENCES entities (id) ON DELETE SET NULL,
      confidence real NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX events_source_time ON events (source_id, time_start, id)`
  yield* sql`CREATE INDEX events_document ON events (document_id, version)`
  yield* sql`CREATE INDEX events_place ON events (place_entity_id) WHERE place_entity_id IS NOT NULL`

  yield* sql`
    CREATE TABLE event_chunks (
      event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      chunk_id text NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
      PRIMARY KEY (event_id, chunk_id)
    )`
  yield* sql`CREATE INDEX event_chunks_chunk ON event_chunks (chunk_id)`

  yield* sql`
    CREATE TABLE event_participants (
      event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      entity_id text NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
      role text NOT NULL,
      PRIMARY KEY (event_id, entity_id, role)
    )`
  yield* sql`CREATE INDEX event_participants_entity ON event_participants (entity_id, event_id)`
})
