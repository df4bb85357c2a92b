/**
 * What an ended drain learned, for its Hypervisor's `status.lastDrain` (read by capacity/history.ts).
 * @module
 */

import type {
  EvictionStatus,
  HypervisorStatusLastDrain,
} from "../../models/mod.ts";
import { drainEndMs } from "../conditions.ts";

/** When the drain's first migration started and its last one ended (controller clock ms). */
export interface DrainMarks {
  /** Unset if this process did not see the first start. */
  firstStartMs?: number;
  /** The latest pass that saw a migration end (done or failed). */
  lastEndMs?: number;
}

/** What of a pass {@linkcode noteMarks} reads. */
export interface MarkedPass {
  /** The status before the pass. */
  before: EvictionStatus;
  started: number;
  /** Migrations seen ending (left the host, or failed). */
  ended: number;
  nowMs: number;
}

/**
 * The marks after a pass; a first start only for a fresh drain (not one this process took over).
 *
 * @example
 * ```ts
 * import { noteMarks } from "./drain_lesson.ts";
 * const m = noteMarks({}, { before: {}, started: 2, ended: 0, nowMs: 5000 });
 * console.log(noteMarks(m, { before: { migratedCount: 1 }, started: 1, ended: 1, nowMs: 9000 }));
 * // { firstStartMs: 5000, lastEndMs: 9000 }
 * ```
 */
export function noteMarks(marks: DrainMarks, pass: MarkedPass): DrainMarks {
  const { before, started, ended, nowMs } = pass;
  const fresh = (before.migratedCount ?? 0) === 0 &&
    (before.inFlight ?? []).length === 0 && (before.failed ?? []).length === 0;
  return {
    ...marks,
    ...(marks.firstStartMs === undefined && started > 0 && fresh
      ? { firstStartMs: nowMs }
      : {}),
    ...(ended > 0 ? { lastEndMs: nowMs } : {}),
  };
}

/**
 * The record of an ended drain. `fixedMs`: start to first migration plus last migration's end to end.
 *
 * @example
 * ```ts
 * import { drainLesson } from "./drain_lesson.ts";
 * const l = drainLesson("node042", {
 *   startedAt: "2026-01-01T00:00:00.000Z", finishedAt: "2026-01-01T00:01:29.000Z", migratedCount: 3,
 *   observedMigrationRate: { mbPerSecond: 63, overheadMs: 11000, migrations: 3 },
 * }, { firstStartMs: Date.parse("2026-01-01T00:00:05Z"), lastEndMs: Date.parse("2026-01-01T00:01:20Z") });
 * console.log(l?.fixedMs); // 14000
 * ```
 */
export function drainLesson(
  eviction: string,
  status: EvictionStatus,
  marks: DrainMarks,
): HypervisorStatusLastDrain | undefined {
  const startedMs = Date.parse(status.startedAt ?? "");
  const endedMs = drainEndMs(status);
  if (Number.isNaN(startedMs) || endedMs === undefined || endedMs < startedMs) {
    return undefined;
  }
  const migrated = status.migratedCount ?? 0;
  const fixedMs = marks.firstStartMs !== undefined
    ? Math.max(0, marks.firstStartMs - startedMs) +
      Math.max(
        0,
        endedMs - Math.max(marks.lastEndMs ?? endedMs, marks.firstStartMs),
      )
    // nothing was ever started: the whole drain was fixed cost
    : migrated === 0 && (status.failed ?? []).length === 0
    ? endedMs - startedMs
    : undefined;
  return {
    eviction,
    startedAt: status.startedAt ?? "",
    endedAt: new Date(endedMs).toISOString(),
    migrated,
    ...(status.predictedMakespanSeconds === undefined
      ? {}
      : { predictedMakespanSeconds: status.predictedMakespanSeconds }),
    ...(status.observedMigrationRate === undefined
      ? {}
      : { migrationRate: status.observedMigrationRate }),
    ...(fixedMs === undefined ? {} : { fixedMs: Math.round(fixedMs) }),
    ...(status.novaLiveMigrationLimit === undefined
      ? {}
      : { novaLiveMigrationLimit: status.novaLiveMigrationLimit }),
  };
}

/**
 * Whether `lesson` needs writing over `recorded`: not the same, nor one that ended later.
 *
 * @example
 * ```ts
 * import { needsRecording } from "./drain_lesson.ts";
 * const l = { eviction: "a", startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00.000Z", migrated: 1 };
 * console.log(needsRecording(l, undefined), needsRecording(l, { ...l })); // true false
 * ```
 */
export function needsRecording(
  lesson: HypervisorStatusLastDrain,
  recorded: HypervisorStatusLastDrain | undefined,
): boolean {
  if (recorded === undefined) return true;
  if (Date.parse(recorded.endedAt) > Date.parse(lesson.endedAt)) return false;
  return sameness(recorded) !== sameness(lesson);
}

const sameness = (l: HypervisorStatusLastDrain) =>
  JSON.stringify([
    l.eviction,
    Date.parse(l.startedAt),
    Date.parse(l.endedAt),
    l.migrated,
    l.fixedMs,
    l.predictedMakespanSeconds,
    l.migrationRate?.mbPerSecond,
    l.migrationRate?.overheadMs,
    l.migrationRate?.migrations,
  ]);
