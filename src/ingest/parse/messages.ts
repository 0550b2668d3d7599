import { instantOf } from "../../domain/Instant.ts"
import { type Parsed, ParsedBuilder } from "../Parsed.ts"

export interface Message {
  readonly speaker?: string | undefined
  readonly role?: string | undefined
  readonly content: string
  readonly timestamp?: string | undefined
}

export const speakerOf = (message: Message) => message.speaker ?? message.role ?? "unknown"

/** A conversation: one block per message, "Speaker: content", keeping the speaker and time. */
export const parseMessages = (messages: ReadonlyArray<Message>): Parsed => {
  const builder = new ParsedBuilder()
  for (const message of messages) {
    const speaker = speakerOf(message)
    // A timestamp stored before the API refused impossible ones ("2023-02-30", year 0) is no timestamp.
    const at = instantOf(message.timestamp)
    builder.add("message", `${speaker}: ${message.content}`, {
      speaker,
      ...(at === null ? {} : { timestamp: at.toISOString() })
    })
  }
  return builder.build()
}
