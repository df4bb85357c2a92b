/**
 * Deadlines for the benchmarks: a run that does not finish in time fails
 * with what it was doing, and a step of the clean-up that hangs is given
 * up, so that `bench:drain` and `bench:wave` never hang silently.
 *
 * @module
 */

/**
 * `p`, or after `ms` a rejection whose message is what `pending` says was
 * pending (or that it could not say).
 *
 * @example
 * ```ts
 * import { withDeadline } from "./deadline.ts";
 * const never = new Promise<number>(() => {});
 * const err = await withDeadline(never, 10, () => Promise.resolve("stuck")).catch((e) => e);
 * console.assert(err instanceof Error && err.message === "stuck");
 * ```
 */
export async function withDeadline<T>(
  p: Promise<T>,
  ms: number,
  pending: () => Promise<string>,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      pending().then(
        (what) => reject(new Error(what)),
        (err) => reject(new Error(`(the report failed: ${err})`)),
      );
    }, ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `p`'s value, or `fallback` when it rejects or takes longer than `ms`
 * (a report, or a clean-up, never hangs itself).
 *
 * @example
 * ```ts
 * import { within } from "./deadline.ts";
 * console.assert(await within(new Promise<string>(() => {}), 10, "late") === "late");
 * ```
 */
export async function within<T>(
  p: Promise<T>,
  ms: number,
  fallback: T,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p.catch(() => fallback),
      new Promise<T>((r) => timer = setTimeout(() => r(fallback), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Parses `--deadline-s` (real seconds, > 0) to milliseconds; throws one
 * line naming the bad value otherwise.
 *
 * @example
 * ```ts
 * import { deadlineMs } from "./deadline.ts";
 * console.assert(deadlineMs("600") === 600_000);
 * ```
 */
export function deadlineMs(text: string | undefined): number {
  const s = Number(text);
  if (text === undefined || text.trim() === "" || !(s > 0) || !isFinite(s)) {
    throw new RangeError(
      `--deadline-s must be a number of seconds > 0, got ${text}`,
    );
  }
  return s * 1000;
}
