/**
 * Migrations in flight per Eviction, in process: read and reserved in one synchronous step, so two
 * passes never spend one slot (a status just written may not be cached yet).
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

  /** What a pass of `key` left in flight (after its starts). */
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

  /** Forgets a deleted Eviction. */
  delete(key: string): void {
    this.#byKey.delete(key);
  }

  /** 0 when nothing. */
  get(key: string): number {
    return this.#byKey.get(key) ?? 0;
  }

  /** In every Eviction but `key`, the larger of ledger and cached status (either may be ahead). */
  othersInFlight(key: string, cached: ReadonlyMap<string, number>): number {
    let total = 0;
    const keys = new Set([...this.#byKey.keys(), ...cached.keys()]);
    for (const k of keys) {
      if (k === key) continue;
      total += Math.max(this.#byKey.get(k) ?? 0, cached.get(k) ?? 0);
    }
    return total;
  }

  /** Reserves in one synchronous step: `decide` maps the others' in flight to this one's. */
  reserve(
    key: string,
    cached: ReadonlyMap<string, number>,
    decide: (othersInFlight: number) => number,
  ): void {
    this.set(key, decide(this.othersInFlight(key, cached)));
  }
}
