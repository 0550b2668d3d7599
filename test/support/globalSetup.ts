/**
 * Before any test: this installation's template for new embedded databases (src/adapters/pgliteTemplate.ts), made
 * if it is missing (a migration added since `npm ci`), so every fresh PGlite data directory of the suite is a
 * copy of it, as a user's first start would be.
 */
import { prepareTemplate } from "../../scripts/prepare-runtime.ts"

export const setup = async () => {
  await prepareTemplate()
}
