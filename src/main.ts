/**
 * The service's entry: Node's compile cache first, so that later starts reuse the compiled modules (about a third of
 * the time to load them; `NODE_COMPILE_CACHE` names its directory, Node's default is in the temp directory), and the
 * embedded database's thread, which loads PGlite meanwhile (unless DATABASE_URL names a PostgreSQL server), then
 * the layer tree and its launch (src/launch.ts).
 */
import { enableCompileCache } from "node:module"
import { startEarly } from "./adapters/databaseThread.ts"

enableCompileCache()
if (!process.env.DATABASE_URL) startEarly()
// Not awaited: the single binary loads this module with require(), which takes no top-level await.
void import("./launch.ts")
