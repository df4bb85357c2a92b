/**
 * The in-process ledger of migrations in flight per Eviction: passes read
 * the budget and reserve in one synchronous step, so two never spend the
 * same slot (a status written a moment ago may not be cached yet).
 *
 * @module
 */

/**
 * Migrations in flight per Eviction key, as this process last knew them.
 *
 * @example
 * ```ts
 * import { InFlightLedger } from "./ledger.ts";
 * const ledger = new InFlightLedger();
 * ledger.set("a", 3);
 * console.assert(ledger.othersInFlight("b", new Map([["c", 1]])) === 4);
 * ```
 */
export class InFlightLedger {
  readonly #byKey = new Map<string, number>();

  /** Records what a pass of `key` left in flight (after its starts). */
  set(key: string, inFlight: number): void {
    if (!Number.isSafeInteger(inFlight) || inFlight < 0) {
      throw new RangeError(
        `inFlight of ${JSON.stringify(key)} must be an integer >= 0, got ${
          String(inFlight)
        }`,
      );
    }
    this.#byKey.set(key, inFlight);
  }

  /** Forgets an Eviction (deleted). */
  delete(key: string): void {
    this.#byKey.delete(key);
  }

  /** What the ledger holds for `key` (0 when nothing). */
  get(key: string): number {
    return this.#byKey.get(key) ?? 0;
  }

  /**
   * Migrations in flight in every Eviction but `key`: per Eviction the
   * larger of the ledger's and the cached status's (either may be ahead).
   */
  othersInFlight(key: string, cached: ReadonlyMap<string, number>): number {
    let total = 0;
    const keys = new Set([...this.#byKey.keys(), ...cached.keys()]);
    for (const k of keys) {
      if (k === key) continue;
      total += Math.max(this.#byKey.get(k) ?? 0, cached.get(k) ?? 0);
    }
    return total;
  }

  /**
   * Reads the budget and reserves in one synchronous step: `decide` gets
   * the migrations in flight elsewhere and returns this Eviction's own.
   */
  reserve(
    key: string,
    cached: ReadonlyMap<string, number>,
    decide: (othersInFlight: number) => number,
  ): void {
    this.set(key, decide(this.othersInFlight(key, cached)));
  }
}
