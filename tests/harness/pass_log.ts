/**
 * The operator's passes, read from its log (`--log-level=debug`: the
 * framework writes one `reconciled` line per pass, with the object's key
 * and the wait the pass asked for). Tests that bound how soon the operator
 * acts count its passes and read its asked-for waits here instead of wall
 * seconds, which stretch on a loaded machine without any defect.
 *
 * @module
 */

/** One pass of the operator over one object. */
export interface PassLine {
  /** When it ended (ms, the operator's clock: the machine's). */
  atMs: number;
  /** The object's key (a cluster-scoped object's name). */
  key: string;
  /** The wait it asked for before the next pass, if any. */
  requeueAfterMs: number | undefined;
}

/**
 * The passes over `key` in an operator's JSON log, oldest first.
 *
 * @example
 * ```ts
 * import { passesOf } from "./pass_log.ts";
 * const log = '{"time":"2026-01-01T00:00:01.000Z","key":"node001","msg":"reconciled","requeueAfterMs":1000}\n';
 * console.log(passesOf(log, "node001")[0]?.requeueAfterMs); // 1000
 * ```
 */
export function passesOf(log: string, key: string): PassLine[] {
  const out: PassLine[] = [];
  for (const o of linesWith(log, "reconciled")) {
    if (o["key"] !== key) continue;
    const atMs = Date.parse(String(o["time"]));
    if (Number.isNaN(atMs)) continue;
    const wait = o["requeueAfterMs"];
    out.push({
      atMs,
      key,
      requeueAfterMs: typeof wait === "number" ? wait : undefined,
    });
  }
  return out;
}

/** The passes that ended after `afterMs`. */
export function passesAfter(
  passes: readonly PassLine[],
  afterMs: number,
): PassLine[] {
  return passes.filter((p) => p.atMs > afterMs);
}

/** The last pass that ended at or before `atMs`, if any. */
export function lastPassBy(
  passes: readonly PassLine[],
  atMs: number,
): PassLine | undefined {
  return passes.filter((p) => p.atMs <= atMs).at(-1);
}

/**
 * Waits until `check` (a read of the object) shows what the test waits
 * for, and fails if `passes` passes over `key` ended after `afterMs`
 * without it. The log is read before the object, so every pass counted had
 * written its status by then (the framework logs a pass after its handler
 * returned). Resolves with the most passes it can have taken; rejects with
 * `describe()` when it took more, or when the operator did not pass that
 * often within `timeoutMs` (a stopped operator).
 */
export async function withinPasses(
  log: () => Promise<string>,
  key: string,
  afterMs: number,
  passes: number,
  check: () => Promise<boolean>,
  options: { timeoutMs: number; describe: () => Promise<string> },
): Promise<number> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const ended = passesAfter(passesOf(await log(), key), afterMs).length;
    if (await check()) return Math.min(ended + 1, passes);
    if (ended >= passes) {
      throw new Error(
        `not shown after ${ended} passes over ${key} (expected within ${passes})\n${await options
          .describe()}`,
      );
    }
    if (Date.now() > deadline) {
      throw new Error(
        `only ${ended} passes over ${key} within ${options.timeoutMs} ms\n${await options
          .describe()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * When the operator sent its last live migration of server `id` (ms, its
 * clock): the client's debug line for the call, less the call's duration.
 *
 * @example
 * ```ts
 * import { liveMigrateSentAt } from "./pass_log.ts";
 * const log = '{"time":"2026-01-01T00:00:01.500Z","action":"nova.liveMigrate","url":"http://n/v2.1/servers/a/action","durationMs":500,"msg":"OpenStack call"}\n';
 * console.log(liveMigrateSentAt(log, "a")); // 1767225601000
 * ```
 */
export function liveMigrateSentAt(
  log: string,
  id: string,
): number | undefined {
  let sent: number | undefined;
  for (const o of linesWith(log, "OpenStack call")) {
    if (o["action"] !== "nova.liveMigrate") continue;
    if (!String(o["url"]).includes(`/servers/${id}/action`)) continue;
    const at = Date.parse(String(o["time"]));
    const took = typeof o["durationMs"] === "number" ? o["durationMs"] : 0;
    if (!Number.isNaN(at)) sent = at - took;
  }
  return sent;
}

/**
 * The operator's OpenStack calls whose URL names `text` (e.g. `host=node001`),
 * ended within [`fromMs`, `toMs`] (its clock).
 *
 * @example
 * ```ts
 * import { callsNaming } from "./pass_log.ts";
 * const log = '{"time":"2026-01-01T00:00:01.500Z","url":"http://n/v2.1/os-migrations?host=h","msg":"OpenStack call"}\n';
 * console.log(callsNaming(log, "host=h", 0, Infinity)); // 1
 * ```
 */
export function callsNaming(
  log: string,
  text: string,
  fromMs: number,
  toMs: number,
): number {
  let n = 0;
  for (const o of linesWith(log, "OpenStack call")) {
    const at = Date.parse(String(o["time"]));
    if (String(o["url"]).includes(text) && at >= fromMs && at <= toMs) n++;
  }
  return n;
}

/**
 * The passes among `passes` that came before the wait the pass before
 * them asked for was over: woken by something, not by their own pacing.
 */
export function wokenEarly(passes: readonly PassLine[]): PassLine[] {
  return passes.filter((p, i) => {
    const prev = passes[i - 1];
    return prev?.requeueAfterMs !== undefined &&
      p.atMs < prev.atMs + prev.requeueAfterMs;
  });
}

/** The JSON lines of `log` whose message is `msg` (a line cut by the read is skipped). */
function* linesWith(
  log: string,
  msg: string,
): Generator<Record<string, unknown>> {
  for (const line of log.split("\n")) {
    if (!line.includes(`"${msg}"`)) continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line);
    } catch {
      continue;
    }
    if (o["msg"] === msg) yield o;
  }
}
