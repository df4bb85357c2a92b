/**
 * When to read a live copy's progress (`GET /servers/{id}/migrations/{mid}`,
 * one call per copy: only when needed), and what is kept of the reads.
 * @module
 */

import type { ServerMigration } from "../nova_types.ts";
import { parseNovaTime } from "../nova_time.ts";
import type { CopyProgress } from "./progress_types.ts";

/** The default progress interval (`--migration-progress-interval`). */
export const DEFAULT_PROGRESS_INTERVAL_MS = 30_000;

/** By when Nova surely shows a copy's figures: libvirt saves them every 5 s. */
const FIRST_FIGURES_MS = 10_000;

/** A live copy in flight, as a pass states it. */
export interface CopyToWatch {
  serverId: string;
  migrationId: string;
  sinceMs: number;
  /** Absent while the pacing model cannot time it. */
  endAtMs?: number | undefined;
  /** pacing.ts `endsBy`. */
  overdueAtMs?: number | undefined;
  /** When its completion bound is reached (the policy's decision). */
  decideAtMs?: number | undefined;
  /** The progress timeout, from its lowest remaining bytes' first read. */
  stallMs?: number | undefined;
  /** Its policy acts on a stall (Abort, ForceComplete): read from its first figures on. */
  acts?: boolean | undefined;
}

/** What the schedule knows of a copy's reads. */
export interface ReadMarks {
  /** The last read tried (answered or not). */
  triedAtMs?: number | undefined;
  lowestAtMs?: number | undefined;
}

/** When a copy's policy decision is due: its completion bound, or its progress timeout after its lowest read. */
export function decideAt(copy: CopyToWatch, marks: ReadMarks): number {
  const stalled = copy.stallMs === undefined || marks.lowestAtMs === undefined
    ? Infinity
    : marks.lowestAtMs + copy.stallMs;
  return Math.min(copy.decideAtMs ?? Infinity, stalled);
}

/**
 * When `copy` is next read (the next-look rule aside): once a reason holds
 * and an interval has passed since its last read.
 *
 * @example
 * ```ts
 * import { nextReadAtMs } from "./progress.ts";
 * const copy = { serverId: "a", migrationId: "1", sinceMs: 0 };
 * console.assert(nextReadAtMs(copy, {}, 30_000) === 30_000);
 * console.assert(nextReadAtMs(copy, { triedAtMs: 40_000 }, 30_000) === 70_000);
 * console.assert(nextReadAtMs({ ...copy, overdueAtMs: 9000 }, {}, 30_000) === 9000);
 * ```
 */
export function nextReadAtMs(
  copy: CopyToWatch,
  marks: ReadMarks,
  intervalMs: number,
): number {
  const firstMs = Math.min(intervalMs, FIRST_FIGURES_MS);
  const reason = Math.min(
    copy.overdueAtMs ?? Infinity,
    // a timed copy on schedule needs no read unless its policy acts on a
    // stall; an untimed one is read at its first figures (its ETA times it)
    copy.acts === true || copy.endAtMs === undefined
      ? copy.sinceMs + firstMs
      : Infinity,
    decideAt(copy, marks),
  );
  // two reads time an untimed copy
  const gapMs = copy.endAtMs === undefined ? firstMs : intervalMs;
  const again = marks.triedAtMs === undefined
    ? -Infinity
    : marks.triedAtMs + gapMs;
  return Math.max(reason, again);
}

/** Whether the model expects `copy` to end after now and by `atMs`. */
function endsBy(copy: CopyToWatch, nowMs: number, atMs: number): boolean {
  return copy.endAtMs !== undefined && copy.endAtMs > nowMs &&
    copy.endAtMs <= atMs;
}

/** What {@linkcode readsDue} decides from. */
export interface ReadSchedule {
  nowMs: number;
  intervalMs: number;
  nextLookAtMs: number;
  copies: readonly CopyToWatch[];
  marks: (migrationId: string) => ReadMarks;
}

/**
 * The copies to read now (not one that ends before the next look: that
 * look sees its end for free).
 *
 * @example
 * ```ts
 * import { readsDue } from "./progress.ts";
 * const long = { serverId: "a", migrationId: "1", sinceMs: 0 };
 * const short = { serverId: "b", migrationId: "2", sinceMs: 0, endAtMs: 50_000, overdueAtMs: 52_000 };
 * const due = readsDue({ nowMs: 40_000, intervalMs: 30_000, nextLookAtMs: 50_000,
 *   copies: [long, short], marks: () => ({}) });
 * console.assert(due.length === 1 && due[0] === long);
 * ```
 */
export function readsDue(s: ReadSchedule): CopyToWatch[] {
  return s.copies.filter((c) =>
    !endsBy(c, s.nowMs, s.nextLookAtMs) &&
    nextReadAtMs(c, s.marks(c.migrationId), s.intervalMs) <= s.nowMs
  );
}

/**
 * When the next look should come, as the copies' expected ends tell it
 * (pacing.ts `nextLookMs` in short).
 *
 * @example
 * ```ts
 * import { nextLookEstimate } from "./progress.ts";
 * const c = (endAtMs?: number) => ({ serverId: "a", migrationId: "1", sinceMs: 0, endAtMs });
 * console.assert(nextLookEstimate(0, [c(40_000), c(90_000)], 2000, 60_000) === 40_000);
 * console.assert(nextLookEstimate(0, [c(40_000), c()], 2000, 60_000) === 2000);
 * ```
 */
export function nextLookEstimate(
  nowMs: number,
  copies: readonly CopyToWatch[],
  pollMs: number,
  maxPollMs: number,
): number {
  if (copies.some((c) => c.endAtMs === undefined)) return nowMs + pollMs;
  const ahead = copies.map((c) => c.endAtMs ?? 0).filter((e) => e > nowMs);
  const first = ahead.length === 0 ? nowMs : Math.min(...ahead);
  return Math.min(nowMs + maxPollMs, Math.max(nowMs + pollMs, first));
}

/**
 * When the next read is due of a copy whose decision is pending and that is
 * not expected to end first: the next look must come by then.
 *
 * @example
 * ```ts
 * import { pendingReadAtMs } from "./progress.ts";
 * const c = { serverId: "a", migrationId: "1", sinceMs: 0, decideAtMs: 600_000 };
 * console.assert(pendingReadAtMs([c], () => ({ triedAtMs: 40_000 }), 30_000, 40_000) === 70_000);
 * console.assert(pendingReadAtMs([{ ...c, endAtMs: 50_000 }], () => ({}), 30_000, 0) === 30_000);
 * console.assert(pendingReadAtMs([{ ...c, endAtMs: 20_000 }], () => ({}), 30_000, 0) === undefined);
 * ```
 */
export function pendingReadAtMs(
  copies: readonly CopyToWatch[],
  marks: (migrationId: string) => ReadMarks,
  intervalMs: number,
  nowMs: number,
): number | undefined {
  let first: number | undefined;
  for (const c of copies) {
    const m = marks(c.migrationId);
    if (decideAt(c, m) === Infinity) continue;
    const at = nextReadAtMs(c, m, intervalMs);
    if (endsBy(c, nowMs, at)) continue; // its end's look comes first
    first = Math.min(first ?? Infinity, at);
  }
  return first;
}

/** A copy's progress and the first read its net rate is measured from. */
export interface KeptProgress {
  progress: CopyProgress;
  firstRemainingBytes: number;
  firstAtMs: number;
  /** The first read's `updated_at` (Nova's clock). */
  firstSavedMs?: number;
}

/**
 * A copy's progress after a read at `atMs` (all of it counts as read at
 * `copyStartMs`); undefined while Nova reports no counters.
 *
 * @example
 * ```ts
 * import { nextProgress } from "./progress.ts";
 * const rec = (remaining: number) => ({ id: 7, uuid: "u", serverUuid: "a", status: "running",
 *   sourceCompute: "h", destCompute: "d", createdAt: "", updatedAt: null,
 *   memoryTotalBytes: 1000, memoryProcessedBytes: 1000 - remaining, memoryRemainingBytes: remaining,
 *   diskTotalBytes: null, diskProcessedBytes: null, diskRemainingBytes: null });
 * const first = nextProgress(undefined, rec(800), 0);
 * const second = nextProgress(first, rec(600), 10_000);
 * console.assert(second?.progress.bytesPerSecond === 20 && second.progress.etaSeconds === 30);
 * // all of it still to send 10 s into the copy: no progress since its start
 * console.assert(nextProgress(undefined, rec(1000), 10_000, 0)?.progress.lowestAtMs === 0);
 * ```
 */
export function nextProgress(
  prev: KeptProgress | undefined,
  m: ServerMigration,
  atMs: number,
  copyStartMs?: number,
): KeptProgress | undefined {
  const total = m.memoryTotalBytes;
  const remaining = m.memoryRemainingBytes;
  if (total === null || remaining === null || total <= 0) return prev;
  // a first read that still shows all of it shows no progress since the start
  const last = prev?.progress ?? (copyStartMs === undefined ? undefined : {
    lowestRemainingBytes: total,
    lowestAtMs: Math.min(copyStartMs, atMs),
  });
  const lower = last === undefined || remaining < last.lowestRemainingBytes;
  const firstRemainingBytes = prev?.firstRemainingBytes ?? remaining;
  const firstAtMs = prev?.firstAtMs ?? atMs;
  // by Nova's saves when both show one: libvirt saves the figures every 5 s,
  // so a read's own time may be seconds past its figures
  const savedMs = parseNovaTime(m.updatedAt ?? undefined);
  const firstSavedMs = prev === undefined ? savedMs : prev.firstSavedMs;
  const spanMs = savedMs !== undefined && firstSavedMs !== undefined
    ? savedMs - firstSavedMs
    : atMs - firstAtMs;
  const rate = spanMs > 0
    ? Math.round((firstRemainingBytes - remaining) / (spanMs / 1000))
    : undefined;
  return {
    firstRemainingBytes,
    firstAtMs,
    ...(firstSavedMs === undefined ? {} : { firstSavedMs }),
    progress: {
      serverId: m.serverUuid,
      migrationId: String(m.id),
      totalBytes: total,
      remainingBytes: remaining,
      readAtMs: atMs,
      lowestRemainingBytes: lower ? remaining : last.lowestRemainingBytes,
      lowestAtMs: lower ? atMs : last.lowestAtMs,
      ...(rate === undefined ? {} : { bytesPerSecond: rate }),
      ...(rate === undefined || rate <= 0
        ? {}
        : { etaSeconds: Math.ceil(remaining / rate) }),
    },
  };
}
