import { describe, expect, it } from "@effect/vitest"
import * as Stable from "@opentelemetry/semantic-conventions"
import * as Incubating from "@opentelemetry/semantic-conventions/incubating"
import * as GenAi from "../../src/observability/GenAi.ts"
import * as Tracing from "../../src/observability/Tracing.ts"

describe("the semantic conventions' attribute names written out in the service", () => {
  it("each one is the name OpenTelemetry's package gives", () => {
    const written = Object.entries({ ...GenAi, ...Tracing }).filter(([name]) => name.startsWith("ATTR_"))
    expect(written.length).toBe(17)
    for (const [name, value] of written) {
      expect([name, value]).toEqual([name, (Incubating as Record<string, unknown>)[name]])
    }
    expect(Tracing.ATTR_SERVICE_NAME).toBe(Stable.ATTR_SERVICE_NAME)
  })
})
