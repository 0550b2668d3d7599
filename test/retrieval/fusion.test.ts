import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mulberry32 } from "../../scripts/lib/onnx.ts"
import { collapseNearDuplicates, fuseRankings, nearDuplicateKey } from "../../src/retrieval/fusion.ts"

const Ids = Schema.Array(Schema.Literals(["a", "b", "c", "d", "e", "f", "g"]))
const unique = (ids: ReadonlyArray<string>) => [...new Set(ids)]
const hits = (ids: ReadonlyArray<string>) => unique(ids).map((id, i) => ({ id, score: 10 - i }))

describe("fusion", () => {
  it.effect.prop("one list fuses to itself", [Ids], ([ids]) =>
    Effect.sync(() => {
      const fused = fuseRankings([{ name: "lexical", weight: 1, hits: hits(ids) }])
      assert.deepStrictEqual(fused.map((f) => f.id), unique(ids))
      fused.forEach((f, i) => assert.deepStrictEqual(f.contributions, [{ list: "lexical", rank: i + 1, score: 10 - i }]))
    }))

  it.effect.prop("every item of every list appears once, scores descend, contributions are explained", [Ids, Ids], ([a, b]) =>
    Effect.sync(() => {
      const fused = fuseRankings([
        { name: "vector", weight: 1, hits: hits(a) },
        { name: "lexical", weight: 1, hits: hits(b) }
      ])
      assert.deepStrictEqual(fused.map((f) => f.id).sort(), unique([...a, ...b]).sort())
      for (let i = 1; i < fused.length; i++) assert.isAtLeast(fused[i - 1]!.score, fused[i]!.score)
      for (const f of fused) {
        const expected = f.contributions.reduce((sum, c) => sum + 1 / (60 + c.rank), 0)
        assert.closeTo(f.score, expected, 1e-12)
      }
    }))

  it.effect.prop("an item ranked first by both lists is first", [Ids, Ids], ([a, b]) =>
    Effect.sync(() => {
      const fused = fuseRankings([
        { name: "vector", weight: 1, hits: hits(["z", ...a]) },
        { name: "lexical", weight: 1, hits: hits(["z", ...b]) }
      ])
      assert.strictEqual(fused[0]!.id, "z")
    }))

  it.effect("items a list scores equally share its better rank, so the other list decides between them", () =>
    Effect.sync(() => {
      const fused = fuseRankings([
        { name: "graph", weight: 1, hits: [{ id: "a", score: 1 }, { id: "b", score: 1 }, { id: "c", score: 0.5 }] },
        { name: "lexical", weight: 1, hits: [{ id: "c", score: 9 }, { id: "b", score: 8 }, { id: "a", score: 7 }] }
      ])
      const graphRanks = fused.map((f) => [f.id, f.contributions.find((c) => c.list === "graph")!.rank])
      assert.deepStrictEqual(Object.fromEntries(graphRanks), { a: 1, b: 1, c: 3 })
      assert.deepStrictEqual(fused.map((f) => f.id), ["b", "a", "c"])
    }))

  it.effect("weights tilt the fusion; a zero-weight list only explains", () =>
    Effect.sync(() => {
      const lists = (weight: number) => [
        { name: "vector", weight, hits: hits(["a", "b"]) },
        { name: "lexical", weight: 1, hits: hits(["b", "a"]) }
      ]
      assert.strictEqual(fuseRankings(lists(2))[0]!.id, "a")
      assert.strictEqual(fuseRankings(lists(0.5))[0]!.id, "b")
      assert.strictEqual(fuseRankings(lists(0))[0]!.id, "b")
    }))

  it.effect("near-duplicates collapse into the best-ranked copy", () =>
    Effect.sync(() => {
      const kept = collapseNearDuplicates([
        { id: "1", text: "The quick brown fox jumps over the lazy dog near the river bank." },
        { id: "2", text: "Something else entirely about ducks and their feeding habits." },
        { id: "3", text: "the quick brown fox jumps over the lazy dog near the river bank" },
        { id: "4", text: "The quick brown fox jumps over a lazy cat somewhere else today." }
      ])
      assert.deepStrictEqual(kept.map((k) => [k.id, k.duplicates]), [["1", ["3"]], ["2", []], ["4", []]])
    }))

  it.effect.prop("collapsing keeps order and never loses an id", [Schema.Array(Schema.Literals(["x y z", "x y z w", "a b c", "q"]))], ([texts]) =>
    Effect.sync(() => {
      const items = texts.map((text, i) => ({ id: String(i), text }))
      const kept = collapseNearDuplicates(items)
      const all = kept.flatMap((k) => [k.id, ...k.duplicates]).sort()
      assert.deepStrictEqual(all, items.map((i) => i.id).sort())
      const order = kept.map((k) => Number(k.id))
      assert.deepStrictEqual(order, [...order].sort((x, y) => x - y))
    }))

  it.effect("collapsing equals comparing every kept item, on generated near-duplicates, short texts and a large vocabulary", () =>
    Effect.sync(() => {
      const next = mulberry32(7)
      const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(next() * items.length)]!
      // Texts of ASCII only (read by the service code unit by code unit) and texts with other letters alike (also
      // letters outside the basic plane, and a letter NFKC turns into an upper case ASCII one).
      const vocabulary = ["cell", "Cells", "the", "of", "T-cell", "β", "ﬁbrosis", "Zoë", "2024", "a", "mouse", "MICE", "in", "RNA",
        "IL_6", "don't", "3.5", "x\ty", "𝒜lpha", "alpha", "ALPHA", "x😀y", "Ǆemal"]
      const sentence = (length: number) => Array.from({ length }, () => pick(vocabulary)).join(pick([" ", ", ", ". ", "-"]))
      const edit = (text: string) => {
        const words = text.split(" ")
        words[Math.floor(next() * words.length)] = pick(vocabulary)
        return next() < 0.5 ? words.join(" ") : `${words.join(" ")} ${pick(vocabulary)}`
      }
      let compared = 0
      let absorbed = 0
      for (let round = 0; round < 400; round++) {
        const items: Array<{ id: string; text: string }> = []
        const count = 1 + Math.floor(next() * 40)
        for (let i = 0; i < count; i++) {
          const roll = next()
          const text = roll < 0.35 && items.length > 0
            ? edit(pick(items).text)
            : roll < 0.45
            ? pick(["", "…", "a", "a b", "A  b", "x y z"])
            : sentence(3 + Math.floor(next() * 60))
          items.push({ id: String(i), text })
        }
        const threshold = pick([0.9, 0.9, 0.5, 0.75, 1])
        const limit = pick([Infinity, Infinity, 1, 3, 10])
        const got = collapseNearDuplicates(items, threshold, limit).map((k) => [k.id, k.duplicates])
        const expected = everyKept(items, threshold, limit).map((k) => [k.id, k.duplicates])
        assert.deepStrictEqual(got, expected)
        // With the keys stored with chunks, for some of the items (a chunk written before the keys has none) and a
        // key that is not one: the same result.
        const keyed = items.map((item) => {
          const roll = next()
          return { ...item, nearKey: roll < 0.7 ? nearDuplicateKey(item.text) : roll < 0.8 ? new Uint8Array([1, 2]) : null }
        })
        assert.deepStrictEqual(collapseNearDuplicates(keyed, threshold, limit).map((k) => [k.id, k.duplicates]), expected)
        compared++
        absorbed += got.reduce((sum, [, duplicates]) => sum + duplicates.length, 0)
      }
      assert.strictEqual(compared, 400)
      assert.isAbove(absorbed, 300)
      // 105,000 distinct words, 150 texts and 50 near-duplicates of them.
      const many = Array.from({ length: 200 }, (_, i) => ({
        id: String(i),
        text: Array.from({ length: 700 }, (_, w) => `w${i % 150}x${w}`).join(" ")
      }))
      const collapsed = collapseNearDuplicates(many)
      assert.deepStrictEqual(collapsed.map((k) => [k.id, k.duplicates]), everyKept(many, 0.9).map((k) => [k.id, k.duplicates]))
      assert.strictEqual(collapsed.length, 150)
      const keyed = many.map((item) => ({ ...item, nearKey: nearDuplicateKey(item.text) }))
      assert.deepStrictEqual(collapseNearDuplicates(keyed).map((k) => [k.id, k.duplicates]), collapsed.map((k) => [k.id, k.duplicates]))
    }))

  it.effect("a near-duplicate key: the size, then the smallest shingles' high bits ascending, a tenth of them", () =>
    Effect.sync(() => {
      const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ")
      const read = (key: Uint8Array) => {
        const view = new DataView(key.buffer, key.byteOffset, key.byteLength)
        return Array.from({ length: key.length / 4 }, (_, i) => view.getUint32(4 * i, true))
      }
      const [size, ...prefix] = read(nearDuplicateKey(words(102)))
      assert.strictEqual(size, 100)
      assert.strictEqual(prefix.length, 100 - 90 + 2)
      assert.deepStrictEqual(prefix, [...prefix].sort((a, b) => a - b))
      assert.deepStrictEqual(read(nearDuplicateKey("")), [0])
      assert.deepStrictEqual(read(nearDuplicateKey("two words")).slice(0, 1), [1])
      // Upper case and punctuation do not change it: it is the shingles' key.
      assert.deepStrictEqual(nearDuplicateKey("The cat, the HAT."), nearDuplicateKey("the cat the hat"))
    }))
})

/**
 * The collapse as first written: every item's word-trigram set compared with every kept item's, in order, until
 * `limit` are kept.
 */
const everyKept = (items: ReadonlyArray<{ id: string; text: string }>, threshold: number, limit = Infinity) => {
  const shingles = (text: string) => {
    const words = text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? []
    const set = new Set<string>()
    if (words.length < 3) {
      if (words.length > 0) set.add(words.join(" "))
      return set
    }
    for (let i = 0; i + 3 <= words.length; i++) set.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`)
    return set
  }
  const similar = (a: Set<string>, b: Set<string>) => {
    if (a.size === 0 && b.size === 0) return true
    const [small, large] = a.size <= b.size ? [a, b] : [b, a]
    if (small.size < threshold * large.size) return false
    let shared = 0
    for (const item of small) if (large.has(item)) shared++
    return shared / (a.size + b.size - shared) >= threshold
  }
  const kept: Array<{ id: string; set: Set<string>; duplicates: Array<string> }> = []
  for (const item of items) {
    if (kept.length >= limit) break
    const own = shingles(item.text)
    const twin = kept.find((k) => similar(k.set, own))
    if (twin !== undefined) twin.duplicates.push(item.id)
    else kept.push({ id: item.id, set: own, duplicates: [] })
  }
  return kept
}
