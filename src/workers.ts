/**
 * The scripts that run on worker threads, by name. The single-binary build (scripts/build-binary.ts) bundles each
 * one as `<name>.mjs` and swaps this module for one that points at those bundles.
 */
export const workerScripts = {
  database: new URL("./adapters/databaseWorker.ts", import.meta.url),
  ingest: new URL("./ingest/worker.ts", import.meta.url),
  model: new URL("./adapters/modelWorker.ts", import.meta.url),
  universe: new URL("./background/universeWorker.ts", import.meta.url)
}
