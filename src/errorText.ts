/** The innermost message of an error chain, where drivers put the reason an operator can act on. */
export const errorText = (cause: unknown): string => {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause
    return inner instanceof Error && inner !== cause ? errorText(inner) : cause.message
  }
  return String(cause)
}
