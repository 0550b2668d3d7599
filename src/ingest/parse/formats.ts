/**
 * The formats documents come in, and which one an upload is: what the service's own thread needs of parsing,
 * without the parsers (they run on the ingestion threads, and their libraries are loaded only there).
 */
import { unstorableJson } from "../../domain/Text.ts"

export type Format = "text" | "markdown" | "html" | "pdf" | "docx" | "json" | "csv" | "messages"

export const mimeTypes: Record<Format, string> = {
  text: "text/plain",
  markdown: "text/markdown",
  html: "text/html",
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  json: "application/json",
  csv: "text/csv",
  messages: "application/vnd.engram.messages+json"
}

const extensions: Record<string, Exclude<Format, "messages">> = {
  ".txt": "text",
  ".text": "text",
  ".md": "markdown",
  ".markdown": "markdown",
  ".html": "html",
  ".htm": "html",
  ".pdf": "pdf",
  ".docx": "docx",
  ".json": "json",
  ".csv": "csv"
}

export const supportedExtensions = Object.keys(extensions)

const utf8 = new TextDecoder("utf-8", { fatal: true })

export const asText = (bytes: Uint8Array): string | undefined => {
  try {
    const text = utf8.decode(bytes)
    return text.includes("\u0000") ? undefined : text
  } catch {
    return undefined
  }
}

/** JSON whose escapes decode to NUL or an unpaired surrogate, which no text column holds; checked exactly only when an escape could. */
const jsonTextProblem = (text: string): string | undefined => {
  if (!/\\u(0000|d[89a-f])/i.test(text)) return undefined
  const parsed = parseJsonOrUndefined(text)
  return parsed === undefined ? undefined : unstorableJson(parsed)
}

const parseJsonOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const startsWith = (bytes: Uint8Array, signature: string) =>
  bytes.length >= signature.length && [...signature].every((c, i) => bytes[i] === c.charCodeAt(0))

/** The format of an uploaded file from its name, checked against its bytes; a reason when unsupported. */
export const detectFormat = (
  filename: string,
  bytes: Uint8Array
): { readonly format: Format } | { readonly unsupported: string } => {
  const extension = filename.toLowerCase().match(/\.[a-z]+$/)?.[0] ?? ""
  const format = extensions[extension]
  if (format === undefined) {
    return { unsupported: `${filename}: unsupported file type; accepted: ${supportedExtensions.join(", ")}` }
  }
  const text = format === "pdf" || format === "docx" ? undefined : asText(bytes)
  const matches = format === "pdf"
    ? startsWith(bytes, "%PDF-")
    : format === "docx"
    ? startsWith(bytes, "PK\u0003\u0004")
    : text !== undefined
  if (!matches) return { unsupported: `${filename}: the content is not a ${format.toUpperCase()} file` }
  const problem = format === "json" && text !== undefined ? jsonTextProblem(text) : undefined
  return problem === undefined
    ? { format }
    : { unsupported: `${filename}: the JSON cannot be stored as text: ${problem}` }
}
