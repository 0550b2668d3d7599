import type { Format } from "../ingest/parse/index.ts"

/** One thing a connector found: its stable key (a relative path, a URL), a title and the raw content. */
export interface ConnectorItem {
  readonly key: string
  readonly title: string
  readonly format: Format
  readonly bytes: Uint8Array
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
