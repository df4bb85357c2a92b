/**
 * Read-your-writes over an informer cache: the object a controller wrote
 * last per key, preferred to the cached one until the cache catches up.
 *
 * resourceVersions are opaque: they are only compared for equality. A
 * write records the versions it knows to be older than what it wrote (the
 * version it replaced, what the cache showed then, what a re-read after a
 * conflict showed); while the cache still shows one of those, the written
 * object is newer and wins. Any other version in the cache is the written
 * one or a later one (the API server orders writes to one object), so the
 * memory of that key is dropped and the cache is read again.
 *
 * @module
 */

/** A written object: the server's answer and its parsed form. */
export interface Written<R, P> {
  /** The object as the API server returned it (every field kept). */
  raw: R;
  /** The object as handlers see it (parsed with the kind's schema). */
  parsed: P;
  /** Its resourceVersion. */
  resourceVersion: string;
  /** Versions known to be older than this one. */
  older: ReadonlySet<string>;
}

/**
 * The newest object written per key.
 *
 * @example
 * ```ts
 * import { WrittenObjects } from "./written.ts";
 * const w = new WrittenObjects<string, string>();
 * w.remember("a", "raw", "parsed", "2", ["1"]);
 * console.assert(w.resolve("a", "1")?.parsed === "parsed"); // cache behind
 * console.assert(w.resolve("a", "2") === undefined); // cache caught up
 * ```
 */
export class WrittenObjects<R, P> {
  readonly #byKey = new Map<string, Written<R, P>>();

  /** Keys with a remembered write (for tests and metrics). */
  get size(): number {
    return this.#byKey.size;
  }

  /**
   * Remembers `raw`/`parsed` (version `resourceVersion`) as the newest
   * object of `key`; `older` lists versions known to precede it. A write
   * that follows a remembered one keeps that one's older versions and
   * adds its version to them.
   */
  remember(
    key: string,
    raw: R,
    parsed: P,
    resourceVersion: string,
    older: Iterable<string | undefined>,
  ): void {
    if (resourceVersion === "") {
      throw new TypeError(
        `a written object of ${key} needs a resourceVersion, got ""`,
      );
    }
    const set = new Set<string>();
    const prev = this.#byKey.get(key);
    if (prev !== undefined) {
      for (const v of prev.older) set.add(v);
      set.add(prev.resourceVersion);
    }
    for (const v of older) if (v !== undefined && v !== "") set.add(v);
    set.delete(resourceVersion);
    this.#byKey.set(key, { raw, parsed, resourceVersion, older: set });
  }

  /**
   * The remembered object of `key` if the cache (showing version
   * `cachedVersion`, undefined when it has no object) is still behind it;
   * otherwise forgets the key and returns undefined: read the cache.
   */
  resolve(
    key: string,
    cachedVersion: string | undefined,
  ): Written<R, P> | undefined {
    const w = this.#byKey.get(key);
    if (w === undefined) return undefined;
    if (cachedVersion !== undefined && w.older.has(cachedVersion)) return w;
    this.#byKey.delete(key);
    return undefined;
  }

  /**
   * Like {@linkcode resolve}, without forgetting: for a copy read from
   * another cache (which may run ahead of or behind the controller's),
   * the remembered object when that copy is known older, else undefined.
   */
  peek(
    key: string,
    cachedVersion: string | undefined,
  ): Written<R, P> | undefined {
    const w = this.#byKey.get(key);
    if (w === undefined || cachedVersion === undefined) return undefined;
    return w.older.has(cachedVersion) ? w : undefined;
  }

  /** Forgets `key` (the object was deleted). */
  forget(key: string): void {
    this.#byKey.delete(key);
  }
}
