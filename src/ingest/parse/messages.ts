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
    builder.add("message", `${speaker}: ${message.content}`, {
      speaker,
      ...(message.timestamp === undefined ? {} : { timestamp: new Date(message.timestamp).toISOString() })
    })
  }
  return builder.build()
}
