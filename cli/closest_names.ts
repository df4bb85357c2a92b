/**
 * "Did you mean": the existing names closest to a mistyped one, by edit
 * distance (insertions, deletions, substitutions and swaps of two adjacent
 * characters each cost 1), so that `nod042` suggests `node042`.
 *
 * @module
 */

/**
 * The optimal-string-alignment distance of `a` and `b` (Levenshtein with
 * adjacent transpositions).
 *
 * @example
 * ```ts
 * import { editDistance } from "./closest_names.ts";
 * console.assert(editDistance("nod042", "node042") === 1);
 * console.assert(editDistance("node024", "node042") === 1);
 * ```
 */
export function editDistance(a: string, b: string): number {
  // rows i-2, i-1 and i of the table, each of length b.length + 1
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + cost,
      );
      if (
        i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]
      ) {
        d = Math.min(d, (before[j - 2] ?? 0) + 1);
      }
      row.push(d);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/**
 * Up to `max` names of `candidates` that are likeliest what `name` meant:
 * those at the smallest edit distance from it, sorted, if that distance is
 * within a third of the name's length (at least 2). None when nothing is
 * that close: a guess far off helps nobody.
 *
 * @example
 * ```ts
 * import { closestNames } from "./closest_names.ts";
 * console.log(closestNames("nod042", ["node042", "node043", "compute-7"]));
 * // ["node042"]
 * ```
 */
export function closestNames(
  name: string,
  candidates: Iterable<string>,
  max = 3,
): string[] {
  const within = Math.max(2, Math.floor(name.length / 3));
  const scored = [...new Set(candidates)]
    .filter((c) => c !== name)
    .map((c) => ({ c, d: editDistance(name, c) }))
    .filter(({ d }) => d <= within);
  const best = Math.min(...scored.map(({ d }) => d));
  return scored
    .filter(({ d }) => d === best)
    .map(({ c }) => c)
    .sort()
    .slice(0, max);
}
