/**
 * Follows drains until they end (`drain --wait`, `wait`): one watch of the
 * Evictions (cli/eviction_watch.ts) for all the hosts and one deadline for
 * all of them, as `kubectl wait` has; progress on stderr, each end on
 * stdout, the exit code of the worst.
 *
 * @module
 */
import type * as k8s from "@kubernetes/client-node";
import {
  type Eviction,
  EvictionResource,
  EvictionSchema,
} from "../models/mod.ts";
import { type EvictionChange, watchWithin } from "./eviction_watch.ts";
import { endReport, progressLine, timeoutLine } from "./follow_report.ts";
import { ProgressLines } from "./progress.ts";

/** Where following writes. */
export interface FollowIo {
  /** Standard output: how each drain ended. */
  out: (line: string) => void;
  /** Standard error: progress and `error:` lines. */
  err: (line: string) => void;
  /** Rewrites the current line (a TTY) instead of adding one. */
  interactive: boolean;
}

/**
 * Follows the Evictions `names` until each drain ended, one was deleted,
 * or `timeoutMs` (0: never) passed for all of them together. Returns 0
 * when every host was drained, else 1 (a name with no Eviction, a drain
 * that stopped for a person or drained nothing, a deletion, the deadline).
 *
 * @example
 * ```ts ignore
 * const code = await followEvictions(kc, api, ["node042", "node043"], 300_000, io);
 * ```
 */
export async function followEvictions(
  kc: k8s.KubeConfig,
  api: k8s.CustomObjectsApi,
  names: readonly string[],
  timeoutMs: number,
  io: FollowIo,
): Promise<number> {
  const pending = new Set(names);
  const latest = new Map<string, Eviction>();
  // one host on a terminal: its line is rewritten in place
  const inPlace = io.interactive && names.length === 1;
  const progress = new ProgressLines(io.err, inPlace);
  let code = 0;
  let failure: unknown;
  const stop = new AbortController();
  const settle = () => {
    if (pending.size === 0) stop.abort();
  };
  const onListed = (listed: ReadonlySet<string>) => {
    if (latest.size > 0) return; // a relist: the names were there before
    for (const name of names) {
      if (!listed.has(name) && pending.delete(name)) {
        io.err(
          `error: no Eviction "${name}" (see kubectl evictor status for the names)`,
        );
        code = 1;
      }
    }
    settle();
  };
  const onChange = ({ type, object }: EvictionChange) => {
    const name = (object["metadata"] as { name?: string } | undefined)?.name;
    if (name === undefined || !pending.has(name)) return;
    if (type === "DELETED") {
      pending.delete(name);
      code = 1;
      io.err(
        `${progress.end}error: eviction.${EvictionResource.group}/${name} was deleted before its drain ended`,
      );
      settle();
      return;
    }
    const parsed = EvictionSchema.safeParse(object);
    if (!parsed.success) {
      failure = parsed.error;
      stop.abort();
      return;
    }
    const e = parsed.data;
    latest.set(name, e);
    progress.show(name, progressLine(name, e));
    const end = endReport(name, e, Date.now());
    if (end === undefined) return;
    pending.delete(name);
    code = Math.max(code, end.code);
    io.out(`${inPlace ? "\n" : ""}${end.lines.join("\n")}`);
    settle();
  };
  const timedOut = pending.size > 0 &&
    await watchWithin(kc, api, onChange, stop, timeoutMs, onListed);
  if (failure !== undefined) throw failure;
  if (timedOut && pending.size > 0) {
    const late = names.filter((n) => pending.has(n)).map((name) =>
      timeoutLine(name, latest.get(name), timeoutMs)
    );
    io.err(`${progress.end}${late.join("\n")}`);
    code = 1;
  }
  return code;
}
