import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { sessionEfSearch } from "../adapters/Db.ts"
import type { EmbeddingModel } from "../adapters/Embedder.ts"
import { searchable } from "./Searchable.ts"

/** A registered embedding model and the table holding its vectors. */
export interface IndexedModel {
  readonly id: string
  readonly name: string
  readonly dimension: number
  readonly table: string
  /** active: the vectors search uses; building: being filled by a reindex; retired: replaced */
  readonly status: "active" | "building" | "retired"
}

const ModelRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  dimension: Schema.Int,
  table_name: Schema.String,
  status: Schema.Literals(["active", "building", "retired"])
})

const toModel = (row: typeof ModelRow.Type): IndexedModel => ({
  id: row.id,
  name: row.name,
  dimension: row.dimension,
  table: row.table_name,
  status: row.status
})

const modelId = (model: EmbeddingModel) =>
  createHash("sha256").update(`${model.name}|${model.dimension}`).digest("hex").slice(0, 16)

const vectorsPerStatement = 16

/** A vector as pgvector's text literal, for a `::vector` cast. */
export const vectorLiteral = (vector: ReadonlyArray<number>) => `[${vector.join(",")}]`

/**
 * Vectors live in one table per embedding model (`chunk_vectors_<id>`, vector(dimension), HNSW cosine), so
 * vectors of different models are never mixed and a reindex fills a new table before switching atomically.
 */
export class VectorIndex extends Context.Service<VectorIndex, {
  readonly active: Effect.Effect<Option.Option<IndexedModel>>
  /** The model's table, created on first use; the first model registered becomes active. */
  readonly register: (model: EmbeddingModel) => Effect.Effect<IndexedModel>
  readonly store: (
    model: IndexedModel,
    vectors: ReadonlyArray<{ readonly chunkId: string; readonly vector: ReadonlyArray<number> }>
  ) => Effect.Effect<void>
  /** Chunks of searchable document versions (or of one document version) with no vector in the model's table. */
  readonly missing: (
    model: IndexedModel,
    options: { readonly documentId?: string; readonly version?: number; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly text: string }>>
  readonly countMissing: (model: IndexedModel) => Effect.Effect<number>
  /** Makes `model` the active one; the previous active model's table is dropped. */
  readonly activate: (model: IndexedModel) => Effect.Effect<void>
  /** The `limit` searchable chunks of the sources nearest to `embedding` (cosine), best first, ties by id. */
  readonly nearest: (
    model: IndexedModel,
    embedding: ReadonlyArray<number>,
    sourceIds: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly score: number }>>
}>()("engram/VectorIndex") {
  static readonly layer = Layer.effect(
    VectorIndex,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const rows = (statement: Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
        statement.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(ModelRow))),
          Effect.map((decoded) => decoded.map(toModel)),
          Effect.orDie
        )

      const active = rows(sql`SELECT * FROM embedding_models WHERE status = 'active'`).pipe(
        Effect.map((models) => Option.fromNullishOr(models[0]))
      )

      const register = Effect.fn("VectorIndex.register")(function*(model: EmbeddingModel) {
        const id = modelId(model)
        const existing = yield* rows(sql`SELECT * FROM embedding_models WHERE id = ${id}`)
        if (existing[0] !== undefined && existing[0].status !== "retired") return existing[0]
        const table = `chunk_vectors_${id}`
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE embedding_models IN EXCLUSIVE MODE`
          const again = yield* rows(sql`SELECT * FROM embedding_models WHERE id = ${id}`)
          if (again[0] !== undefined && again[0].status !== "retired") return again[0]
          yield* sql.unsafe(`DROP TABLE IF EXISTS ${table}`)
          yield* sql.unsafe(`
            CREATE TABLE ${table} (
              chunk_id text PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
              embedding vector(${model.dimension}) NOT NULL
            )`)
          yield* sql.unsafe(
            `CREATE INDEX ${table}_hnsw ON ${table} USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)`
          )
          const hasActive = (yield* active).pipe(Option.isSome)
          const status = hasActive ? "building" : "active"
          yield* sql`
            INSERT INTO embedding_models (id, name, dimension, table_name, status, activated_at)
            VALUES (${id}, ${model.name}, ${model.dimension}, ${table}, ${status}, ${hasActive ? null : sql`now()`})
            ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, activated_at = EXCLUDED.activated_at`
          return { id, name: model.name, dimension: model.dimension, table, status } satisfies IndexedModel
        })).pipe(Effect.orDie)
      })

      const store = Effect.fn("VectorIndex.store")(function*(
        model: IndexedModel,
        vectors: ReadonlyArray<{ readonly chunkId: string; readonly vector: ReadonlyArray<number> }>
      ) {
        // Each vector costs an HNSW insertion: a few per statement keep each one short on the embedded engine.
        for (let i = 0; i < vectors.length; i += vectorsPerStatement) {
          const values = vectors.slice(i, i + vectorsPerStatement).map(({ chunkId, vector }) =>
            sql`(${chunkId}, ${vectorLiteral(vector)}::vector)`
          )
          yield* sql`
            INSERT INTO ${sql(model.table)} (chunk_id, embedding)
            SELECT v.chunk_id, v.embedding FROM (VALUES ${sql.csv(values)}) AS v (chunk_id, embedding)
            WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.chunk_id)
            ON CONFLICT (chunk_id) DO NOTHING`.pipe(Effect.orDie)
        }
      })

      const missing = Effect.fn("VectorIndex.missing")(function*(
        model: IndexedModel,
        options: { readonly documentId?: string; readonly version?: number; readonly limit: number }
      ) {
        const scope = options.documentId === undefined
          ? sql`c.version = d.active_version`
          : sql`c.document_id = ${options.documentId} AND c.version = ${options.version ?? 0}`
        return yield* sql<{ id: string; text: string }>`
          SELECT c.id, c.text FROM chunks c JOIN documents d ON d.id = c.document_id
          WHERE ${scope}
            AND NOT EXISTS (SELECT 1 FROM ${sql(model.table)} v WHERE v.chunk_id = c.id)
          ORDER BY c.id
          LIMIT ${options.limit}`.pipe(Effect.orDie)
      })

      const countMissing = Effect.fn("VectorIndex.countMissing")(function*(model: IndexedModel) {
        const [row] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM chunks c JOIN documents d ON d.id = c.document_id
          WHERE c.version = d.active_version
            AND NOT EXISTS (SELECT 1 FROM ${sql(model.table)} v WHERE v.chunk_id = c.id)`.pipe(Effect.orDie)
        return row?.n ?? 0
      })

      const activate = Effect.fn("VectorIndex.activate")(function*(model: IndexedModel) {
        yield* sql.withTransaction(Effect.gen(function*() {
          const previous = yield* active
          yield* sql`UPDATE embedding_models SET status = 'retired' WHERE status = 'active' AND id <> ${model.id}`
          yield* sql`UPDATE embedding_models SET status = 'active', activated_at = now() WHERE id = ${model.id}`
          if (Option.isSome(previous) && previous.value.id !== model.id) {
            yield* sql.unsafe(`DROP TABLE IF EXISTS ${previous.value.table}`)
          }
        })).pipe(Effect.orDie)
      })

      const nearest = Effect.fn("VectorIndex.nearest")(function*(
        model: IndexedModel,
        embedding: ReadonlyArray<number>,
        sourceIds: ReadonlyArray<string>,
        limit: number
      ) {
        const literal = vectorLiteral(embedding)
        const select = sql<{ id: string; distance: number }>`
          SELECT id, distance FROM (
            SELECT c.id, (v.embedding <=> ${literal}::vector)::float8 AS distance
            FROM ${sql(model.table)} v
            JOIN chunks c ON c.id = v.chunk_id
            JOIN documents d ON d.id = c.document_id AND ${searchable(sql, "d", "c.version")}
            WHERE c.source_id IN ${sql.in(sourceIds)}
            ORDER BY v.embedding <=> ${literal}::vector
            LIMIT ${limit}
          ) nearest
          ORDER BY distance, id`
        // pgvector 0.8 iterative scans keep walking the HNSW graph until enough rows pass the source filter. The
        // session has them on and keeps enough candidates for most lists (src/adapters/Db.ts); a longer list, or
        // a short answer (a small corpus, or a session without those settings), is asked again with both set here.
        const efSearch = Math.min(1000, Math.max(100, limit * 4))
        const quick = efSearch <= sessionEfSearch ? yield* select.pipe(Effect.orDie) : []
        const rows = quick.length === limit ? quick : yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SET LOCAL hnsw.iterative_scan = relaxed_order`
          yield* sql`SET LOCAL hnsw.ef_search = ${sql.literal(String(efSearch))}`
          return yield* select
        })).pipe(Effect.orDie)
        return rows.map((row) => ({ id: row.id, score: 1 - row.distance }))
      })

      return VectorIndex.of({ active, register, store, missing, countMissing, activate, nearest })
    })
  )
}
