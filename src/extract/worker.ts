/**
 * Runs the rule-based extractor on a worker thread, so a long document never stalls the service's event loop.
 * Messages in: {id, input}; out: {id, extraction} or {id, error}.
 */
import { parentPort } from "node:worker_threads"
import type { ExtractionInput } from "./Extraction.ts"
import { extractRules } from "./rules.ts"

parentPort!.on("message", (message: { readonly id: number; readonly input: ExtractionInput }) => {
  try {
    parentPort!.postMessage({ id: message.id, extraction: extractRules(message.input) })
  } catch (error) {
    parentPort!.postMessage({ id: message.id, error: String(error) })
  }
})
