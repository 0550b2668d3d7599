import packageJson from "../package.json" with { type: "json" }

/** The release this build is, from package.json. */
export const engramVersion: string = packageJson.version
