/**
 * The demo's closing table: for each drain, its makespan against the lower
 * bound no schedule can beat, max(max t_i, sum t_i / L), from the
 * simulator's migration records (virtual time).
 *
 * @module
 */

/** One migration as the simulator recorded it (virtual milliseconds). */
export interface MigrationRecord {
  source: string;
  type: string;
  status: string;
  createdAt: number;
  updatedAt: number;
  copyMs: number;
}

/** One row of the summary. */
export interface DrainSummaryRow {
  host: string;
  how: string;
  limit: number;
  migrations: number;
  failures: number;
  makespanSeconds: number;
  lowerBoundSeconds: number;
  /** makespan / lower bound; 1 is perfect. */
  ratio: number;
}

const SUCCEEDED = new Set(["completed", "finished", "confirmed", "done"]);
const FAILED = new Set(["error", "failed", "cancelled"]);

/**
 * Summarises the migrations off `host`. `serviceOverheadMs` is the time a
 * migration takes besides copying memory (preparing and post-migrating);
 * `limit` is the number that may run at once (the lower of our limit and
 * Nova's per-host limit).
 *
 * @example
 * ```ts
 * import { summariseDrain } from "./summary.ts";
 * const row = summariseDrain("n1", "Eviction", 2, 1000, [
 *   { source: "n1", type: "live-migration", status: "completed", createdAt: 0, updatedAt: 3000, copyMs: 2000 },
 *   { source: "n1", type: "live-migration", status: "completed", createdAt: 0, updatedAt: 3000, copyMs: 2000 },
 * ]);
 * console.assert(row.ratio === 1);
 * ```
 */
export function summariseDrain(
  host: string,
  how: string,
  limit: number,
  serviceOverheadMs: number,
  migrations: readonly MigrationRecord[],
): DrainSummaryRow {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
  }
  const mine = migrations.filter((m) => m.source === host);
  const done = mine.filter((m) => SUCCEEDED.has(m.status));
  const times = done.map((m) => m.copyMs + serviceOverheadMs);
  const lowerBound = times.length === 0
    ? 0
    : Math.max(Math.max(...times), times.reduce((a, b) => a + b, 0) / limit);
  const makespan = mine.length === 0
    ? 0
    : Math.max(...mine.map((m) => m.updatedAt)) -
      Math.min(...mine.map((m) => m.createdAt));
  return {
    host,
    how,
    limit,
    migrations: mine.length,
    failures: mine.filter((m) => FAILED.has(m.status)).length,
    makespanSeconds: makespan / 1000,
    lowerBoundSeconds: lowerBound / 1000,
    ratio: lowerBound === 0 ? 1 : makespan / lowerBound,
  };
}

/**
 * Renders rows as an aligned text table.
 *
 * @example
 * ```ts
 * import { renderSummary } from "./summary.ts";
 * console.log(renderSummary([], { total: 0, drain: 0 }, 0));
 * ```
 */
export function renderSummary(
  rows: readonly DrainSummaryRow[],
  calls: { total: number; drain: number },
  migrated: number,
): string {
  const header = [
    "HOST",
    "DRAINED BY",
    "LIMIT",
    "MIGRATIONS",
    "FAILED",
    "MAKESPAN",
    "LOWER BOUND",
    "RATIO",
  ];
  const minutes = (s: number) => `${(s / 60).toFixed(1)} min`;
  const body = rows.map((r) => [
    r.host,
    r.how,
    String(r.limit),
    String(r.migrations),
    String(r.failures),
    minutes(r.makespanSeconds),
    minutes(r.lowerBoundSeconds),
    r.ratio.toFixed(2),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((r) => (r[i] ?? "").length))
  );
  const table = [header, ...body].map((r) =>
    r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd()
  ).join("\n");
  const perVm = migrated === 0 ? "-" : (calls.drain / migrated).toFixed(2);
  return `${table}\n\nTimes are the simulator's virtual time. Nova and Placement calls: ${calls.total} in all (with Hypervisor sync and discovery); ${calls.drain} by the drains (servers and migrations), ${perVm} per migrated VM.`;
}

/**
 * The calls the drains made, from the simulator's counters: servers and
 * migrations, not Hypervisor sync, discovery or Keystone.
 *
 * @example
 * ```ts
 * import { drainCalls } from "./summary.ts";
 * console.assert(drainCalls({ "GET /compute/v2.1/servers/detail": 3, "GET /placement/x": 9 }) === 3);
 * ```
 */
export function drainCalls(calls: Readonly<Record<string, number>>): number {
  return Object.entries(calls)
    .filter(([key]) => /\/servers\b|\/os-migrations\b/.test(key))
    .reduce((n, [, count]) => n + count, 0);
}
