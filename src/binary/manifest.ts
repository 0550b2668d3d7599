/** Shared by the single-binary build (scripts/build-binary.ts) and its entry (sea.ts). */

/** What the build packed: every file under the runtime directory (each a gzip asset of the same name). */
export interface Manifest {
  /** A hash of the packed files: a different binary never reuses another's directory. */
  readonly version: string
  /** The bundled service, relative to the runtime directory. */
  readonly main: string
  readonly files: ReadonlyArray<string>
}

export const manifestAsset = "manifest.json"
