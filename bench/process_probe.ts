/**
 * What a benchmark reads from the measured process: its CPU time (Linux
 * /proc) and the bucket counts of a Prometheus histogram it exports.
 *
 * @module
 */

// USER_HZ: the unit of utime and stime in /proc/<pid>/stat on Linux
const TICKS_PER_SECOND = 100;

/**
 * User plus system CPU time of process `pid` in ms (Linux only), read from
 * /proc/<pid>/stat (10 ms resolution).
 */
export async function processCpuMs(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  // the command name (field 2) may hold spaces: count fields after its ")"
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) {
    throw new TypeError(`unexpected /proc/${pid}/stat: "${stat.slice(0, 80)}"`);
  }
  return (utime + stime) * 1000 / TICKS_PER_SECOND;
}

/**
 * The cumulative bucket counts of histogram `name` in Prometheus text
 * exposition, summed over all label sets: upper bound (`le`) to count.
 *
 * @example
 * ```ts
 * import { histogramBuckets } from "./process_probe.ts";
 * const text = 'x_bucket{le="0.001",path="/a"} 3\nx_bucket{le="0.001",path="/b"} 2\nx_bucket{le="+Inf",path="/a"} 4\n';
 * const b = histogramBuckets(text, "x");
 * console.assert(b.get("0.001") === 5 && b.get("+Inf") === 4);
 * ```
 */
export function histogramBuckets(
  text: string,
  name: string,
): Map<string, number> {
  const out = new Map<string, number>();
  const prefix = `${name}_bucket{`;
  for (const line of text.split("\n")) {
    if (!line.startsWith(prefix)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    const count = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (le === undefined || !Number.isFinite(count)) continue;
    out.set(le, (out.get(le) ?? 0) + count);
  }
  return out;
}
