import * as Fs from "node:fs"
import * as Path from "node:path"

const fixtures = Path.resolve(import.meta.dirname, "../../bench/fixtures")

/**
 * The repository's texts for comparing the rules' reading of compromise with compromise's own: the chunks of the
 * labelled extraction fixture (news, meeting notes, chat) and every message of the conversation logs.
 */
export const fixtureTexts = (): Array<string> => {
  const labelled = JSON.parse(Fs.readFileSync(Path.join(fixtures, "extraction/labelled.json"), "utf8")) as {
    readonly items: ReadonlyArray<{ readonly input: { readonly chunks: ReadonlyArray<{ readonly text: string }> } }>
  }
  const logs = Fs.readdirSync(Path.join(fixtures, "conversations"))
    .filter((file) => file.startsWith("log-"))
    .map((file) =>
      JSON.parse(Fs.readFileSync(Path.join(fixtures, "conversations", file), "utf8")) as {
        readonly sessions: ReadonlyArray<{ readonly messages: ReadonlyArray<{ readonly content: string }> }>
      }
    )
  return [
    ...labelled.items.flatMap((item) => item.input.chunks.map((chunk) => chunk.text)),
    ...logs.flatMap((log) => log.sessions.flatMap((session) => session.messages.map((message) => message.content)))
  ]
}
