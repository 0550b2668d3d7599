import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * `npm start` as package.json's start script says it: the variables it sets (`NAME=${NAME:-default}` keeps a value
 * the environment already has) and node's arguments, so benchmarks run the service exactly as users start it.
 */
export const startCommand = (root: string, environment: NodeJS.ProcessEnv = process.env) => {
  const script: string = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8")).scripts.start
  const words = script.trim().split(/\s+/)
  const env: Record<string, string> = {}
  while (/^[A-Z_][A-Z0-9_]*=/.test(words[0] ?? "")) {
    const word = words.shift()!
    const name = word.slice(0, word.indexOf("="))
    const value = word.slice(name.length + 1)
    const fallback = /^\$\{([A-Z_][A-Z0-9_]*):-(.*)\}$/.exec(value)
    env[name] = fallback === null ? value : environment[fallback[1]!] || fallback[2]!
  }
  if (words.shift() !== "node") throw new Error(`the start script does not run node: ${script}`)
  return { env, args: words }
}
