import { Schema } from "effect"
import { characters, Text } from "./Text.ts"

const between = (minimum: number, maximum: number) =>
  Schema.Finite.check(Schema.isBetween({ minimum, maximum }))

const intBetween = (minimum: number, maximum: number) =>
  Schema.Int.check(Schema.isBetween({ minimum, maximum }))

/** A user's defaults for answer generation; agents may override them. Every field is optional. */
export const ModelSettings = Schema.Struct({
  llm_model: Schema.optionalKey(Text.check(characters(1, 200))),
  temperature: Schema.optionalKey(between(0, 2)),
  top_p: Schema.optionalKey(between(0, 1)),
  max_tokens: Schema.optionalKey(intBetween(1, 131_072))
}).annotate({ identifier: "ModelSettings" })
export type ModelSettings = typeof ModelSettings.Type

const TimeZone = Text.check(
  Schema.makeFilter((zone: string) => {
    try {
      new Intl.DateTimeFormat("en", { timeZone: zone })
      return true
    } catch {
      return false
    }
  }, { message: "must be an IANA time zone such as Europe/Paris" })
)

/** A user's client preferences. Every field is optional. */
export const Preferences = Schema.Struct({
  theme: Schema.optionalKey(Schema.Literals(["light", "dark", "system"])),
  language: Schema.optionalKey(
    Text.check(Schema.isPattern(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, {
      message: "must be a language tag such as en or pt-BR"
    }))
  ),
  timezone: Schema.optionalKey(TimeZone),
  default_strategy: Schema.optionalKey(Schema.Literals(["vector", "multi"])),
  default_top_k: Schema.optionalKey(intBetween(1, 50))
}).annotate({ identifier: "Preferences" })
export type Preferences = typeof Preferences.Type

export const SettingsKind = Schema.Literals(["model_settings", "preferences"])
export type SettingsKind = typeof SettingsKind.Type
