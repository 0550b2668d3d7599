import { Effect } from "effect"
import { BadRequest, Conflict, httpError, NotFound, UnsupportedMediaType, ValidationFailed } from "../api/Errors.ts"
import type { AgentsFailure } from "../services/Agents.ts"
import type { DocumentsFailure } from "../services/Documents.ts"
import type { GraphFailure } from "../stores/Graph.ts"
import type { SourcesFailure } from "../services/Sources.ts"
import type { UniverseFailure } from "../services/Universe.ts"

const invalidCursor = () => httpError(BadRequest, "invalid_cursor", "The cursor is not one this API returned")

/** One place that turns source failures into HTTP errors (for Effect.catch). */
export const sourcesFailure = (failure: SourcesFailure) => {
  switch (failure.reason._tag) {
    case "SourceNotFound":
      return Effect.fail(httpError(NotFound, "source_not_found", "No such source"))
    case "InvalidConfig":
      return Effect.fail(ValidationFailed.create(failure.reason.issues))
    case "InvalidCursor":
      return Effect.fail(invalidCursor())
  }
}

/** Document failures; a refused action is a 409 only where the endpoint is an action. */
const documentsFailureWith = <E>(refused: (message: string) => Effect.Effect<never, E>) =>
(failure: DocumentsFailure | SourcesFailure) => {
  if (failure._tag === "SourcesFailure") return sourcesFailure(failure)
  switch (failure.reason._tag) {
    case "DocumentNotFound":
      return Effect.fail(httpError(NotFound, "document_not_found", "No such document in this source"))
    case "ActionNotAllowed":
      return refused(failure.reason.message)
    case "UnsupportedType":
      return Effect.fail(httpError(UnsupportedMediaType, "unsupported_file_type", failure.reason.message))
    case "InvalidCursor":
      return Effect.fail(invalidCursor())
  }
}

export const documentsFailure = documentsFailureWith((message) => Effect.die(new Error(message)))

export const documentActionFailure = documentsFailureWith((message) =>
  Effect.fail(httpError(Conflict, "action_not_allowed", message))
)

/** Agent failures: another user's agent, conversation or source is answered exactly like a missing one. */
export const agentsFailure = (failure: AgentsFailure) => {
  switch (failure.reason._tag) {
    case "AgentNotFound":
      return Effect.fail(httpError(NotFound, "agent_not_found", "No such agent"))
    case "ConversationNotFound":
      return Effect.fail(httpError(NotFound, "conversation_not_found", "No such conversation for this agent"))
    case "SourceNotFound":
      return Effect.fail(httpError(NotFound, "source_not_found", `No such source: ${failure.reason.sourceId}`))
    case "InvalidCursor":
      return Effect.fail(invalidCursor())
  }
}

/** Graph failures: another user's source, entity or event is answered exactly like a missing one. */
export const graphFailure = (failure: GraphFailure) => {
  switch (failure.reason._tag) {
    case "SourceNotFound":
      return Effect.fail(httpError(
        NotFound,
        "source_not_found",
        failure.reason.sourceId === undefined ? "No such source" : `No such source: ${failure.reason.sourceId}`
      ))
    case "EntityNotFound":
      return Effect.fail(httpError(NotFound, "entity_not_found", "No such entity"))
    case "EventNotFound":
      return Effect.fail(httpError(NotFound, "event_not_found", "No such event"))
    case "InvalidCursor":
      return Effect.fail(invalidCursor())
    case "InvalidQuery":
      return Effect.fail(ValidationFailed.create(failure.reason.issues))
  }
}

/** Universe failures: another user's node or source is answered exactly like a missing one. */
export const universeFailure = (failure: UniverseFailure) => {
  switch (failure.reason._tag) {
    case "SourceNotFound":
      return Effect.fail(httpError(NotFound, "source_not_found", `No such source: ${failure.reason.sourceId}`))
    case "NodeNotFound":
      return Effect.fail(httpError(NotFound, "node_not_found", "No such node"))
    case "InvalidCursor":
      return Effect.fail(invalidCursor())
    case "InvalidQuery":
      return Effect.fail(ValidationFailed.create(failure.reason.issues))
  }
}
