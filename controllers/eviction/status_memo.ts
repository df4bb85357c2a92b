/**
 * The last status this process wrote per Eviction, so that a pass that
 * runs before the informer delivered that write does not plan from the
 * older status (and so forget migrations it just started).
 *
 * @module
 */

import type { Eviction } from "../../models/mod.ts";

interface Written {
  /** resourceVersion of the object the write replaced. */
  replaced: string | undefined;
  /** The object the API server returned. */
  written: Eviction;
}

/**
 * Remembers written statuses by key.
 *
 * @example
 * ```ts
 * import { StatusMemo } from "./status_memo.ts";
 * const memo = new StatusMemo();
 * const old = { metadata: { name: "a", resourceVersion: "1" }, spec: { hypervisor: "h", reason: "r" } };
 * memo.remember("a", "1", { ...old, metadata: { name: "a", resourceVersion: "2" }, status: { migratedCount: 1 } });
 * console.assert(memo.freshest("a", old).status?.migratedCount === 1);
 * ```
 */
export class StatusMemo {
  readonly #byKey = new Map<string, Written>();

  /** Records a write that replaced resourceVersion `replaced`. */
  remember(key: string, replaced: string | undefined, written: Eviction): void {
    this.#byKey.set(key, { replaced, written });
  }

  /** Forgets a key (object gone). */
  forget(key: string): void {
    this.#byKey.delete(key);
  }

  /**
   * The cached object, with the status this process wrote when the cache
   * still holds the version that write replaced. Any other version is at
   * least as new as the write, and wins.
   */
  freshest(key: string, cached: Eviction): Eviction {
    const memo = this.#byKey.get(key);
    if (memo === undefined) return cached;
    const rv = cached.metadata?.resourceVersion;
    if (rv !== undefined && rv === memo.replaced) {
      return { ...cached, status: memo.written.status };
    }
    this.#byKey.delete(key);
    return cached;
  }
}
