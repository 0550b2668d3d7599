/**
 * The map of one source's knowledge universe, pure and deterministic (it runs on a worker thread): communities of
 * entities found by Louvain over the co-occurrence graph (two entities are linked by the events they share), and
 * 2-D positions by ForceAtlas2 — communities first, then each community's entities inside its own disc, so the
 * cost follows community sizes, not the square of the source. The same input always gives the same output: the
 * random walk of Louvain takes a seeded generator and every layout starts from a fixed spiral.
 */
import { UndirectedGraph } from "graphology"
import louvainModule from "graphology-communities-louvain"
import forceAtlas2Module from "graphology-layout-forceatlas2"

// CommonJS packages whose typings declare an ES default export: Node hands over module.exports itself.
const louvain = louvainModule as unknown as typeof louvainModule.default
const forceAtlas2 = forceAtlas2Module as unknown as typeof forceAtlas2Module.default

export interface MapInput {
  /** Entities are 0..count-1, in a stable order (their ids sorted). */
  readonly mentions: Int32Array
  /** Undirected links between entities with the number of shared events; each pair once. */
  readonly edgeA: Int32Array
  readonly edgeB: Int32Array
  readonly edgeWeight: Int32Array
}

export interface MapCommunity {
  readonly size: number
  /** A group of entities without enough links to form a community of their own. */
  readonly loose: boolean
  readonly x: number
  readonly y: number
  readonly radius: number
}

export interface MapOutput {
  /** Per entity: its community, numbered by size (largest first). */
  readonly community: Int32Array
  /** Per entity: the weight of its links inside its community (its mentions in a loose group). */
  readonly score: Int32Array
  readonly x: Float64Array
  readonly y: Float64Array
  readonly communities: ReadonlyArray<MapCommunity>
  /** Summed link weights between two communities, a < b. */
  readonly links: ReadonlyArray<{ readonly a: number; readonly b: number; readonly weight: number }>
}

/** A community larger than this is split again (Louvain on its own members). */
export const maxCommunitySize = 1000
/** Louvain groups smaller than this (isolated entities, pairs) join a loose group. */
const minCommunitySize = 3
/** The smallest communities beyond this many join the loose groups, so the overview stays bounded. */
export const maxCommunities = 400
const unit = 10
const goldenAngle = Math.PI * (3 - Math.sqrt(5))

/** mulberry32: a small seeded generator, so Louvain's random walk is the same on every run. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Position i of a sunflower spiral whose points are `spacing` apart on average. */
const spiral = (i: number, spacing: number) => {
  const r = spacing * Math.sqrt(i + 0.5)
  return { x: r * Math.cos(i * goldenAngle), y: r * Math.sin(i * goldenAngle) }
}

type Adjacency = ReadonlyArray<ReadonlyArray<readonly [number, number]>>

const adjacencyOf = (count: number, input: MapInput): Adjacency => {
  const lists: Array<Array<readonly [number, number]>> = Array.from({ length: count }, () => [])
  for (let i = 0; i < input.edgeA.length; i++) {
    const a = input.edgeA[i]!
    const b = input.edgeB[i]!
    const w = input.edgeWeight[i]!
    lists[a]!.push([b, w])
    lists[b]!.push([a, w])
  }
  return lists
}

/** Louvain over the members (entity numbers) with links among them; answers the groups it finds. */
const communitiesOf = (
  members: ReadonlyArray<number>,
  adjacency: Adjacency,
  resolution: number
): Array<Array<number>> => {
  const inside = new Set(members)
  const graph = new UndirectedGraph()
  for (const m of members) graph.addNode(String(m))
  for (const m of members) {
    for (const [other, weight] of adjacency[m]!) {
      if (other > m && inside.has(other)) graph.addEdge(String(m), String(other), { weight })
    }
  }
  const mapping = louvain(graph, { getEdgeWeight: "weight", resolution, rng: seeded(0x5eed) })
  const groups = new Map<number, Array<number>>()
  for (const m of members) {
    const c = mapping[String(m)]!
    const group = groups.get(c)
    if (group === undefined) groups.set(c, [m])
    else group.push(m)
  }
  return [...groups.values()]
}

/** A group too large to read is split by Louvain on itself at growing resolution; one it cannot split stays. */
const splitLarge = (group: Array<number>, adjacency: Adjacency, depth: number): Array<Array<number>> => {
  if (group.length <= maxCommunitySize || depth > 4) return [group]
  const parts = communitiesOf(group, adjacency, 2 ** depth)
  if (parts.length === 1) return depth === 4 ? [group] : splitLarge(group, adjacency, depth + 1)
  return parts.flatMap((part) => splitLarge(part, adjacency, depth + 1))
}

const byMembers = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) =>
  b.length - a.length || Math.min(...a) - Math.min(...b)

/** Lays out nodes (0..n-1, already placed) with ForceAtlas2 for a number of iterations bounded by their count. */
const forceLayout = (
  positions: Array<{ x: number; y: number }>,
  edges: ReadonlyArray<readonly [number, number, number]>,
  sizes?: ReadonlyArray<number>
) => {
  const n = positions.length
  if (n < 2) return positions
  const graph = new UndirectedGraph()
  positions.forEach((p, i) => graph.addNode(String(i), { x: p.x, y: p.y, size: sizes?.[i] ?? 1 }))
  // Callers pass each pair once.
  for (const [a, b, weight] of edges) graph.addEdge(String(a), String(b), { weight })
  const barnesHut = n > 300
  // Each iteration costs about n² (n log n with Barnes-Hut): bound the total work.
  const iterations = Math.max(10, Math.min(60, Math.floor(barnesHut ? 2e6 / (n * Math.log2(n)) : 1.5e6 / (n * n))))
  const layout = forceAtlas2(graph, {
    iterations,
    getEdgeWeight: "weight",
    settings: { ...forceAtlas2.inferSettings(n), barnesHutOptimize: barnesHut, adjustSizes: false }
  })
  return positions.map((_, i) => layout[String(i)]!)
}

/** Pushes overlapping discs apart, a fixed number of rounds, in a fixed order. */
const separate = (discs: Array<{ x: number; y: number; radius: number }>) => {
  for (let round = 0; round < 50; round++) {
    let moved = false
    for (let i = 0; i < discs.length; i++) {
      for (let j = i + 1; j < discs.length; j++) {
        const a = discs[i]!
        const b = discs[j]!
        let dx = b.x - a.x
        let dy = b.y - a.y
        let distance = Math.hypot(dx, dy)
        const wanted = a.radius + b.radius + unit
        if (distance >= wanted) continue
        if (distance === 0) {
          dx = Math.cos(j * goldenAngle)
          dy = Math.sin(j * goldenAngle)
          distance = 1
        }
        const push = (wanted - distance) / 2
        a.x -= (dx / distance) * push
        a.y -= (dy / distance) * push
        b.x += (dx / distance) * push
        b.y += (dy / distance) * push
        moved = true
      }
    }
    if (!moved) return
  }
}

const round2 = (value: number) => Math.round(value * 100) / 100

export const computeMap = (input: MapInput): MapOutput => {
  const count = input.mentions.length
  const adjacency = adjacencyOf(count, input)
  const everyone = Array.from({ length: count }, (_, i) => i)
  const linked = everyone.filter((i) => adjacency[i]!.length > 0)
  const found = linked.length === 0 ? [] : communitiesOf(linked, adjacency, 1)
  const groups = found.flatMap((group) => splitLarge(group, adjacency, 1)).sort(byMembers)

  const kept = groups.filter((group) => group.length >= minCommunitySize).slice(0, maxCommunities)
  const keptSet = new Set(kept.flat())
  // The rest, most mentioned first, in loose groups of at most maxCommunitySize.
  const rest = everyone.filter((i) => !keptSet.has(i)).sort((a, b) => input.mentions[b]! - input.mentions[a]! || a - b)
  const loose: Array<Array<number>> = []
  for (let i = 0; i < rest.length; i += maxCommunitySize) loose.push(rest.slice(i, i + maxCommunitySize))
  const all = [...kept.map((members) => ({ members, loose: false })), ...loose.map((members) => ({ members, loose: true }))]
    .sort((a, b) => byMembers(a.members, b.members))

  const community = new Int32Array(count)
  all.forEach((group, c) => {
    for (const m of group.members) community[m] = c
  })
  const score = new Int32Array(count)
  const between = new Map<number, number>()
  for (let i = 0; i < input.edgeA.length; i++) {
    const a = input.edgeA[i]!
    const b = input.edgeB[i]!
    const w = input.edgeWeight[i]!
    const ca = community[a]!
    const cb = community[b]!
    if (ca === cb) {
      score[a] = score[a]! + w
      score[b] = score[b]! + w
    } else {
      const key = Math.min(ca, cb) * all.length + Math.max(ca, cb)
      between.set(key, (between.get(key) ?? 0) + w)
    }
  }
  all.forEach((group) => {
    if (group.loose) for (const m of group.members) score[m] = input.mentions[m]!
  })
  const links = [...between.entries()]
    .map(([key, weight]) => ({ a: Math.floor(key / all.length), b: key % all.length, weight }))
    .sort((l, r) => l.a - r.a || l.b - r.b)

  const radii = all.map((group) => unit * Math.sqrt(group.members.length) + unit)
  const centres = forceLayout(
    all.map((_, c) => spiral(c, unit * 8)),
    links.map((l) => [l.a, l.b, l.weight] as const),
    radii
  )
  const discs = centres.map((p, c) => ({ x: p.x * unit, y: p.y * unit, radius: radii[c]! }))
  separate(discs)

  const x = new Float64Array(count)
  const y = new Float64Array(count)
  all.forEach((group, c) => {
    const disc = discs[c]!
    const members = [...group.members].sort((a, b) => score[b]! - score[a]! || a - b)
    const start = members.map((_, i) => spiral(i, unit))
    let placed = start
    if (!group.loose) {
      const index = new Map(members.map((m, i) => [m, i]))
      const edges: Array<readonly [number, number, number]> = []
      for (const m of members) {
        for (const [other, weight] of adjacency[m]!) {
          const j = index.get(other)
          if (j !== undefined && other > m) edges.push([index.get(m)!, j, weight])
        }
      }
      placed = forceLayout(start, edges)
    }
    const cx = placed.reduce((sum, p) => sum + p.x, 0) / placed.length
    const cy = placed.reduce((sum, p) => sum + p.y, 0) / placed.length
    const reach = Math.max(1e-9, ...placed.map((p) => Math.hypot(p.x - cx, p.y - cy)))
    const scale = members.length === 1 ? 0 : (disc.radius * 0.9) / reach
    members.forEach((m, i) => {
      x[m] = round2(disc.x + (placed[i]!.x - cx) * scale)
      y[m] = round2(disc.y + (placed[i]!.y - cy) * scale)
    })
  })

  return {
    community,
    score,
    x,
    y,
    communities: all.map((group, c) => ({
      size: group.members.length,
      loose: group.loose,
      x: round2(discs[c]!.x),
      y: round2(discs[c]!.y),
      radius: round2(discs[c]!.radius)
    })),
    links
  }
}
