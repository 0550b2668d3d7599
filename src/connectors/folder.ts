import { Effect } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { detectFormat } from "../ingest/parse/formats.ts"
import type { ConnectorItem, Harvest, SkippedItem } from "./Item.ts"

/** Whether `path` (symlinks resolved) lies inside one of `roots`. */
export const insideRoots = async (path: string, roots: ReadonlyArray<string>) => {
  const real = await Fs.realpath(path)
  for (const root of roots) {
    const realRoot = await Fs.realpath(root).catch(() => Path.resolve(root))
    if (real === realRoot || real.startsWith(realRoot + Path.sep)) return true
  }
  return false
}

/** Why `directory` cannot be a folder source's root, or undefined when it can: it must exist and lie inside the roots. */
export const folderProblem = async (directory: string, roots: ReadonlyArray<string>): Promise<string | undefined> => {
  try {
    if (!(await Fs.stat(directory)).isDirectory()) return "is not a directory"
    return (await insideRoots(directory, roots))
      ? undefined
      : "is outside the directories the operator allows (ENGRAM_FOLDER_ROOTS)"
  } catch {
    return "does not exist or cannot be read"
  }
}

/**
 * Every supported file under `directory` (recursively unless told not to), keyed by its path relative to it.
 * Files whose real path leaves the allowed roots (symlinks), unsupported types and oversized files are skipped
 * with a reason; nothing outside the roots is ever read.
 */
export const scanFolder = (options: {
  readonly directory: string
  readonly recursive: boolean
  readonly roots: ReadonlyArray<string>
  readonly maxBytes: number
}) =>
  Effect.tryPromise({
    try: async (): Promise<Harvest> => {
      const problem = await folderProblem(options.directory, options.roots)
      if (problem !== undefined) throw new Error(`the folder ${problem}`)
      const items: Array<ConnectorItem> = []
      const skipped: Array<SkippedItem> = []
      const visit = async (directory: string) => {
        const entries = await Fs.readdir(directory, { withFileTypes: true })
        entries.sort((a, b) => a.name.localeCompare(b.name))
        for (const entry of entries) {
          if (entry.name.startsWith(".")) continue
          const path = Path.join(directory, entry.name)
          const key = Path.relative(options.directory, path).split(Path.sep).join("/")
          if (!(await insideRoots(path, options.roots))) {
            skipped.push({ key, reason: "links outside the allowed directories" })
            continue
          }
          const stat = await Fs.stat(path)
          if (stat.isDirectory()) {
            if (options.recursive) await visit(path)
            continue
          }
          if (!stat.isFile()) continue
          if (stat.size > options.maxBytes) {
            skipped.push({ key, reason: `larger than ${options.maxBytes} bytes` })
            continue
          }
          const bytes = new Uint8Array(await Fs.readFile(path))
          const detected = detectFormat(entry.name, bytes)
          if ("unsupported" in detected) {
            skipped.push({ key, reason: detected.unsupported })
            continue
          }
          items.push({ key, title: key, format: detected.format, bytes, date: stat.mtime.toISOString() })
        }
      }
      await visit(options.directory)
      return { items, skipped }
    },
    catch: (error) => (error as Error).message
  })
