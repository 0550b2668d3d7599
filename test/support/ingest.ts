import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { sampleFiles } from "./datasets.ts"
import { request } from "./http.ts"

export const createSource = (url: string, token: string, name = "Notes") =>
  Effect.map(
    request(url, "/api/v1/sources", { token, json: { name, connector_kind: "file_upload", config: {} } }),
    (reply) => {
      if (reply.status !== 201) throw new Error(`create source: ${reply.status} ${reply.text}`)
      return reply.body.id as string
    }
  )

export const ingestText = (url: string, token: string, sourceId: string, title: string, text: string) =>
  request(url, `/api/v1/sources/${sourceId}/documents/ingest`, { token, json: { title, text } })

/** Polls the document until `done` holds (default: ready or failed), at most `withinMs` (default 60 s). */
export const waitForDocument = (
  url: string,
  token: string,
  sourceId: string,
  documentId: string,
  done: (document: any) => boolean = (document) => document.status === "ready" || document.status === "failed",
  withinMs = 60_000
) =>
  Effect.promise(async () => {
    const deadline = Date.now() + withinMs
    while (Date.now() < deadline) {
      const response = await fetch(`${url}/api/v1/sources/${sourceId}/documents/${documentId}`, {
        headers: { authorization: `Bearer ${token}` }
      })
      const document = await response.json() as any
      if (done(document)) return document
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`document ${documentId} did not finish`)
  })

/**
 * The universe manifest (`query`: its query string, with "?") once no recompute is pending and the map was computed.
 * The service recomputes on its own clock: a server under a test clock never gets there.
 */
export const waitForUniverse = (url: string, token: string, query = "", withinMs = 90_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + withinMs
    while (Date.now() < deadline) {
      const response = await fetch(`${url}/api/v1/universe/manifest${query}`, {
        headers: { authorization: `Bearer ${token}` }
      })
      const manifest = await response.json() as any
      if (response.status !== 200) throw new Error(`universe manifest: ${response.status} ${JSON.stringify(manifest)}`)
      if (!manifest.pending && manifest.computed_at !== null) return manifest
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error("the universe map was not recomputed")
  })

/** A multipart upload of files from the shared samples or given bytes. */
export const upload = (
  url: string,
  token: string,
  sourceId: string,
  files: ReadonlyArray<string | { readonly name: string; readonly bytes: Uint8Array }>,
  fields: Record<string, string> = {}
) =>
  Effect.promise(async () => {
    const form = new FormData()
    for (const [name, value] of Object.entries(fields)) form.append(name, value)
    for (const file of files) {
      const { name, bytes } = typeof file === "string"
        ? { name: file, bytes: new Uint8Array(Fs.readFileSync(Path.join(sampleFiles, file))) }
        : file
      form.append("files", new Blob([bytes]), name)
    }
    const response = await fetch(`${url}/api/v1/sources/${sourceId}/documents/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) as any, text }
  })
