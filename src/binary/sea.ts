/**
 * The entry of the single binary (scripts/build-binary.ts). Node runs it from inside the executable, where only
 * built-in modules can be required; the service travels beside it as gzip assets: its bundle, the bundles of its
 * worker threads, PGlite's WebAssembly and data files and the native addons. On the first start they are unpacked
 * into `<data dir>/.runtime/<version>/` and the bundle is loaded from there by Node's regular loader, which finds
 * the addons in that directory's node_modules and the other files beside the bundle. Later starts of the same
 * binary reuse the directory.
 */
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { getAsset } from "node:sea"
import { gunzipSync } from "node:zlib"
import { createDirectory, defaultDataDir } from "../dataDir.ts"
import { type Manifest, manifestAsset } from "./manifest.ts"

/** Writes every packed file into a staging directory, then renames it into place, so a directory is complete. */
const unpack = (manifest: Manifest, runtimeDir: string) => {
  if (Fs.existsSync(runtimeDir)) return
  const staging = `${runtimeDir}.${process.pid}.partial`
  Fs.rmSync(staging, { recursive: true, force: true })
  for (const file of manifest.files) {
    const target = Path.join(staging, file)
    createDirectory(Path.dirname(target), 0o755)
    Fs.writeFileSync(target, gunzipSync(getAsset(file)))
  }
  try {
    Fs.renameSync(staging, runtimeDir)
  } catch (error) {
    // Another process unpacked the same version first: its directory is as good as this one.
    Fs.rmSync(staging, { recursive: true, force: true })
    if (!Fs.existsSync(runtimeDir)) throw error
  }
}

const start = () => {
  const manifest = JSON.parse(getAsset(manifestAsset, "utf8")) as Manifest
  const dataDir = Path.resolve(process.env.ENGRAM_DATA_DIR || defaultDataDir)
  const runtimeDir = Path.join(dataDir, ".runtime", manifest.version)
  try {
    createDirectory(dataDir)
    unpack(manifest, runtimeDir)
  } catch (error) {
    process.stderr.write(
      `engram: Cannot unpack the runtime files into ${runtimeDir}: ${(error as Error).message}. ` +
        "Set ENGRAM_DATA_DIR to a directory this user can create and write to.\n"
    )
    process.exitCode = 1
    return
  }
  // The regular loader, rooted in the runtime directory: it finds the unpacked addons in its node_modules.
  createRequire(Path.join(runtimeDir, manifest.main))(Path.join(runtimeDir, manifest.main))
}

start()
