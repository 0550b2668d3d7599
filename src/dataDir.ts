import * as Fs from "node:fs"
import * as Path from "node:path"

/** Where the service keeps its files when ENGRAM_DATA_DIR is unset, relative to the working directory. */
export const defaultDataDir = "./data"

/**
 * Creates a directory and its missing parents, one level at a time. Not Node's `recursive: true`: under a
 * pseudo file system such as /proc it never returns (Node 24), which would hang start-up instead of failing it.
 */
export const createDirectory = (dir: string, mode = 0o700) => {
  const missing: Array<string> = []
  for (let at = Path.resolve(dir); !Fs.existsSync(at); at = Path.dirname(at)) {
    missing.push(at)
    if (Path.dirname(at) === at) break
  }
  for (const path of missing.reverse()) {
    try {
      Fs.mkdirSync(path, { mode })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
  }
}
