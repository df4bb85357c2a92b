/**
 * A small seeded pseudo-random generator (mulberry32), so the simulator's
 * ids, jitter and fault draws are the same for the same seed.
 *
 * @module
 */

/**
 * A deterministic PRNG.
 *
 * @example
 * ```ts
 * import { Prng } from "./prng.ts";
 * const a = new Prng(42), b = new Prng(42);
 * console.log(a.next() === b.next()); // true
 * ```
 */
export class Prng {
  #state: number;

  /** Creates a generator from a 32-bit seed. */
  constructor(seed: number) {
    if (!Number.isInteger(seed)) {
      throw new RangeError(`seed must be an integer, got ${seed}`);
    }
    this.#state = seed >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A random version-4 UUID drawn from this generator. */
  uuid(): string {
    const bytes = new Uint8Array(16);
    for (let i = 0; i < 16; i++) bytes[i] = Math.floor(this.next() * 256);
    bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
    bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
    const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${
      hex.slice(16, 20)
    }-${hex.slice(20)}`;
  }

  /** A lowercase hex string of `n` characters. */
  hex(n: number): string {
    let out = "";
    while (out.length < n) {
      out += Math.floor(this.next() * 16).toString(16);
    }
    return out;
  }
}
