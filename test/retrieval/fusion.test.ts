import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { collapseNearDuplicates, fuseRankings } from "../../src/retrieval/fusion.ts"

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
})
