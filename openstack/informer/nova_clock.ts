/**
 * Nova's clock against ours, fitted from answers' `Date` and our starts'
 * `created_at`. The offset matters when Nova is behind (`changes-since` hides
 * the drain's first minutes); the rate is a simulator's time scale.
 * @module
 */

/** The `Date` header has whole seconds: samples are accurate to about this. */
export const DATE_RESOLUTION_MS = 1_000;

/** An offset below this is left to the planner's skew allowance (10 s). */
export const MIN_OFFSET_MS = 5_000;

/** The shortest span of our clock over which an offset must have held still. */
export const STEADY_SPAN_MS = 10_000;

/** The most drift (Nova ms per our ms, minus 1) of clocks taken as one rate. */
export const MAX_DRIFT = 0.05;

/** One per second of our clock at most. */
const MAX_SAMPLES = 32;

interface Sample {
  localMs: number;
  novaMs: number;
}

/**
 * @example
 * ```ts
 * import { NovaClock } from "./nova_clock.ts";
 * const behind = new NovaClock();
 * // Nova 30 s behind, read over 12 s of our clock
 * for (let t = 0; t <= 12_000; t += 1_000) behind.sample(t - 30_000, t);
 * console.assert(behind.offsetMs() === -29_500);
 * console.assert(behind.localPerNovaMs() === 1);
 * const scaled = new NovaClock();
 * for (let t = 0; t <= 4_000; t += 1_000) scaled.reading(20 * t, t);
 * console.assert(scaled.localPerNovaMs() === 1 / 20 && scaled.offsetMs() === 0);
 * console.assert(scaled.toLocal(40_000) === 2_000);
 * ```
 */
export class NovaClock {
  readonly #samples: Sample[] = [];

  /** Nova's `Date` (ms, whole seconds) on an answer received at `localMs`. */
  sample(novaDateMs: number, localMs: number): void {
    this.reading(novaDateMs + DATE_RESOLUTION_MS / 2, localMs);
  }

  /** Nova's clock read `novaMs` at our `localMs` (e.g. a start's record). */
  reading(novaMs: number, localMs: number): void {
    if (!Number.isFinite(novaMs) || !Number.isFinite(localMs)) return;
    const last = this.#samples.at(-1);
    if (
      last !== undefined &&
      Math.abs(localMs - last.localMs) < DATE_RESOLUTION_MS
    ) return;
    this.#samples.push({ localMs, novaMs });
    if (this.#samples.length > MAX_SAMPLES) this.#samples.shift();
  }

  /** Our ms per Nova ms (1 within {@linkcode MAX_DRIFT}); undefined while unknown. */
  localPerNovaMs(): number | undefined {
    return fitClock(this.#samples)?.localPerNovaMs;
  }

  /** A time on Nova's clock on ours. */
  toLocal(novaMs: number): number | undefined {
    const fit = fitClock(this.#samples);
    return fit === undefined
      ? undefined
      : (novaMs - fit.offsetMs) * fit.localPerNovaMs;
  }

  /** Nova's clock minus ours, once steady at one rate (a drifting one would move every record more and more); else 0. */
  offsetMs(): number {
    const fit = fitClock(this.#samples);
    if (fit === undefined || fit.localPerNovaMs !== 1) return 0;
    if (fit.spanMs < STEADY_SPAN_MS) return 0;
    return Math.abs(fit.offsetMs) < MIN_OFFSET_MS ? 0 : fit.offsetMs;
  }
}

/**
 * The line `nova = local / localPerNovaMs + offsetMs` (offset a median).
 *
 * @example
 * ```ts
 * import { fitClock } from "./nova_clock.ts";
 * const behind = [0, 5_000, 11_000].map((t) => ({ localMs: t, novaMs: t - 300_000 }));
 * console.assert(fitClock(behind)?.offsetMs === -300_000);
 * console.assert(fitClock([]) ?.localPerNovaMs === 1);
 * ```
 */
export function fitClock(
  samples: readonly Sample[],
): { localPerNovaMs: number; offsetMs: number; spanMs: number } | undefined {
  if (samples.length === 0) {
    return { localPerNovaMs: 1, offsetMs: 0, spanMs: 0 };
  }
  const locals = samples.map((s) => s.localMs);
  const spanMs = Math.max(...locals) - Math.min(...locals);
  if (spanMs < DATE_RESOLUTION_MS) return undefined;
  const n = samples.length;
  const mx = locals.reduce((a, b) => a + b, 0) / n;
  const my = samples.reduce((a, s) => a + s.novaMs, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const s of samples) {
    sxx += (s.localMs - mx) ** 2;
    sxy += (s.localMs - mx) * (s.novaMs - my);
  }
  const slope = sxy / sxx;
  // drift within the header's resolution and MAX_DRIFT is one rate
  const one = Math.abs(slope - 1) * spanMs <=
    DATE_RESOLUTION_MS + MAX_DRIFT * spanMs;
  if (!one && !(slope > 1e-3 && slope < 1e3)) return undefined;
  const rate = one ? 1 : slope;
  const sorted = samples.map((s) => s.novaMs - s.localMs * rate)
    .sort((a, b) => a - b);
  const offsetMs = Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0);
  return { localPerNovaMs: 1 / rate, offsetMs, spanMs };
}
