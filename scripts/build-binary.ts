/**
 * `npm run build:binary`: dist/engram, one executable that runs the whole service (embedded PGlite by default)
 * with nothing else installed. A Node single-executable application (SEA) made from the `node` devDependency's
 * binary: the service and its worker threads bundled by esbuild, and beside them the files Node loads from disk
 * (PGlite's WebAssembly and data files, pgvector, the native addons of onnxruntime, sharp and argon2), all packed
 * as gzip assets that src/binary/sea.ts unpacks into the data directory on the first start.
 * Builds for the platform it runs on.
 */
import * as esbuild from "esbuild"
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { type Manifest, manifestAsset } from "../src/binary/manifest.ts"
import { workerScripts } from "../src/workers.ts"
import { startCommand } from "./lib/startCommand.ts"

const root = Path.resolve(import.meta.dirname, "..")
const modules = Path.join(root, "node_modules")
const outDir = Path.join(root, "dist")
const output = Path.join(outDir, "engram")
const work = Path.join(outDir, "binary-build")
/** Becomes `<data dir>/.runtime/<version>/` on the user's machine. */
const runtime = Path.join(work, "runtime")
const main = "engram.mjs"
/** The `node` devDependency's binary: the base of the executable, and the Node that prepares its blob. */
const nodeBinary = Path.join(modules, "node", "bin", "node")
/** The SEA blob's place in a Node binary (Node's documented fuse). */
const seaFuse = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"

const step = (what: string) => console.log(`build:binary: ${what}`)

const run = (command: string, args: ReadonlyArray<string>) => {
  const result = spawnSync(command, args, { stdio: "inherit" })
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (${result.error?.message ?? result.status})`)
}

/** Packages with native code, loaded from `<runtime>/node_modules` by the regular loader (never bundled). */
const external = ["onnxruntime-node", "@img/sharp-*", "@node-rs/argon2-*"]

/** The installed packages under `scope` whose names start with `prefix` (npm installs this platform's only). */
const installed = (scope: string, prefix: string) =>
  Fs.readdirSync(Path.join(modules, scope)).filter((name) => name.startsWith(prefix)).map((name) => `${scope}/${name}`)

/**
 * The packages copied whole into `<runtime>/node_modules`: onnxruntime-node (transformers.js requires it by name;
 * only this platform's binaries) with its onnxruntime-common, and the platform packages of sharp (transformers.js
 * imports it on load) and argon2.
 */
const copiedPackages = () => [
  "onnxruntime-node",
  "onnxruntime-common",
  ...installed("@img", "sharp-"),
  ...installed("@node-rs", "argon2-")
]

const onnxPlatform = Path.join("bin", "napi-v6", process.platform, process.arch)

/** Source maps and documents stay behind, and of onnxruntime-node's binaries only this platform's are copied. */
const keepFile = (pkg: string) => (source: string) => {
  const inside = Path.relative(Path.join(modules, pkg), source)
  if (pkg === "onnxruntime-node" && inside.startsWith("bin")) {
    return onnxPlatform.startsWith(inside) || inside.startsWith(onnxPlatform)
  }
  return !/\.(map|md)$/.test(inside)
}

/** The files that PGlite and pgvector read beside their modules (`new URL("./x", import.meta.url)`). */
const pgliteFiles = () => {
  const require = createRequire(import.meta.url)
  const pglite = Path.dirname(require.resolve("@electric-sql/pglite"))
  const pgvector = Path.dirname(require.resolve("@electric-sql/pglite-pgvector"))
  return [
    ...["pglite.wasm", "pglite.data", "initdb.wasm"].map((name) => Path.join(pglite, name)),
    Path.join(pgvector, "vector.tar.gz")
  ]
}

/** src/workers.ts as the bundle sees it: each worker script is `<name>.mjs` beside the bundle. */
const bundledWorkers: esbuild.Plugin = {
  name: "bundled-workers",
  setup(build) {
    const workersModule = Path.join(root, "src", "workers.ts")
    build.onLoad({ filter: /workers\.ts$/ }, (args) =>
      args.path !== workersModule ? undefined : {
        loader: "js",
        contents: `export const workerScripts = {\n${
          Object.keys(workerScripts).map((name) => `  ${name}: new URL("./${name}.mjs", import.meta.url)`).join(",\n")
        }\n}\n`
      })
  }
}

const bundle = (entryPoints: Record<string, string>) =>
  esbuild.build({
    entryPoints,
    outdir: runtime,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    external,
    plugins: [bundledWorkers],
    // CommonJS packages inside an ES module bundle still call require (for built-ins and the external addons).
    banner: { js: `import { createRequire as engramCreateRequire } from "node:module";\nconst require = engramCreateRequire(import.meta.url);` },
    logLevel: "warning"
  })

/** Every file under `dir`, relative to it, with `/` separators. */
const filesUnder = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) =>
    Path.relative(dir, Path.join(entry.parentPath, entry.name)).split(Path.sep).join("/")
  ).sort()

const buildBinary = async () => {
  Fs.rmSync(work, { recursive: true, force: true })
  Fs.mkdirSync(runtime, { recursive: true })

  step("bundling the service and its worker threads")
  await bundle({
    engram: Path.join(root, "src/main.ts"),
    ...Object.fromEntries(Object.entries(workerScripts).map(([name, url]) => [name, fileURLToPath(url)]))
  })

  step("copying PGlite's files and the native addons")
  for (const file of pgliteFiles()) Fs.copyFileSync(file, Path.join(runtime, Path.basename(file)))
  for (const pkg of copiedPackages()) {
    Fs.cpSync(Path.join(modules, pkg), Path.join(runtime, "node_modules", pkg), {
      recursive: true,
      filter: keepFile(pkg)
    })
  }

  step("packing")
  const files = filesUnder(runtime)
  const hash = createHash("sha256")
  const assets: Record<string, string> = {}
  const packed = Path.join(work, "packed")
  for (const file of files) {
    const bytes = Fs.readFileSync(Path.join(runtime, file))
    hash.update(file).update("\0").update(bytes)
    assets[file] = Path.join(packed, file + ".gz")
    Fs.mkdirSync(Path.dirname(assets[file]), { recursive: true })
    Fs.writeFileSync(assets[file], gzipSync(bytes, { level: 9 }))
  }
  const manifest: Manifest = { version: hash.digest("hex").slice(0, 16), main, files }
  assets[manifestAsset] = Path.join(work, manifestAsset)
  Fs.writeFileSync(assets[manifestAsset], JSON.stringify(manifest))

  await esbuild.build({
    entryPoints: [Path.join(root, "src/binary/sea.ts")],
    outfile: Path.join(work, "sea.cjs"),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node24",
    logLevel: "warning"
  })
  const blob = Path.join(work, "sea.blob")
  const config = Path.join(work, "sea-config.json")
  Fs.writeFileSync(config, JSON.stringify({
    main: Path.join(work, "sea.cjs"),
    output: blob,
    disableExperimentalSEAWarning: true,
    useSnapshot: false,
    useCodeCache: false,
    // node's own options from `npm start` (the service's young generation), so the binary runs as `npm start` does.
    execArgv: startCommand(root).args.filter((arg) => arg.startsWith("-")),
    assets
  }))
  run(nodeBinary, ["--experimental-sea-config", config])

  step(`writing ${Path.relative(root, output)}`)
  Fs.rmSync(output, { force: true })
  Fs.copyFileSync(nodeBinary, output)
  Fs.chmodSync(output, 0o755)
  // Node's symbols and debug information (18 of its 126 MB on linux-x64); without binutils they stay.
  const stripped = spawnSync("strip", [output], { stdio: "ignore" })
  if (stripped.status !== 0) step("strip is not available: the Node binary keeps its debug information")
  const postject = createRequire(import.meta.url).resolve("postject/dist/cli.js")
  run(nodeBinary, [postject, output, "NODE_SEA_BLOB", blob, "--sentinel-fuse", seaFuse])
  Fs.rmSync(work, { recursive: true, force: true })
  step(`${Path.relative(root, output)}: ${(Fs.statSync(output).size / 2 ** 20).toFixed(1)} MiB, version ${manifest.version}`)
}

await buildBinary()
