/** Where the service keeps its files when ENGRAM_DATA_DIR is unset, relative to the working directory. */
export const defaultDataDir = "./data"
