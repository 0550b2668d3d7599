import type { Format } from "../ingest/parse/formats.ts"

/** One thing a connector found: its stable key (a relative path, a URL), a title, the raw content and its date. */
export interface ConnectorItem {
  readonly key: string
  readonly title: string
  readonly format: Format
  readonly bytes: Uint8Array
  /** The item's own date (ISO-8601), which anchors relative times in its text; undefined when unknown. */
  readonly date?: string | undefined
}

/** Something a connector could not take, with the reason, reported in the sync job. */
export interface SkippedItem {
  readonly key: string
  readonly reason: string
}

export interface Harvest {
  readonly items: ReadonlyArray<ConnectorItem>
  readonly skipped: ReadonlyArray<SkippedItem>
}
