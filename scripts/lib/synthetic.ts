const vocabulary = (() => {
  const syllables = ["ka", "lo", "mi", "ne", "su", "ra", "to", "vi", "de", "po", "an", "el", "or", "ith", "um", "ex"]
  const words: Array<string> = []
  for (const a of syllables) for (const b of syllables) for (const c of ["", "n", "s", "ta", "lo"]) words.push(a + b + c)
  return words
})()

/** A deterministic pseudo-random generator, so every run builds the same corpus. */
const random = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}

/** Zipf-like word choice: a few words are common, most are rare, as in real text. */
const word = (next: () => number) => vocabulary[Math.floor(vocabulary.length * next() ** 3)]!

/**
 * Synthetic Markdown for size tests: `sections` sections of one ~200-word paragraph each, so each section
 * becomes one chunk at the default chunk size.
 */
export const syntheticDocument = (index: number, sections: number) => {
  const next = random(index + 1)
  const parts: Array<string> = []
  for (let s = 0; s < sections; s++) {
    parts.push(`## Section ${s}`)
    const sentences: Array<string> = []
    for (let t = 0; t < 16; t++) {
      const words = Array.from({ length: 12 }, () => word(next))
      sentences.push(words.join(" ") + ".")
    }
    parts.push(sentences.join(" "))
  }
  return parts.join("\n\n")
}

/** A short query over the same vocabulary. */
export const syntheticQuery = (index: number) => {
  const next = random(1_000_003 + index)
  return Array.from({ length: 4 }, () => word(next)).join(" ")
}
