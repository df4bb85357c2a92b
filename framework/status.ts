/**
 * Status writes with optimistic concurrency: read, apply a mutation, write
 * with the read resourceVersion; on 409 Conflict re-read and re-apply, a
 * bounded number of times. A concurrent writer therefore never loses a field.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import { ApiError } from "./errors.ts";
import type { KindDescriptor, KubeObject } from "./kind.ts";

/** Options of {@linkcode updateStatus}. */
export interface UpdateStatusOptions<T> {
  /** Attempts in total before the 409 is rethrown (default 5). */
  attempts?: number;
  /** A fresh copy to start from, saving the first GET. */
  current?: T;
  /** Write to the `status` subresource (default true). */
  subresource?: boolean;
  /** Called on each 409 before the re-read (for metrics and tests). */
  onConflict?: (attempt: number) => void;
  /** Called with every object read from the server (the first GET, re-reads). */
  onRead?: (fresh: T) => void;
}

/** An object with a status. */
export type WithStatus<S> = KubeObject & { status?: S | undefined };

/**
 * Applies `mutate` to the object's `status` and writes it; retries on 409.
 * `mutate` receives a deep copy of the latest status (or `{}`) and returns
 * the new status (or mutates it in place and returns nothing).
 *
 * @example
 * ```ts ignore
 * await updateStatus(client, Eviction, "node042", (s) => {
 *   s.migratedCount = (s.migratedCount ?? 0) + 1;
 * });
 * ```
 */
export async function updateStatus<S extends object, T extends WithStatus<S>>(
  client: KubeClient,
  kind: KindDescriptor,
  key: string,
  mutate: (status: S, object: T) => S | void | Promise<S | void>,
  options: UpdateStatusOptions<T> = {},
): Promise<T> {
  const attempts = options.attempts ?? 5;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new RangeError(`attempts must be an integer >= 1, got ${attempts}`);
  }
  const read = async () => {
    const fresh = await client.get<T>(kind, key);
    options.onRead?.(fresh);
    return fresh;
  };
  let current: T = options.current ?? await read();
  for (let attempt = 1;; attempt++) {
    const copy = structuredClone(current);
    const status = (copy.status ?? {}) as S;
    const next = (await mutate(status, copy)) ?? status;
    copy.status = next;
    try {
      return await client.replace<T>(
        kind,
        copy,
        options.subresource === false ? undefined : "status",
      );
    } catch (err) {
      if (
        !(err instanceof ApiError && err.status === 409) || attempt >= attempts
      ) {
        throw err;
      }
      options.onConflict?.(attempt);
      current = await read();
    }
  }
}

/**
 * Merge-patches the `status` subresource (no resourceVersion: last writer
 * wins per field, which suits independent fields).
 *
 * @example
 * ```ts ignore
 * await patchStatus(client, Eviction, "node042", { outstandingCount: 3 });
 * ```
 */
export function patchStatus<T extends KubeObject>(
  client: KubeClient,
  kind: KindDescriptor,
  key: string,
  status: Record<string, unknown>,
): Promise<T> {
  return client.patch<T>(kind, key, { status }, "merge", "status");
}
