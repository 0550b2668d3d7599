/**
 * Writes the tiny cross-encoder test fixture (RANDOM WEIGHTS: its scores mean nothing; it exercises the reranking
 * path) into a directory, built from shared/models/_fixtures/tiny-random-bert. See lib/reranker-fixture.ts.
 *   node scripts/make-reranker-fixture.ts <targetDir> [sourceDir]
 */
import * as Path from "node:path"
import { buildRerankerFixture } from "./lib/reranker-fixture.ts"

const [target, source] = process.argv.slice(2)
if (target === undefined) {
  console.error("usage: node scripts/make-reranker-fixture.ts <targetDir> [sourceDir]")
  process.exit(2)
}
const sourceDir = Path.resolve(source ?? Path.resolve(import.meta.dirname, "../../shared/models/_fixtures/tiny-random-bert"))
const targetDir = Path.resolve(target)
buildRerankerFixture(sourceDir, targetDir)
console.log(`wrote ${targetDir} (from ${sourceDir})`)
