import { Effect, Layer, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as Fs from "node:fs/promises"
import { Api } from "../api/Api.ts"
import { ValidationFailed } from "../api/Errors.ts"
import { CurrentUser } from "../api/Security.ts"
import { DocumentOut } from "../domain/Document.ts"
import { truncateCharacters } from "../domain/Text.ts"
import { Documents } from "../services/Documents.ts"
import { AuthenticationLive } from "./Authentication.ts"
import { documentActionFailure, documentsFailure } from "./failures.ts"

const previewLength = 2000

export const DocumentsHandlers = HttpApiBuilder.group(
  Api,
  "documents",
  Effect.fn(function*(handlers) {
    const documents = yield* Documents
    return handlers
      .handle("ingest", ({ params, payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const document = payload.messages === undefined
            ? yield* documents.add(user.id, params.source_id, {
              title: payload.title,
              kind: "text",
              format: "markdown",
              bytes: new TextEncoder().encode(payload.text!),
              date: payload.date
            })
            : yield* documents.addMessages(user.id, params.source_id, payload.title, payload.messages)
          return document.duplicate
            ? HttpServerResponse.jsonUnsafe(Schema.encodeSync(DocumentOut)(document), { status: 200 })
            : document
        }).pipe(Effect.catch(documentsFailure)))
      .handle("upload", ({ params, payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const parts = [...(payload.files ?? []), ...(payload.file ?? [])]
          if (parts.length === 0) {
            return yield* ValidationFailed.create([{ path: "body.files", message: "send at least one file" }])
          }
          const files = yield* Effect.forEach(parts, (part) =>
            Effect.promise(async () => ({ name: part.name, bytes: new Uint8Array(await Fs.readFile(part.path)) })))
          const stored = yield* documents.upload(user.id, params.source_id, files, payload.date).pipe(Effect.catch(documentsFailure))
          return { documents: stored }
        }))
      .handle("list", ({ params, query }) =>
        Effect.flatMap(CurrentUser, (user) =>
          documents.list(user.id, params.source_id, {
            status: query.status,
            limit: query.limit ?? 20,
            cursor: query.cursor
          })).pipe(Effect.catch(documentsFailure)))
      .handle("get", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.get(user.id, params.source_id, params.document_id)).pipe(
          Effect.catch(documentsFailure)
        ))
      .handle("preview", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.parsed(user.id, params.source_id, params.document_id)).pipe(
          Effect.map((parsed) => ({
            document: parsed.document,
            text: truncateCharacters(parsed.text, previewLength),
            truncated: parsed.text.length > previewLength,
            text_length: parsed.text.length,
            block_count: parsed.blocks.length,
            parser: parsed.parser
          })),
          Effect.catch(documentsFailure)
        ))
      .handle("parseOutput", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.parsed(user.id, params.source_id, params.document_id)).pipe(
          Effect.catch(documentsFailure)
        ))
      .handle("pause", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.act(user.id, params.source_id, params.document_id, "pause"))
          .pipe(Effect.catch(documentActionFailure)))
      .handle("resume", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.act(user.id, params.source_id, params.document_id, "resume"))
          .pipe(Effect.catch(documentActionFailure)))
      .handle("reprocess", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.act(user.id, params.source_id, params.document_id, "reprocess"))
          .pipe(Effect.catch(documentActionFailure)))
      .handle("remove", ({ params }) =>
        Effect.flatMap(CurrentUser, (user) => documents.remove(user.id, params.source_id, params.document_id)).pipe(
          Effect.map((removed) => ({ id: params.document_id, removed })),
          Effect.catch(documentsFailure)
        ))
  })
).pipe(Layer.provide(AuthenticationLive))
