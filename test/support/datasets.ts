import * as Path from "node:path"

/** The shared data sets beside the repository (never copied into it). */
export const sharedDir = process.env.ENGRAM_SHARED_DIR ?? Path.resolve(import.meta.dirname, "../../../shared")

export const sampleFiles = Path.join(sharedDir, "datasets/files")

export const fixtureModelDir = Path.join(sharedDir, "models/_fixtures/tiny-random-bert")
