/**
 * `kubectl evictor status -o wide`'s second table: one row per copy in
 * flight (status.inFlight) with its progress as the controller last read
 * it from Nova: copied, remaining of total, rate, ETA, whether it
 * converges and when its policy acts. Read from the objects as the API
 * server sent them; a field the status does not carry is `-`.
 *
 * @module
 */
import { ageSince } from "./age.ts";
import { formatSeconds } from "./duration.ts";

/** One copy in flight as status.inFlight gives it (fields may be absent). */
interface InFlightSeen {
  id?: unknown;
  kind?: unknown;
  startedAt?: unknown;
  memoryProcessedPercent?: unknown;
  memoryTotalBytes?: unknown;
  memoryRemainingBytes?: unknown;
  bytesPerSecond?: unknown;
  etaSeconds?: unknown;
  notConverging?: unknown;
  deadlineAt?: unknown;
  forceCompleteSentAt?: unknown;
}

/** The header of the copies table. */
export const COPY_HEADER: readonly string[] = [
  "EVICTION",
  "VM",
  "KIND",
  "AGE",
  "COPIED",
  "REMAINING",
  "RATE",
  "ETA",
  "CONVERGING",
  "DEADLINE",
];

const num = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;

/**
 * Bytes in binary units, one decimal from KiB on.
 *
 * @example
 * ```ts
 * import { formatBytes } from "./copy_progress.ts";
 * console.log(formatBytes(3 * 1024 ** 3 / 2)); // 1.5 GiB
 * ```
 */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** A time relative to now: `in 4m05s`, `4m05s ago`. */
function relative(iso: unknown, nowMs: number): string {
  const ms = typeof iso === "string" ? Date.parse(iso) : NaN;
  if (Number.isNaN(ms)) return "-";
  const s = (ms - nowMs) / 1000;
  return s >= 0 ? `in ${formatSeconds(s)}` : `${formatSeconds(-s)} ago`;
}

/**
 * The cells of one copy in flight.
 *
 * @example
 * ```ts
 * import { copyCells } from "./copy_progress.ts";
 * const c = copyCells("n1", { id: "vm", kind: "live", memoryTotalBytes: 4 * 1024 ** 3, memoryRemainingBytes: 1024 ** 3 }, 0);
 * console.log(c[4], c[5]); // 75% 1.0 GiB of 4.0 GiB
 * ```
 */
export function copyCells(
  eviction: string,
  f: InFlightSeen,
  nowMs: number,
): string[] {
  const total = num(f.memoryTotalBytes);
  const remaining = num(f.memoryRemainingBytes);
  const processed = num(f.memoryProcessedPercent);
  const copied = total !== undefined && total > 0 && remaining !== undefined
    ? `${Math.floor(100 * Math.max(0, 1 - remaining / total))}%`
    : processed !== undefined
    ? `${processed}%`
    : "-";
  const rate = num(f.bytesPerSecond);
  const eta = num(f.etaSeconds);
  const converging = f.notConverging === true
    ? f.forceCompleteSentAt === undefined ? "no" : "no (force-completed)"
    : f.notConverging === false
    ? "yes"
    : "-";
  return [
    eviction,
    typeof f.id === "string" ? f.id : "-",
    typeof f.kind === "string" ? f.kind : "-",
    typeof f.startedAt === "string" ? ageSince(f.startedAt, nowMs) : "-",
    copied,
    remaining === undefined
      ? "-"
      : total === undefined
      ? formatBytes(remaining)
      : `${formatBytes(remaining)} of ${formatBytes(total)}`,
    rate === undefined ? "-" : `${formatBytes(rate)}/s`,
    eta === undefined ? "-" : formatSeconds(eta),
    converging,
    relative(f.deadlineAt, nowMs),
  ];
}

/**
 * The rows (header first) of every copy in flight of the raw Eviction
 * objects, by Eviction then VM; only the header when there is none.
 *
 * @example
 * ```ts
 * import { copyRows } from "./copy_progress.ts";
 * console.log(copyRows([], 0).length); // 1
 * ```
 */
export function copyRows(
  raws: readonly Record<string, unknown>[],
  nowMs: number,
): string[][] {
  const rows: string[][] = [];
  for (const raw of raws) {
    const name = (raw["metadata"] as { name?: unknown } | undefined)?.name;
    const status = raw["status"] as { inFlight?: unknown } | undefined;
    const items = Array.isArray(status?.inFlight) ? status.inFlight : [];
    for (const f of items) {
      if (typeof f !== "object" || f === null) continue;
      rows.push(copyCells(typeof name === "string" ? name : "-", f, nowMs));
    }
  }
  rows.sort((a, b) =>
    (a[0] ?? "").localeCompare(b[0] ?? "") ||
    (a[1] ?? "").localeCompare(b[1] ?? "")
  );
  return [[...COPY_HEADER], ...rows];
}
