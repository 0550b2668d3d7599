/**
 * The database a first start makes, made once per installation: a new data directory starts as a copy of it instead
 * of running initdb and every migration there (about 4 s of a first start's 8, on this project's machines).
 * `npm ci` makes it (package.json's postinstall, scripts/prepare-runtime.ts), and so does the test suite when it is
 * missing. Its name holds PGlite's and pgvector's versions and a hash of the migrations' sources, so a template
 * never stands in for a database another version would make; without one (installed with --ignore-scripts, a
 * migration changed since, the single binary) a new database is initialised and migrated at its first start.
 */
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"

/** This installation's `node_modules/.cache/engram`. */
export const templateDir = Path.resolve(import.meta.dirname, "../../node_modules/.cache/engram")

/** An installed package's version, from its package.json (not in its exports, so read beside its entry module). */
const versionOf = (name: string) => {
  const entry = createRequire(import.meta.url).resolve(name)
  return (JSON.parse(Fs.readFileSync(Path.resolve(entry, "../../package.json"), "utf8")) as { version: string }).version
}

/** A hash of every migration's file name and source. */
const migrationsHash = () => {
  const dir = Path.resolve(import.meta.dirname, "../migrations")
  const hash = createHash("sha256")
  for (const name of Fs.readdirSync(dir).sort()) hash.update(name).update(Fs.readFileSync(Path.join(dir, name)))
  return hash.digest("hex").slice(0, 12)
}

/**
 * The directory of the template for this PGlite, pgvector and migrations (whether or not it has been made): a closed
 * PGlite data directory. Throws where PGlite or the migrations are not files (the single binary's bundle).
 */
export const templatePath = (): string =>
  Path.join(
    templateDir,
    `pglite-${versionOf("@electric-sql/pglite")}-${versionOf("@electric-sql/pglite-pgvector")}-${migrationsHash()}`
  )
