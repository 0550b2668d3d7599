import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    // Test processes run WebAssembly on V8's baseline compiler only. PGlite's optimising tier-up (600 MB and seconds
    // of compiling for its largest function, in every test process) is the likeliest place where V8 killed test
    // processes in CI, and the suite runs faster without it. Servers the tests start as processes keep the service's
    // own flags (docs/decisions.md, "Test processes without WebAssembly's optimising compiler").
    execArgv: ["--liftoff-only"],
    reporters: ["default"]
  }
})
