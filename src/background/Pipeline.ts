import { Array as Arr, Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { EngramConfig } from "../config.ts"
import { type Stage, stages } from "../domain/Document.ts"
import { stageDuration, timed } from "../observability/Metrics.ts"
import type { ChunkMessage } from "../ingest/chunk.ts"
import type { Format } from "../ingest/parse/formats.ts"
import { Embedder } from "../adapters/Embedder.ts"
import { Extractor } from "../adapters/Extractor.ts"
import { withoutRepeated } from "../extract/budget.ts"
import { Graph } from "../stores/Graph.ts"
import { IngestThreads } from "../adapters/IngestThreads.ts"
import { type JobRow, Jobs } from "../stores/Jobs.ts"
import { LexicalIndex } from "../stores/LexicalIndex.ts"
import { type FinishedStage, Lifecycle, type Outcome } from "../stores/Lifecycle.ts"
import { Syncs } from "../services/Syncs.ts"
import { type IndexedModel, VectorIndex } from "../stores/VectorIndex.ts"

/** A stage failed. Permanent failures (content that will never parse) are not retried. */
export class StageFailure extends Data.TaggedError("StageFailure")<{
  readonly code: string
  readonly message: string
  readonly stage: Stage | "reindex" | "sync"
  readonly permanent: boolean
}> {}

export type { Outcome } from "../stores/Lifecycle.ts"

const embedBatch = 64

/**
 * The document pipeline: parse → chunk → extract → embed → index. Every stage writes only rows keyed by
 * (document, version), so re-running one after a crash replaces its own output and never duplicates it.
 * Entering and finishing a stage, and making the version searchable, are Lifecycle transitions.
 */
export class Pipeline extends Context.Service<Pipeline, {
  readonly run: (job: JobRow) => Effect.Effect<Outcome, StageFailure>
}>()("engram/Pipeline") {
  static readonly layer = Layer.effect(
    Pipeline,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* EngramConfig
      const jobs = yield* Jobs
      const embedder = yield* Embedder
      const vectors = yield* VectorIndex
      const syncs = yield* Syncs
      const lexical = yield* LexicalIndex
      const extractor = yield* Extractor
      const graph = yield* Graph
      const threads = yield* IngestThreads
      const lifecycle = yield* Lifecycle

      /** On a worker thread, within ENGRAM_PARSE_TIMEOUT_SECONDS; text past ENGRAM_PARSE_MAX_CHARS is cut. */
      const parse = Effect.fn("Pipeline.parse")(function*(job: JobRow, documentId: string, version: number) {
        const [original] = yield* sql<{ format: Format; content: Uint8Array }>`
          SELECT d.format, o.content FROM documents d JOIN document_originals o ON o.document_id = d.id
          WHERE d.id = ${documentId}`.pipe(Effect.orDie)
        if (original === undefined) return 0
        const parsed = yield* threads.run(
          { kind: "parse", format: original.format, bytes: original.content, maxChars: settings.parseMaxChars },
          settings.parseTimeoutSeconds * 1000
        ).pipe(
          Effect.mapError((error) =>
            error.permanent
              ? new StageFailure({ code: error.code, message: error.message, stage: "parse", permanent: true })
              : new StageFailure({
                code: "parse_failed",
                message: "The document could not be parsed",
                stage: "parse",
                permanent: true
              })
          )
        )
        if (parsed.blockCount === 0) {
          return yield* new StageFailure({
            code: "no_text",
            message: "No text could be extracted from the document",
            stage: "parse",
            permanent: true
          })
        }
        yield* sql`
          INSERT INTO document_parses (document_id, version, text, blocks, parser)
          VALUES (${documentId}, ${version}, ${parsed.text}, ${parsed.blocksJson}::jsonb, ${original.format})
          ON CONFLICT (document_id, version) DO UPDATE SET text = EXCLUDED.text, blocks = EXCLUDED.blocks`
          .pipe(Effect.orDie)
        if (parsed.charsTotal > parsed.text.length) {
          yield* jobs.record(job.id, {
            parse: { complete: false, chars_read: parsed.text.length, chars_total: parsed.charsTotal, reason: "char_limit" }
          })
        }
        return original.content.byteLength
      })

      /**
       * On a worker thread, within ENGRAM_PARSE_TIMEOUT_SECONDS; rows and postings written in bounded batches.
       * Answers how many chunks the version has.
       */
      const chunk = Effect.fn("Pipeline.chunk")(function*(documentId: string, version: number) {
        const [parse] = yield* sql<{ text: string; blocks: string; source_id: string; document_date: Date | null }>`
          SELECT p.text, p.blocks::text AS blocks, d.source_id, d.document_date
          FROM document_parses p JOIN documents d ON d.id = p.document_id
          WHERE p.document_id = ${documentId} AND p.version = ${version}`.pipe(Effect.orDie)
        if (parse === undefined) return 0
        const drafts = yield* threads.run({
          kind: "chunk",
          text: parse.text,
          blocksJson: parse.blocks,
          options: {
            targetTokens: settings.chunkTokens,
            overlapTokens: settings.chunkOverlapTokens,
            documentDate: parse.document_date?.toISOString() ?? null
          }
        }, settings.parseTimeoutSeconds * 1000).pipe(
          Effect.mapError((error) =>
            new StageFailure({ code: "chunk_failed", message: error.message, stage: "chunk", permanent: error.permanent })
          )
        )
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM chunks WHERE document_id = ${documentId} AND version = ${version}`
          for (let i = 0; i < drafts.length; i += 200) {
            const rows = drafts.slice(i, i + 200).map((draft) => ({
              document_id: documentId,
              source_id: parse.source_id,
              version,
              ordinal: draft.ordinal,
              text: draft.text,
              near_key: draft.near_key,
              token_count: draft.token_count,
              section_path: JSON.stringify(draft.section_path),
              char_start: draft.char_start,
              char_end: draft.char_end,
              speaker: draft.speaker,
              spoken_at: draft.spoken_at,
              spoken_until: draft.spoken_until,
              messages: JSON.stringify(draft.messages)
            }))
            if (Arr.isArrayNonEmpty(rows)) yield* sql`INSERT INTO chunks ${sql.insert(rows)}`
          }
          yield* lexical.measure(documentId, version)
        })).pipe(Effect.orDie)
        return drafts.length
      })

      /**
       * Entities and events of the version's chunks, within the extraction budget; stored per (document, version),
       * so a re-run replaces them. The job's result says how much was read (`extraction`).
       */
      const extract = Effect.fn("Pipeline.extract")(function*(job: JobRow, documentId: string, version: number) {
        const [document] = yield* sql<{ title: string; document_date: Date | null }>`
          SELECT title, document_date FROM documents WHERE id = ${documentId}`.pipe(Effect.orDie)
        if (document === undefined) return
        // Each chunk with the length of the text it repeats from the one before (the chunker's overlap), which
        // extraction reads once: the budget and the document's total count only what is read.
        const versionChunks = sql`
          SELECT ordinal, text, char_start, speaker, spoken_at, messages, repeated,
            greatest(0, length(text) - repeated) AS new_chars
          FROM (
            SELECT ordinal, text, char_start, speaker, spoken_at, messages,
              greatest(0, lag(char_end) OVER (ORDER BY ordinal) - char_start) AS repeated
            FROM chunks WHERE document_id = ${documentId} AND version = ${version}
          ) c`
        const [size] = yield* sql<{ chunks: number; chars: number }>`
          SELECT count(*)::int AS chunks, coalesce(sum(new_chars), 0)::int AS chars FROM (${versionChunks}) c`
          .pipe(Effect.orDie)
        // Only the chunks the extraction budget can reach are read: a large document's text stays in the database.
        const chunks = yield* sql<{
          ordinal: number
          text: string
          char_start: number
          speaker: string | null
          spoken_at: Date | null
          messages: ReadonlyArray<ChunkMessage>
          repeated: number
        }>`
          SELECT ordinal, text, char_start, speaker, spoken_at, messages, repeated FROM (
            SELECT *, sum(new_chars) OVER (ORDER BY ordinal) - new_chars AS before FROM (${versionChunks}) c
          ) c
          WHERE before < ${settings.extractMaxChars}
          ORDER BY ordinal`.pipe(Effect.orDie)
        const { extraction, coverage } = yield* extractor.extract({
          title: document.title,
          documentDate: document.document_date?.toISOString() ?? null,
          chunks: chunks.map((chunk) =>
            withoutRepeated({
              ordinal: chunk.ordinal,
              text: chunk.text,
              speaker: chunk.speaker,
              spokenAt: chunk.spoken_at?.toISOString() ?? null,
              messages: chunk.messages.map((message) => ({
                speaker: message.speaker,
                spokenAt: message.spoken_at,
                start: message.char_start - chunk.char_start,
                end: message.char_end - chunk.char_start
              }))
            }, chunk.repeated)
          )
        })
        yield* graph.store(documentId, version, extraction)
        if (coverage !== null) {
          const whole = chunks.length === (size?.chunks ?? 0)
          yield* jobs.record(job.id, {
            extraction: whole ? coverage : {
              ...coverage,
              complete: false,
              chars_total: size?.chars ?? coverage.chars_total,
              reason: coverage.reason ?? "char_limit"
            }
          })
        }
      })

      /** Embeds, batch by batch, the chunks in `scope` that have no vector in the model's table yet. */
      const embedMissing = Effect.fnUntraced(function*(
        job: JobRow,
        model: IndexedModel,
        scope: { readonly documentId?: string; readonly version?: number },
        stage: "embed" | "reindex",
        progress: { readonly base: number; readonly total?: number }
      ) {
        let done = progress.base
        while (true) {
          const batch = yield* vectors.missing(model, { ...scope, limit: embedBatch })
          if (batch.length === 0) return
          const embedded = yield* embedder.embed(batch.map((c) => c.text), "passage").pipe(
            Effect.mapError((error) =>
              new StageFailure({ code: "embedding_failed", message: error.message, stage, permanent: false })
            )
          )
          yield* vectors.store(model, batch.map((c, i) => ({ chunkId: c.id, vector: embedded[i]! })))
          done += batch.length
          yield* jobs.progress(
            job.id,
            progress.total === undefined ? { done } : { done, total: Math.max(progress.total, done) }
          )
        }
      })

      /** Without a ready model the chunks stay lexical-only; a reindex job embeds them once a model is ready. */
      const embed = Effect.fn("Pipeline.embed")(function*(job: JobRow, documentId: string, version: number) {
        const state = yield* embedder.state
        if (state._tag !== "Ready") return
        const model = yield* vectors.register(state.model)
        const [chunks] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM chunks WHERE document_id = ${documentId} AND version = ${version}`
          .pipe(Effect.orDie)
        // Embedding is the second of each chunk's three steps: progress goes from chunks to 2 × chunks.
        yield* embedMissing(job, model, { documentId, version }, "embed", { base: chunks?.n ?? 0 })
      })

      const runDocument = Effect.fn("Pipeline.runDocument")(function*(job: JobRow) {
        const documentId = job.document_id!
        const version = job.document_version ?? 1
        const from = job.completed_stage === null ? 0 : stages.indexOf(job.completed_stage as Stage) + 1
        // Each stage's entry also records the one before it (one commit per stage); activation records the last.
        let finished: FinishedStage | undefined
        for (const stage of stages.slice(from)) {
          if (stage !== "index") {
            const interrupted = yield* lifecycle.enter(job, stage, finished)
            if (interrupted !== undefined) return interrupted
          }
          // One span per stage, a child of the job's; its failure is recorded on it.
          const traced = <A, E, R>(work: Effect.Effect<A, E, R>) =>
            timed(stageDuration, { stage }, work).pipe(Effect.withSpan(`engram.stage.${stage}`, {
              attributes: {
                "engram.stage": stage,
                "engram.document.id": documentId,
                "engram.source.id": job.source_id ?? "",
                "engram.job.attempt": job.attempts + 1
              }
            }))
          if (stage === "index") return yield* traced(lifecycle.activate(job))
          const chunks = yield* traced(Effect.gen(function*() {
            if (stage === "parse") {
              yield* Effect.annotateCurrentSpan("engram.document.bytes", yield* parse(job, documentId, version))
            } else if (stage === "chunk") {
              const made = yield* chunk(documentId, version)
              yield* Effect.annotateCurrentSpan("engram.document.chunks", made)
              return made
            } else if (stage === "extract") yield* extract(job, documentId, version)
            else yield* embed(job, documentId, version)
            return undefined
          }))
          finished = { stage, chunks }
        }
        return "done" as const
      })

      /** Embeds every searchable chunk missing from the loaded model's table, then makes that model active. */
      const runReindex = Effect.fn("Pipeline.runReindex")(function*(job: JobRow) {
        const loaded = yield* embedder.loaded
        if (Option.isNone(loaded)) {
          return yield* new StageFailure({
            code: "no_embedding_model",
            message: "No embedding model is available to reindex with",
            stage: "reindex",
            permanent: true
          })
        }
        const model = yield* vectors.register(loaded.value)
        const total = yield* vectors.countMissing(model)
        yield* jobs.progress(job.id, { stage: "embed", done: 0, total })
        yield* embedMissing(job, model, {}, "reindex", { base: 0, total })
        yield* vectors.activate(model)
        return "done" as const
      })

      const run = (job: JobRow): Effect.Effect<Outcome, StageFailure> => {
        switch (job.kind) {
          case "ingest":
          case "reprocess":
            return runDocument(job)
          case "reindex":
            return runReindex(job)
          case "sync":
            return syncs.run(job).pipe(
              Effect.mapError((error) =>
                new StageFailure({ code: error.code, message: error.message, stage: "sync", permanent: true })
              )
            )
        }
      }

      return Pipeline.of({ run })
    })
  )
}
