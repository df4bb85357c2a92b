/**
 * The demo's closing tables: for each drain, its makespan against the lower
 * bound no schedule can beat, max(max t_i, sum t_i / L), from the cloud's
 * migration records (the simulator's in its virtual time), shown in seconds
 * on evictor's clock like the predictions beside the actual makespans.
 *
 * @module
 */
import { drainEndMs, type DrainStatusLike } from "../controllers/conditions.ts";

/** One migration as the simulator recorded it (virtual milliseconds). */
export interface MigrationRecord {
  serverId: string;
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
  /** VMs whose migration off the host failed and that a retry moved. */
  retried: number;
  /** VMs whose migrations off the host failed, none succeeding after. */
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
 *   { serverId: "a", source: "n1", type: "live-migration", status: "completed", createdAt: 0, updatedAt: 3000, copyMs: 2000 },
 *   { serverId: "b", source: "n1", type: "live-migration", status: "completed", createdAt: 0, updatedAt: 3000, copyMs: 2000 },
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
    ...retriesOf(mine),
    makespanSeconds: makespan / 1000,
    lowerBoundSeconds: lowerBound / 1000,
    ratio: lowerBound === 0 ? 1 : makespan / lowerBound,
  };
}

/**
 * Per VM, whether a failed migration was followed by a successful one
 * (retried) or not (failed at the end).
 */
function retriesOf(
  mine: readonly MigrationRecord[],
): { retried: number; failures: number } {
  const byVm = new Map<string, MigrationRecord[]>();
  for (const m of mine) {
    byVm.set(m.serverId, [...(byVm.get(m.serverId) ?? []), m]);
  }
  let retried = 0;
  let failures = 0;
  for (const records of byVm.values()) {
    const lastFail = Math.max(
      -Infinity,
      ...records.filter((m) => FAILED.has(m.status)).map((m) => m.createdAt),
    );
    if (lastFail === -Infinity) continue;
    const movedAfter = records.some((m) =>
      SUCCEEDED.has(m.status) && m.createdAt >= lastFail
    );
    if (movedAfter) retried++;
    else failures++;
  }
  return { retried, failures };
}

/** How {@linkcode renderHosts} states its figures. */
export interface SummaryStyle {
  /**
   * How many of the rows' seconds pass in one second of evictor's clock:
   * the simulator's time scale (its records are in its virtual time), 1
   * (the default) for a real cloud. The table shows evictor's seconds, the
   * clock and unit of the predictions' table.
   */
  timeScale?: number;
  /** The closing note: what the times are and which calls were counted. */
  note?: (calls: { total: number; drain: number }, perVm: string) => string;
}

/** The simulator's closing note (the default). */
const SIMULATOR_NOTE = (
  calls: { total: number; drain: number },
  perVm: string,
) =>
  `Times are seconds on evictor's clock: MAKESPAN from the Eviction's startedAt to the drain's end, as predicted (status.predictedMakespanSeconds, set before the host was disabled); LOWER BOUND max(longest, sum / limit) of the simulator's migration records, in its faster virtual time divided by its time scale. RETRIED: VMs whose migration failed and a retry moved; FAILED: VMs not moved. (The plan preview's makespan and lower bound were predictions at the cost learned then; these are measured.) Nova and Placement calls: ${calls.total} in all (with Hypervisor sync and discovery); ${calls.drain} by the drains (servers and migrations), ${perVm} per migrated VM.`;

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

/** The fields of an Eviction the prediction table reads. */
export interface PredictedDrain {
  spec: { hypervisor: string };
  status?: DrainStatusLike | undefined;
}

/** One drain's prediction beside its actual makespan. */
export interface PredictionRow {
  host: string;
  /** status.predictedMakespanSeconds, if set. */
  predictedSeconds: number | undefined;
  /** From startedAt to the drain's end (capacity/makespan.ts drainEndMs), seconds. */
  actualSeconds: number | undefined;
  /** (predicted - actual) / actual, once both are known. */
  error: number | undefined;
  /**
   * Finished drains with a prediction that had ended before this one
   * started: the history its rate was calibrated on (0: the default rate).
   */
  history: number;
}

/**
 * Compares each drain's prediction with its actual makespan, and counts
 * the history the controller calibrated it on (the same rule as
 * capacity/makespan.ts drainHistory: ended Evictions that recorded a
 * prediction, here those that ended before this drain started).
 *
 * @example
 * ```ts
 * import { comparePredictions } from "./summary.ts";
 * const [row] = comparePredictions([{ spec: { hypervisor: "n1" }, status: {
 *   startedAt: "2026-01-01T00:00:00Z", finishedAt: "2026-01-01T00:00:40Z",
 *   predictedMakespanSeconds: 50 } }]);
 * console.assert(row?.error === 0.25 && row.history === 0);
 * ```
 */
export function comparePredictions(
  evictions: readonly PredictedDrain[],
): PredictionRow[] {
  const startOf = (e: PredictedDrain) => Date.parse(e.status?.startedAt ?? "");
  return evictions.map((e) => {
    const started = startOf(e);
    const ended = drainEndMs(e.status);
    const predicted = e.status?.predictedMakespanSeconds;
    const actual = ended !== undefined && ended > started
      ? (ended - started) / 1000
      : undefined;
    const history = evictions.filter((o) => {
      const end = drainEndMs(o.status);
      return o !== e && o.status?.predictedMakespanSeconds !== undefined &&
        end !== undefined && startOf(o) < end && end <= started;
    }).length;
    return {
      host: e.spec.hypervisor,
      predictedSeconds: predicted,
      actualSeconds: actual,
      error: predicted === undefined || actual === undefined
        ? undefined
        : (predicted - actual) / actual,
      history,
    };
  });
}

/**
 * The worst absolute prediction error among the drains, or undefined when
 * none has both a prediction and an end.
 *
 * @example
 * ```ts
 * import { worstError } from "./summary.ts";
 * console.assert(worstError([
 *   { host: "a", predictedSeconds: 9, actualSeconds: 10, error: -0.1, history: 1 },
 *   { host: "b", predictedSeconds: 12, actualSeconds: 10, error: 0.2, history: 0 },
 * ])?.host === "b");
 * ```
 */
export function worstError(
  rows: readonly PredictionRow[],
): PredictionRow | undefined {
  let worst: PredictionRow | undefined;
  for (const r of rows) {
    if (r.error === undefined) continue;
    if (worst === undefined || Math.abs(r.error) > Math.abs(worst.error ?? 0)) {
      worst = r;
    }
  }
  return worst;
}

/**
 * One host's figures, computed once for the closing table: the migrations
 * (retried, failed at the end), its makespan (startedAt to the drain's end
 * on evictor's clock, as predicted; the migration records' span while the
 * drain has no end), the lower bound no schedule beats (seconds on
 * evictor's clock), the prediction and its error.
 */
export interface HostFigures extends DrainSummaryRow {
  predictedSeconds: number | undefined;
  /** (predicted - makespan) / makespan. */
  error: number | undefined;
  /** Ended drains the prediction learned from (0: the defaults). */
  history: number;
}

/**
 * Joins each drain's summary row (cloud's records) with its prediction row
 * (its Eviction) into one record per host, on evictor's clock: the
 * records' seconds divided by `timeScale` (the simulator's virtual time
 * runs faster; 1 for a real cloud).
 *
 * @example
 * ```ts
 * import { hostFigures } from "./summary.ts";
 * const [f] = hostFigures(
 *   [{ host: "n1", how: "x", limit: 1, migrations: 1, retried: 0, failures: 0,
 *      makespanSeconds: 200, lowerBoundSeconds: 180, ratio: 1.1 }],
 *   [{ host: "n1", predictedSeconds: 12, actualSeconds: 10, error: 0.2, history: 0 }],
 *   20,
 * );
 * console.log(f?.makespanSeconds, f?.lowerBoundSeconds); // 10 9
 * ```
 */
export function hostFigures(
  rows: readonly DrainSummaryRow[],
  predictions: readonly PredictionRow[],
  timeScale = 1,
): HostFigures[] {
  if (!(timeScale > 0)) {
    throw new RangeError(`timeScale must be > 0, got ${timeScale}`);
  }
  return rows.map((r) => {
    const p = predictions.find((x) => x.host === r.host);
    const makespan = p?.actualSeconds ?? r.makespanSeconds / timeScale;
    const lowerBound = r.lowerBoundSeconds / timeScale;
    const predicted = p?.predictedSeconds;
    return {
      host: r.host,
      how: r.how,
      limit: r.limit,
      migrations: r.migrations,
      retried: r.retried,
      failures: r.failures,
      makespanSeconds: makespan,
      lowerBoundSeconds: lowerBound,
      ratio: lowerBound === 0 ? 1 : makespan / lowerBound,
      predictedSeconds: predicted,
      error: predicted === undefined || makespan === 0
        ? undefined
        : (predicted - makespan) / makespan,
      history: p?.history ?? 0,
    };
  });
}

/**
 * The closing table, one line per host (one makespan and one lower bound
 * each), the note on times and calls, and the worst prediction error.
 *
 * @example
 * ```ts
 * import { renderHosts } from "./summary.ts";
 * console.log(renderHosts([], { total: 0, drain: 0 }, 0));
 * ```
 */
export function renderHosts(
  figures: readonly HostFigures[],
  calls: { total: number; drain: number },
  migrated: number,
  style: Pick<SummaryStyle, "note"> = {},
): string {
  const header = [
    "HOST",
    "DRAINED BY",
    "LIMIT",
    "MIGRATIONS",
    "RETRIED",
    "FAILED",
    "LOWER BOUND",
    "MAKESPAN",
    "RATIO",
    "PREDICTED",
    "ERROR",
    "PREDICTED FROM",
  ];
  const secs = (s: number | undefined) =>
    s === undefined ? "-" : `${s.toFixed(1)} s`;
  const pct = (e: number | undefined) =>
    e === undefined ? "-" : `${e >= 0 ? "+" : ""}${(e * 100).toFixed(0)}%`;
  const body = figures.map((f) => [
    f.host,
    f.how,
    String(f.limit),
    String(f.migrations),
    String(f.retried),
    String(f.failures),
    secs(f.lowerBoundSeconds),
    secs(f.makespanSeconds),
    f.ratio.toFixed(2),
    secs(f.predictedSeconds),
    pct(f.error),
    f.history === 0
      ? "the defaults (no ended drain)"
      : `${f.history} ended drain${f.history === 1 ? "" : "s"}`,
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((r) => (r[i] ?? "").length))
  );
  const table = [header, ...body].map((r) =>
    r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd()
  ).join("\n");
  const perVm = migrated === 0 ? "-" : (calls.drain / migrated).toFixed(2);
  let worst: HostFigures | undefined;
  for (const f of figures) {
    if (f.error === undefined) continue;
    if (worst === undefined || Math.abs(f.error) > Math.abs(worst.error ?? 0)) {
      worst = f;
    }
  }
  const line = worst === undefined
    ? "No drain has both a prediction and an end."
    : `Worst prediction error: ${pct(worst.error)} (${worst.host}).`;
  return `${table}\n\n${(style.note ?? SIMULATOR_NOTE)(calls, perVm)}\n${line}`;
}

/** What {@linkcode summariseWave} reads. */
export interface WaveInput {
  /** The wave's hosts. */
  hosts: readonly string[];
  /** Every migration of the run. */
  migrations: readonly MigrationRecord[];
  /** VMs the wave's drains migrated (their status.migratedCount). */
  migrated: number;
  /** Nova calls of the drains while the wave ran. */
  novaCalls: number;
  /** The cluster budget. */
  budget: number;
  /** The most migrations the drains had in flight at once (sampled). */
  budgetPeak: number;
}

/** The wave's figures. */
export interface WaveSummary {
  hosts: readonly string[];
  /** VMs with more than one completed migration in the whole run. */
  movedTwice: string[];
  budget: number;
  budgetPeak: number;
  migrated: number;
  novaCallsPerVm: number | undefined;
}

/**
 * The wave's figures: VMs moved more than once (a VM placed on a host
 * that was drained after it would be), the budget's peak, Nova calls per
 * migrated VM.
 *
 * @example
 * ```ts
 * import { summariseWave } from "./summary.ts";
 * const m = { source: "a", type: "live-migration", status: "completed", createdAt: 0, updatedAt: 1, copyMs: 1 };
 * const w = summariseWave({ hosts: ["a"], migrations: [{ ...m, serverId: "x" }, { ...m, serverId: "x", source: "b" }],
 *   migrated: 1, novaCalls: 3, budget: 2, budgetPeak: 1 });
 * console.assert(w.movedTwice[0] === "x" && w.novaCallsPerVm === 3);
 * ```
 */
export function summariseWave(input: WaveInput): WaveSummary {
  const moves = new Map<string, number>();
  for (const m of input.migrations) {
    if (SUCCEEDED.has(m.status)) {
      moves.set(m.serverId, (moves.get(m.serverId) ?? 0) + 1);
    }
  }
  return {
    hosts: input.hosts,
    movedTwice: [...moves].filter(([, n]) => n > 1).map(([id]) => id).sort(),
    budget: input.budget,
    budgetPeak: input.budgetPeak,
    migrated: input.migrated,
    novaCallsPerVm: input.migrated === 0
      ? undefined
      : input.novaCalls / input.migrated,
  };
}

/**
 * The wave's figures as lines of text.
 *
 * @example
 * ```ts
 * import { renderWave } from "./summary.ts";
 * console.log(renderWave({ hosts: ["a", "b"], movedTwice: [], budget: 5,
 *   budgetPeak: 5, migrated: 10, novaCallsPerVm: 2.5 }));
 * ```
 */
export function renderWave(w: WaveSummary, sampledEveryMs = 20): string {
  return [
    `The wave (${w.hosts.join(", ")}, ${w.migrated} VMs migrated):`,
    `  VMs moved more than once in the whole run: ${w.movedTwice.length}${
      w.movedTwice.length === 0 ? "" : ` (${w.movedTwice.join(", ")})`
    }`,
    `  most migrations in flight at once (sampled every ${sampledEveryMs} ms): ${w.budgetPeak}, cluster budget ${w.budget}`,
    `  Nova calls of the drains per migrated VM while it ran: ${
      w.novaCallsPerVm === undefined ? "-" : w.novaCallsPerVm.toFixed(2)
    }`,
  ].join("\n");
}

/** The sum of a Prometheus counter's series in `/metrics` text, by label filter. */
function counterSum(metrics: string, name: string, label = ""): number {
  let sum = 0;
  for (const line of metrics.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== "{" && rest[0] !== " ") continue;
    if (label !== "" && !rest.includes(label)) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}

/**
 * The summary's line on how the drains learned of Nova's changes: from
 * its notifications (how many arrived, how many passes planned from a
 * host's notified view against those that read Nova, how many VMs a relist
 * found the view wrong about), or by polling and why. `metrics` is the
 * operator's `/metrics` text (empty when it could not be read).
 *
 * @example
 * ```ts
 * import { renderNotifications } from "./summary.ts";
 * const text = renderNotifications({ url: "amqp://x", where: "RabbitMQ" }, [
 *   'evictor_nova_notifications_received_total{event_type="instance.update"} 7',
 *   'evictor_drain_looks_total{source="view"} 5',
 *   'evictor_drain_looks_total{source="nova"} 3',
 * ].join("\n"));
 * console.assert(text.includes("7 notifications"));
 * ```
 */
export function renderNotifications(
  notifications: { url: string; where: string } | { polling: string },
  metrics: string,
): string {
  if (!("url" in notifications)) {
    return `Nova's notifications: off, the drains polled (${notifications.polling})`;
  }
  if (metrics === "") {
    return `Nova's notifications: on (${notifications.where}); the operator's /metrics could not be read`;
  }
  const received = counterSum(
    metrics,
    "evictor_nova_notifications_received_total",
  );
  const fromView = counterSum(
    metrics,
    "evictor_drain_looks_total",
    'source="view"',
  );
  const fromNova = counterSum(
    metrics,
    "evictor_drain_looks_total",
    'source="nova"',
  );
  const diffs = counterSum(metrics, "evictor_notification_view_diffs_total");
  return [
    `Nova's notifications: on (${notifications.where}): ${received} notifications received;`,
    `  ${fromView} drain passes planned from a host's notified view, ${fromNova} read Nova afresh;`,
    `  VMs a relist found the view wrong about: ${diffs}`,
  ].join("\n");
}
