/**
 * What a deleted Eviction still waits for before its finalizer re-enables
 * the host: a pure look at the host's migration records. Records from the
 * host that Nova shows in progress count (against the cluster budget too),
 * and so do our own cold migrations that wait in `finished`
 * (VERIFY_RESIZE), which the finalizer confirms (a `migration` record: a
 * user's `resize` is never ours to confirm). A record on which Nova
 * shows no progress for `stalledAfterMs` stops counting: an unknown or stuck
 * status must not hold a finalizer and a budget slot forever. Progress is
 * measured on our own clock (the record's status or `updated_at` changed
 * since we first saw it so), never against Nova's clock.
 *
 * @module
 */

import { parseNovaTime } from "../../openstack/nova_time.ts";
import type { Migration } from "../../openstack/mod.ts";
import {
  isOurKind,
  migrationPhase,
} from "../../openstack/informer/nova_states.ts";

/** When a record's current state was first seen, by record id. */
export type ProgressMarks = ReadonlyMap<
  number,
  { sig: string; sinceMs: number }
>;

/** The finalizer's look at a deleted drain's host. */
export interface SettleLook {
  /** Records that still count: in progress, or ours awaiting confirmation. */
  counted: Migration[];
  /** Servers of our cold migrations at `finished`: confirm their resize. */
  confirm: string[];
  /** In-progress records without progress for the stall bound: not counted. */
  stalled: Migration[];
  /** The progress marks to keep for the next look (records seen now only). */
  marks: Map<number, { sig: string; sinceMs: number }>;
}

/** The state of a record that counts as progress when it changes. */
function signature(m: Migration): string {
  return `${m.status.toLowerCase()}|${m.updatedAt ?? ""}`;
}

/**
 * Looks at a deleted drain's host: which records still count, which
 * resizes of ours to confirm, which records are stalled.
 *
 * @example
 * ```ts
 * import { settleLook } from "./settle.ts";
 * const m = {
 *   id: 1, uuid: "u", instanceUuid: "vm", migrationType: "live-migration",
 *   status: "running", sourceCompute: "h", destCompute: "d", sourceNode: "h",
 *   destNode: "d", destHost: null, createdAt: "2026-01-01T00:00:00",
 *   updatedAt: "2026-01-01T00:00:05",
 * };
 * const look = settleLook({ host: "h", migrations: [m], ourCold: new Set(),
 *   marks: new Map(), nowMs: 0, stalledAfterMs: 60_000 });
 * console.assert(look.counted.length === 1);
 * ```
 */
export function settleLook(input: {
  host: string;
  migrations: readonly Migration[];
  /** Servers whose cold migration this drain started (not adopted). */
  ourCold: ReadonlySet<string>;
  marks: ProgressMarks;
  nowMs: number;
  stalledAfterMs: number;
}): SettleLook {
  const { host, nowMs, stalledAfterMs } = input;
  if (!(stalledAfterMs > 0)) {
    throw new RangeError(
      `stalledAfterMs must be a number > 0, got ${stalledAfterMs}`,
    );
  }
  const look: SettleLook = {
    counted: [],
    confirm: [],
    stalled: [],
    marks: new Map(),
  };
  for (const m of input.migrations) {
    if (m.sourceCompute !== host) continue;
    const awaitsConfirm = m.status.toLowerCase() === "finished" &&
      isOurKind(m.migrationType, "cold") &&
      input.ourCold.has(m.instanceUuid);
    if (awaitsConfirm) {
      // Ours, and holding the source's resources until confirmed: it counts
      // and is confirmed; it is not a stall (we are the ones to move it on).
      look.counted.push(m);
      look.confirm.push(m.instanceUuid);
      continue;
    }
    if (migrationPhase(m.status) !== "in_progress") continue;
    const sig = signature(m);
    const before = input.marks.get(m.id);
    const sinceMs = before !== undefined && before.sig === sig
      ? before.sinceMs
      : nowMs;
    look.marks.set(m.id, { sig, sinceMs });
    if (nowMs - sinceMs >= stalledAfterMs) look.stalled.push(m);
    else look.counted.push(m);
  }
  look.confirm.sort();
  return look;
}

/**
 * Starts of ours that Nova has not listed yet: real Nova answers a live
 * migration's 202 before the conductor writes its record (0.08-0.35 s on
 * Zed), so a deleted Eviction whose start is that fresh has a migration
 * running that no list shows. Such a start (not adopted, within `graceMs`,
 * with no record from `host` created at or after it, less 2 s for Nova's
 * whole-second times) keeps the drain unsettled.
 *
 * @example
 * ```ts
 * import { unlistedStarts } from "./settle.ts";
 * const ids = unlistedStarts({
 *   host: "h",
 *   inFlight: [{ id: "vm1", startedAt: "2026-01-01T00:00:00Z" }],
 *   migrations: [],
 *   nowMs: Date.parse("2026-01-01T00:00:01Z"),
 *   graceMs: 60_000,
 * });
 * console.assert(ids.join() === "vm1");
 * ```
 */
export function unlistedStarts(input: {
  host: string;
  inFlight: readonly {
    id: string;
    startedAt: string;
    adopted?: boolean | undefined;
  }[];
  migrations: readonly Migration[];
  nowMs: number;
  graceMs: number;
  /** Nova's clock minus ours (ms; nova_clock.ts). */
  novaOffsetMs?: number;
}): string[] {
  const out: string[] = [];
  const offset = input.novaOffsetMs ?? 0;
  for (const e of input.inFlight) {
    if (e.adopted === true) continue;
    const started = Date.parse(e.startedAt);
    if (!(input.nowMs - started < input.graceMs)) continue;
    const listed = input.migrations.some((m) =>
      m.instanceUuid === e.id && m.sourceCompute === input.host &&
      (parseNovaTime(m.createdAt) ?? Number.NEGATIVE_INFINITY) - offset >=
        started - 2_000
    );
    if (!listed) out.push(e.id);
  }
  return out.sort();
}
