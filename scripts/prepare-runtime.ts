/**
 * `node scripts/prepare-runtime.ts`, run by `npm ci` / `npm install` (package.json's postinstall) and by the test
 * suite's global set-up: makes the template for new embedded databases (src/adapters/pgliteTemplate.ts) if this
 * installation has none for its PGlite and migrations, by starting the embedded database on a scratch directory as
 * a first start does (initdb, every migration) and keeping its files once closed. Never fails an installation:
 * without the template a new database is made at its first start instead, a few seconds slower.
 */
import { ConfigProvider, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Db } from "../src/adapters/Db.ts"
import { templateDir, templatePath } from "../src/adapters/pgliteTemplate.ts"
import { EngramConfig } from "../src/config.ts"

/** Makes the template unless it exists; resolves to whether it made one. Templates of other versions are removed. */
export const prepareTemplate = async (): Promise<boolean> => {
  const template = templatePath()
  if (Fs.existsSync(template)) return false
  const scratch = Fs.mkdtempSync(Path.join(Os.tmpdir(), "engram-template-"))
  const partial = `${template}.${process.pid}.partial`
  try {
    const settings = ConfigProvider.layer(ConfigProvider.fromEnvRecord({ ENGRAM_DATA_DIR: scratch }))
    const database = Db.layer.pipe(Layer.provide(EngramConfig.layer), Layer.provide(settings))
    await Effect.runPromise(Effect.scoped(Layer.build(database)))
    Fs.cpSync(Path.join(scratch, "pglite"), partial, { recursive: true })
    try {
      Fs.renameSync(partial, template)
    } catch (error) {
      // Made at the same time by another process (two test runs): that one is as good.
      if (!Fs.existsSync(template)) throw error
    }
    for (const name of Fs.readdirSync(templateDir)) {
      if (name.startsWith("pglite-") && name !== Path.basename(template) && !name.endsWith(".partial")) {
        Fs.rmSync(Path.join(templateDir, name), { recursive: true, force: true })
      }
    }
    return true
  } finally {
    Fs.rmSync(scratch, { recursive: true, force: true })
    Fs.rmSync(partial, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const started = performance.now()
  try {
    if (await prepareTemplate()) {
      console.log(`engram: made the template for new databases in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    }
  } catch (error) {
    console.warn(`engram: could not make the template for new databases (${(error as Error).message}); ` +
      "a new database will be made at its first start instead")
  }
}
