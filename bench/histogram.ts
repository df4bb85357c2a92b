/**
 * Quantiles of a Prometheus histogram, as PromQL's `histogram_quantile`
 * computes them: linear interpolation inside the bucket that holds the
 * rank, the lowest bucket starting at 0.
 *
 * @module
 */

/**
 * The `q` quantile (0..1) of cumulative bucket counts (upper bound `le` to
 * count, `+Inf` included); NaN when there is no observation. A rank in the
 * `+Inf` bucket gives the highest finite bound.
 *
 * @example
 * ```ts
 * import { histogramQuantile } from "./histogram.ts";
 * const b = new Map([["0.005", 99], ["0.025", 100], ["+Inf", 100]]);
 * console.assert(Math.abs(histogramQuantile(b, 0.5) - 0.005 * 50 / 99) < 1e-12);
 * ```
 */
export function histogramQuantile(
  buckets: ReadonlyMap<string, number>,
  q: number,
): number {
  if (!(q >= 0 && q <= 1)) {
    throw new RangeError(`quantile must be in 0..1, got ${q}`);
  }
  const sorted = [...buckets].map(([le, n]) => ({
    le: le === "+Inf" ? Infinity : Number(le),
    n,
  })).sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.n ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const { le, n } of sorted) {
    if (n >= rank) {
      if (le === Infinity) return lower;
      return n === below
        ? le
        : lower + (le - lower) * (rank - below) / (n - below);
    }
    lower = le;
    below = n;
  }
  return lower;
}
