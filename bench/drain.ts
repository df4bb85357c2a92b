/**
 * Drain benchmark (task `bench:drain`; `bench:issue38` runs it and
 * `bench:wave`): the eviction controller in an in-process operator
 * against a real API server and the time-scaled Nova simulator. 200 VMs
 * with RAM-proportional migration times are drained at our limits 1, 4
 * and 8 with Nova's per-host limit 1 and 8, once at limit 4 / Nova 8 with
 * the answer to one VM's start delayed 30 simulated seconds, and a host of
 * 40 VMs of mixed sizes (2-64 GiB, `:mixed`) at our limit 4 with Nova's
 * limit 1 and 8. Reports the makespan, its lower bound, their ratio, the
 * Nova API calls per migrated VM (against the report it replaces) and the
 * VMs migrated twice, each configuration in both modes: polling, and
 * driven by Nova's notifications (issue 23; the simulator's events through
 * an in-process feed), judged by drain_targets.ts; prints the report and
 * writes bench/reports/drain.md and bench/reports/drain.json. A drain counts
 * as done when `kubectl evictor drain --wait` would say so (a settled
 * Succeeded). Not a test: nothing here fails on a number.
 *
 * A configuration with `:ncP` (e.g. `4x8:nc10`) gives P % of the VMs a dirty
 * rate 1.5 times the copy rate (they never converge) and applies an
 * EvictionPolicy whose `convergence` acts on them with each `--on-timeout`
 * (Report, Abort, ForceComplete); its row gives the makespan against a
 * lower bound that counts the policy's bound as each such VM's time, the
 * slot time their copies held and the worst held past its bound
 * (bench/convergence.ts). A run whose slots are all held by such copies
 * past their bound (Report's end) stops there as `stalled`.
 *
 * Each configuration has a deadline (`--deadline-s`, real seconds, 600 by
 * default): past it the run fails with what was pending (the phase, the
 * Eviction's status, the simulator's migrations, the operator's last log
 * lines), so a benchmark never hangs silently. `--trace DIR` writes, per
 * run, every Nova call with the code that made it (call_sites.ts).
 *
 * Usage: deno run -A bench/drain.ts [--vms N] [--time-scale N] [--poll-interval-ms N]
 *   [--configs 4x8,8x8,1x8,4x1,8x1,1x1,4x8+delay30,4x1:mixed,4x8:mixed]
 *   [--modes polling,notifications] [--deadline-s 600] [--mixed-vms 40]
 *   [--baseline git:HEAD|FILE] [--trace DIR]
 *   [--on-timeout Report,Abort,ForceComplete] [--progress-interval-s 30]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { drainOutcome } from "../cli/kubectl_plugin.ts";
import { startEnvtest } from "../tests/harness/envtest.ts";
import {
  type DrainEnv,
  migratedTwice,
  startDrainEnv,
  waitFor,
} from "../tests/harness/eviction_env.ts";
import type { ScenarioInput } from "../tests/harness/nova_sim/mod.ts";
import { type Mode, parseModes } from "./modes.ts";
import { callsByRoute, totalCalls } from "./calls.ts";
import { type SlotGaps, slotGaps } from "./slot_gaps.ts";
import { bySite, type TracedCall, traceFetch } from "./call_sites.ts";
import { deadlineMs, withDeadline, within } from "./deadline.ts";
import {
  baselineOf,
  configName,
  drainTargets,
  type HostKind,
  type RunFigures,
} from "./drain_targets.ts";
import {
  benchConvergence,
  convergenceTargets,
  heldSlots,
  lowerBoundMs,
  NON_CONVERGING_DIRTY_FACTOR,
  nonConvergingIndices,
  nonConvergingTime,
  parseOnTimeouts,
  policyBoundSeconds,
  stalled,
  type VmTime,
} from "./convergence.ts";
import type { OnTimeout } from "../limits/convergence.ts";
import type { EvictionPolicySpec } from "../models/mod.ts";
import { EvictionPolicyKind } from "../controllers/kinds.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    vms: { type: "string", default: "200" },
    // VMs on the mixed host (":mixed" configurations)
    "mixed-vms": { type: "string", default: "40" },
    // the report the targets compare calls per VM with: a file, or
    // git:REV for the committed one (read before this run overwrites it;
    // a rerun with fewer --configs does not become the next one's baseline)
    baseline: { type: "string", default: "git:HEAD" },
    // simulated seconds per real second: 10 at our limit 1, 40 where only
    // Nova's limit is 1, 5 otherwise (see scaleFor and the report)
    "time-scale": { type: "string" },
    // --poll-interval's default (2 s), in simulator time
    "poll-interval-ms": { type: "string", default: "2000" },
    out: { type: "string", default: "bench/reports/drain.md" },
    json: { type: "string", default: "bench/reports/drain.json" },
    // our limit x Nova's limit, comma-separated; "+delayS" delays the answer
    // to one VM's start by S simulated seconds; ":mixed" drains the mixed host
    configs: {
      type: "string",
      default: "4x8,8x8,1x8,4x1,8x1,1x1,4x8+delay30,4x1:mixed,4x8:mixed",
    },
    modes: { type: "string", default: "polling,notifications" },
    // real seconds one configuration may take (the longest takes ~200 s)
    "deadline-s": { type: "string", default: "600" },
    // a directory: each run's Nova calls with the code that made them, the
    // migrations and the operator's log (where the calls go, and why)
    trace: { type: "string" },
    // the EvictionPolicy's convergence.onTimeout of ":ncP" configurations,
    // comma-separated: each such configuration runs once per entry
    "on-timeout": { type: "string", default: "Report" },
    // the operator's progress interval (s): the slack past a policy's bound
    // the targets allow, and the wait before a run counts as stalled
    "progress-interval-s": { type: "string", default: "30" },
  },
});
const ON_TIMEOUTS = parseOnTimeouts(values["on-timeout"]);
const PROGRESS_INTERVAL_S = Number(values["progress-interval-s"]);
if (!(PROGRESS_INTERVAL_S > 0)) {
  throw new RangeError(
    `--progress-interval-s must be > 0, got ${values["progress-interval-s"]}`,
  );
}
const MODES = parseModes(values.modes);
const VMS = Number(values.vms);
const MIXED_VMS = Number(values["mixed-vms"]);
const FIXED_SCALE = values["time-scale"] === undefined
  ? undefined
  : Number(values["time-scale"]);
const POLL_VIRTUAL_MS = Number(values["poll-interval-ms"]);
const DEADLINE_MS = deadlineMs(values["deadline-s"]);
if (!(VMS > 0)) throw new RangeError(`--vms must be > 0, got ${VMS}`);
if (!(MIXED_VMS > 0)) {
  throw new RangeError(`--mixed-vms must be > 0, got ${values["mixed-vms"]}`);
}
/** The report this run replaces (read now: the run overwrites it), if any. */
const BASELINE = await readBaseline(values.baseline);

if (FIXED_SCALE !== undefined && !(FIXED_SCALE > 0)) {
  throw new RangeError(`--time-scale must be > 0, got ${FIXED_SCALE}`);
}

/** The calls of the run under way, with their sites (`--trace`). */
const traced: { prefix: string | undefined; calls: TracedCall[] } = {
  prefix: undefined,
  calls: [],
};
if (values.trace !== undefined) {
  await Deno.mkdir(values.trace, { recursive: true });
  traceFetch(
    () => traced.prefix === undefined ? [] : [traced.prefix],
    (c) => traced.calls.push(c),
    new URL("../", import.meta.url).href,
    [
      "bench/",
      "openstack/http.ts",
      "openstack/keystone.ts",
      "openstack/nova.ts",
    ],
  );
}

/**
 * The report at `source` (a file, or `git:REV` for bench/reports/drain.json
 * as committed at REV, whatever `--json` writes), or undefined when there
 * is none; one line naming it when it is not JSON.
 */
async function readBaseline(
  source: string,
): Promise<{ report: unknown; path: string } | undefined> {
  let text: string;
  let path = source;
  if (source.startsWith("git:")) {
    path = `${source.slice(4)}:bench/reports/drain.json`;
    const out = await new Deno.Command("git", {
      args: ["show", path],
      stdout: "piped",
      stderr: "null",
    }).output().catch(() => undefined);
    if (out?.success !== true) return undefined;
    text = new TextDecoder().decode(out.stdout);
  } else {
    const read = await Deno.readTextFile(source).catch(() => undefined);
    if (read === undefined) return undefined;
    text = read;
  }
  try {
    return { report: JSON.parse(text), path };
  } catch (err) {
    throw new SyntaxError(`--baseline ${source}: not a JSON report: ${err}`);
  }
}

/**
 * The time scale of a run: runs short enough in real time, the operator's
 * own latency small in simulated time. Our limit 1 (one slot, the ratio
 * target applies): 10x; at 40x the operator's real latency per pass (some
 * tens of ms) would count as a simulated second per migration, a tenth of
 * one, which a real cloud does not impose. Only Nova's limit 1: 40x (Nova's
 * queue keeps the host busy whatever our latency; at 5x such a run takes
 * over six real minutes). 5x otherwise.
 */
function scaleFor(limit: number, novaLimit: number): number {
  if (FIXED_SCALE !== undefined) return FIXED_SCALE;
  if (limit === 1) return 10;
  return novaLimit === 1 ? 40 : 5;
}

/** The hosts drained: flavor sizes (cycled; migration time is proportional to RAM) and VMs. */
const HOSTS: Record<HostKind, { ramMb: readonly number[]; vms: number }> = {
  uniform: { ramMb: [1024, 2048, 4096, 8192, 16384], vms: VMS },
  // 2-64 GiB: one copy may take 30 times another's
  mixed: { ramMb: [2048, 4096, 8192, 16384, 32768, 65536], vms: MIXED_VMS },
};
const TIMING = {
  liveMbPerSecond: 1000,
  coldMbPerSecond: 500,
  jitter: 0.1,
  scheduleSeconds: 0.5,
  // the conductor writes a live migration's record this long after the
  // 202, then schedules it (real Zed: 0.08-0.35 s)
  recordDelaySeconds: 0.2,
  prepareSeconds: 2,
  // cold migrations only: a live one completes liveCompleteSeconds after
  // the server is ACTIVE on its destination (as real Zed does)
  postSeconds: 1,
  liveCompleteSeconds: 0.3,
};

/** One configuration: our limit, Nova's, a delayed start answer, the host. */
interface Config {
  limit: number;
  novaLimit: number;
  /** Simulated seconds the answer to one start is late (0: none). */
  delayS: number;
  hostKind: HostKind;
  /** Percent of the VMs that do not converge (0: none). */
  ncPercent: number;
  /** The policy's onTimeout (runs with non-converging VMs). */
  onTimeout: OnTimeout;
}

function parseConfig(text: string): Omit<Config, "onTimeout"> {
  const m =
    /^(\d+)x(\d+)(?:\+delay(\d+(?:\.\d+)?))?(?::(uniform|mixed))?(?::nc(\d+))?$/
      .exec(text.trim());
  if (
    m === null || Number(m[1]) < 1 || Number(m[2]) < 1 ||
    (m[5] !== undefined && !(Number(m[5]) >= 1 && Number(m[5]) <= 100))
  ) {
    throw new RangeError(
      `--configs entries are LIMITxNOVA[+delaySECONDS][:mixed][:ncPERCENT] (e.g. 4x8+delay30, 4x1:mixed, 4x8:nc10; PERCENT 1-100), got "${text}"`,
    );
  }
  return {
    limit: Number(m[1]),
    novaLimit: Number(m[2]),
    delayS: m[3] === undefined ? 0 : Number(m[3]),
    hostKind: m[4] === "mixed" ? "mixed" : "uniform",
    ncPercent: m[5] === undefined ? 0 : Number(m[5]),
  };
}

/** What a run with non-converging VMs shows (issue 39). */
interface NcFigures {
  percent: number;
  onTimeout: OnTimeout;
  /** Non-converging VMs. */
  vms: number;
  /** Slot time their copies held, simulated s. */
  heldS: number;
  /** The longest any held past its policy's bound, simulated s. */
  worstPastBoundS: number;
  worstVm: string | undefined;
  /** Succeeded, left N for a person, or stalled with N VMs on the host. */
  outcome: string;
  stalled: boolean;
}

/** The VM whose start answer is delayed: the first of the largest flavor. */
const delayedVmOn = (host: string, kind: HostKind) =>
  `vm-${host}-${HOSTS[kind].ramMb.length}`;

interface Row {
  mode: Mode;
  hostKind: HostKind;
  vms: number;
  limit: number;
  novaLimit: number;
  delayS: number;
  delayedVm: string | undefined;
  /** When the delayed VM's migration started and ended (simulated s from start). */
  delayedVmSpanS: [number, number] | undefined;
  makespanS: number;
  lowerBoundS: number;
  ratio: number;
  migrated: number;
  twice: number;
  novaCalls: number;
  /** Nova and Placement calls by route, most first: where the calls go. */
  callsByRoute: Record<string, number>;
  callsPerVm: number;
  maxInFlight: number;
  realS: number;
  scale: number;
  gaps: SlotGaps;
  /** Runs with non-converging VMs. */
  nc: NcFigures | undefined;
}

/** What a configuration's run is doing, for the report of a missed deadline. */
interface Progress {
  phase: string;
  env?: DrainEnv;
  host?: string;
}

async function run(
  envtest: Awaited<ReturnType<typeof startEnvtest>>,
  { limit, novaLimit, delayS, hostKind, ncPercent, onTimeout }: Config,
  mode: Mode,
  progress: Progress,
): Promise<Row> {
  const host = `src-l${limit}-n${novaLimit}${delayS > 0 ? `-d${delayS}` : ""}${
    hostKind === "mixed" ? "-mixed" : ""
  }${ncPercent > 0 ? `-nc${ncPercent}-${onTimeout.toLowerCase()}` : ""}${
    mode === "notifications" ? "-notified" : ""
  }`;
  const { ramMb, vms } = HOSTS[hostKind];
  const SCALE = scaleFor(limit, novaLimit);
  // The non-converging VMs (by name) and the policy that acts on them.
  const ncIndices = ncPercent > 0
    ? nonConvergingIndices(vms, ncPercent, 11)
    : new Set<number>();
  const vmName = (i: number) => `vm-${host}-${i + 1}`;
  const ramOf = (i: number) => ramMb[i % ramMb.length] ?? 2048;
  const convergence = benchConvergence(onTimeout);
  const scenario: ScenarioInput = {
    seed: 11,
    timeScale: SCALE,
    timing: TIMING,
    hosts: [
      {
        name: host,
        ramMb: 4_000_000,
        vcpus: 4096,
        maxConcurrentLiveMigrations: novaLimit,
      },
      { name: `dst1-${host}`, ramMb: 8_000_000, vcpus: 8192 },
      { name: `dst2-${host}`, ramMb: 8_000_000, vcpus: 8192 },
    ],
    // the same VMs as the group would make, some dirtying memory
    ...(ncPercent > 0
      ? {
        servers: Array.from({ length: vms }, (_, i) => ({
          name: vmName(i),
          host,
          ramMb: ramOf(i),
          ...(ncIndices.has(i)
            ? {
              dirtyRateMBps: TIMING.liveMbPerSecond *
                NON_CONVERGING_DIRTY_FACTOR,
            }
            : {}),
        })),
      }
      : {
        serverGroups: [{
          host,
          count: vms,
          namePrefix: "vm",
          ramMb: [...ramMb],
        }],
      }),
  };
  progress.host = host;
  progress.phase = "starting the simulator and the operator";
  const e: DrainEnv = await startDrainEnv({
    env: envtest,
    scenario,
    concurrency: String(limit),
    pollIntervalMs: Math.max(1, Math.round(POLL_VIRTUAL_MS / SCALE)),
    // the interval the targets allow, in simulated time as the poll's
    progressIntervalMs: Math.max(
      1,
      Math.round(PROGRESS_INTERVAL_S * 1000 / SCALE),
    ),
    maxConcurrentReconciles: 1,
    ...(mode === "notifications" ? { notifications: {} } : {}),
  });
  progress.env = e;
  traced.prefix = new URL(e.sim.env().OS_AUTH_URL ?? "").origin;
  traced.calls = [];
  try {
    progress.phase = "creating the Hypervisor";
    await e.hypervisor(host);
    if (ncPercent > 0) {
      // The policy sets the limit while it exists (the flag otherwise).
      const policy: Partial<EvictionPolicySpec> & {
        convergence: typeof convergence;
      } = { maxConcurrentMigrations: limit, convergence };
      await e.policy(policy);
    }
    const delayedVm = delayS > 0 ? delayedVmOn(host, hostKind) : undefined;
    if (delayedVm !== undefined) {
      // The answer comes late; Nova acts at once (processed): a slow API
      // node, the case that used to hold every other slot idle.
      e.sim.injectActionFault(delayedVm, {
        action: "any",
        mode: "delay",
        delayMs: (delayS * 1000) / SCALE,
        processed: true,
      });
    }
    e.sim.resetCounters();
    // the times of the looks at the host (server lists), for the slot gaps
    const looks: number[] = [];
    const stopLooking = e.sim.onCall((c) => {
      if (
        c.key.endsWith("/servers/detail") &&
        new URLSearchParams(c.search).get("host") === host
      ) looks.push(c.atMs);
    });
    const realStart = Date.now();
    const start = e.sim.state().now;
    progress.phase = "creating the Eviction";
    await e.evict(host, host);
    progress.phase = `waiting for the drain of ${host} to settle`;
    let maxInFlight = 0;
    const ncIds = new Set<string>();
    const boundOf = new Map<string, number>();
    for (const sv of e.sim.state().servers) {
      const i = Number(sv.name.slice(sv.name.lastIndexOf("-") + 1)) - 1;
      if (!ncIndices.has(i) || sv.name !== vmName(i)) continue;
      ncIds.add(sv.id);
      boundOf.set(sv.id, policyBoundSeconds(convergence, sv.ramMb));
    }
    const boundS = (id: string) => boundOf.get(id) ?? Infinity;
    let stalledAt: number | undefined;
    const ev = await waitFor(
      `drain of ${host}`,
      async () => {
        const st = e.sim.state();
        const open = st.migrations.filter((m) =>
          m.source === host &&
          !["completed", "error", "cancelled"].includes(m.status)
        );
        maxInFlight = Math.max(maxInFlight, open.length);
        const x = await e.eviction(host);
        if (drainOutcome(x) !== undefined) return x;
        if (
          ncIds.size > 0 && stalled({
            nowMs: st.now,
            holding: open.filter((m) =>
              m.slotAt !== undefined && m.status !== "queued"
            ),
            nonConverging: ncIds,
            boundS,
            prepareS: TIMING.prepareSeconds,
            graceMs: (PROGRESS_INTERVAL_S + 2 * POLL_VIRTUAL_MS / 1000) * 1000,
            slots: Math.min(limit, novaLimit),
            convergingLeft: st.servers.filter((sv) =>
              sv.host === host && !sv.deleted && !ncIds.has(sv.id)
            ).length,
          })
        ) {
          stalledAt = st.now;
          return x;
        }
        return undefined;
      },
      3_600_000,
      200,
    );
    const leftOnHost = e.sim.state().servers.filter((sv) =>
      sv.host === host && !sv.deleted
    );
    // A drain that stopped otherwise never succeeds: fail now, not at the
    // deadline. Non-converging VMs may end left for a person, or stalled.
    const ncOnly = leftOnHost.every((sv) => ncIds.has(sv.id));
    if (
      stalledAt === undefined && drainOutcome(ev) !== "Succeeded" &&
      !(ncIds.size > 0 && ncOnly)
    ) {
      const c = ev.status?.conditions?.find((x) => x.type === "Evicting");
      throw new Error(
        `the drain of ${host} ended ${
          drainOutcome(ev)
        }: ${c?.reason}: ${c?.message}`,
      );
    }
    stopLooking();
    progress.phase = "measuring";
    if (values.trace !== undefined) await writeTrace(values.trace, host, e);
    const st = e.sim.state();
    const recs = st.migrations.filter((m) => m.source === host);
    const end = stalledAt ?? Math.max(...recs.map((m) => m.updatedAt));
    // every VM moves live: preparing, the copy, then the record completes
    const overhead = (TIMING.prepareSeconds + TIMING.liveCompleteSeconds) *
      1000;
    // Full time: what a VM needs from trigger to leaving when nothing waits;
    // slot time: what it holds one of Nova's per-host slots. A VM that
    // does not converge counts its policy's bound (bench/convergence.ts);
    // one copy per VM (its first), the copy time from its RAM.
    const o = {
      recordDelayS: TIMING.recordDelaySeconds,
      scheduleS: TIMING.scheduleSeconds,
      prepareS: TIMING.prepareSeconds,
      liveCompleteS: TIMING.liveCompleteSeconds,
    };
    const firstOf = new Map<string, (typeof recs)[number]>();
    for (const m of recs) {
      if (!firstOf.has(m.serverId)) firstOf.set(m.serverId, m);
    }
    const times: VmTime[] = [...firstOf.values()].map((m) => {
      if (!ncIds.has(m.serverId)) {
        const slotMs = m.copyMs + overhead;
        return {
          slotMs,
          fullMs: slotMs +
            (TIMING.recordDelaySeconds + TIMING.scheduleSeconds) * 1000,
          aloneMs: 0,
        };
      }
      return nonConvergingTime(
        onTimeout,
        boundS(m.serverId),
        m.copyMs / 1000,
        convergence.maxAbortedTries,
        o,
      );
    });
    // VMs never started (a stalled run) count too: they had to move.
    for (const sv of leftOnHost) {
      if (firstOf.has(sv.id)) continue;
      const copyS = sv.ramMb / TIMING.liveMbPerSecond;
      times.push(
        ncIds.has(sv.id)
          ? nonConvergingTime(
            onTimeout,
            boundS(sv.id),
            copyS,
            convergence.maxAbortedTries,
            o,
          )
          : nonConvergingTime("Report", copyS, 0, 1, o),
      );
    }
    const lowerBound = lowerBoundMs(times, limit, novaLimit);
    const held = heldSlots(
      recs,
      ncIds,
      (id) =>
        boundS(id) +
        (onTimeout === "ForceComplete"
          ? convergence.forceCompleteTimeoutSeconds
          : 0),
      TIMING.prepareSeconds,
      end,
    );
    const nc: NcFigures | undefined = ncIds.size === 0 ? undefined : {
      percent: ncPercent,
      onTimeout,
      vms: ncIds.size,
      heldS: held.heldS,
      worstPastBoundS: held.worstPastBoundS,
      worstVm: st.servers.find((x) => x.id === held.worstServer)?.name,
      outcome: stalledAt !== undefined
        ? `stalled, ${leftOnHost.length} VMs on the host`
        : drainOutcome(ev) === "Succeeded" && leftOnHost.length === 0
        ? "Succeeded"
        : `${drainOutcome(ev)}, ${leftOnHost.length} left for a person`,
      stalled: stalledAt !== undefined,
    };
    const byRoute = callsByRoute(e.sim.counters().calls);
    const calls = totalCalls(byRoute);
    const migrated = ev.status?.migratedCount ?? 0;
    const delayedId = delayedVm === undefined
      ? undefined
      : st.servers.find((x) => x.name === delayedVm)?.id;
    const delayedRec = recs.find((m) => m.serverId === delayedId);
    return {
      mode,
      hostKind,
      vms,
      limit,
      novaLimit,
      delayS,
      delayedVm,
      delayedVmSpanS: delayedRec === undefined ? undefined : [
        (delayedRec.createdAt - start) / 1000,
        (delayedRec.updatedAt - start) / 1000,
      ],
      // retries of a VM that does not converge are the policy's, not twice
      twice: migratedTwice(e.sim, [host]).filter((id) => !ncIds.has(id))
        .length,
      makespanS: (end - start) / 1000,
      lowerBoundS: lowerBound / 1000,
      ratio: (end - start) / lowerBound,
      migrated,
      novaCalls: calls,
      callsByRoute: byRoute,
      callsPerVm: calls / Math.max(1, migrated),
      maxInFlight,
      realS: (Date.now() - realStart) / 1000,
      scale: SCALE,
      gaps: slotGaps(recs, looks),
      nc,
    };
  } finally {
    progress.phase = "stopping the environment";
    // The policy is cluster-wide: the next configuration runs on the flag.
    if (ncPercent > 0) {
      await e.client.delete(EvictionPolicyKind, "default").catch(() => {});
    }
    await e.stop();
    progress.phase = "done";
  }
}

/** Writes a run's traced calls, their sites, migrations and log (`--trace`). */
async function writeTrace(dir: string, host: string, e: DrainEnv) {
  const t0 = traced.calls[0]?.atMs ?? 0;
  await Deno.writeTextFile(
    `${dir}/${host}.json`,
    JSON.stringify({
      calls: traced.calls.map((c) => ({ ...c, atMs: c.atMs - t0 })),
      migrations: e.sim.state().migrations.filter((m) => m.source === host),
    }),
  );
  await Deno.writeTextFile(`${dir}/${host}.log`, e.logs.join(""));
  const rows = (depth: number) =>
    bySite(traced.calls, depth).map((r) =>
      `${String(r.count).padStart(5)}  ${r.route}  <=  ${r.site}`
    );
  await Deno.writeTextFile(
    `${dir}/${host}.sites.txt`,
    [
      `${traced.calls.length} calls`,
      "by route and innermost site:",
      ...rows(1),
      "",
      "by route and 4 frames:",
      ...rows(4),
      "",
    ].join("\n"),
  );
}

/** What a run that missed its deadline was doing, in lines. */
async function pendingReport(label: string, p: Progress): Promise<string> {
  const lines = [
    `${label}: no result within --deadline-s ${
      DEADLINE_MS / 1000
    } s; it was ${p.phase}`,
  ];
  const e = p.env;
  if (e === undefined || p.host === undefined) return lines.join("\n");
  const host = p.host;
  const stopping = e.stopping();
  if (stopping !== undefined) lines.push(`stopping, at: ${stopping}`);
  const ev = await within(e.eviction(host), 5_000, undefined);
  const st = ev?.status;
  if (ev === undefined) lines.push("the Eviction could not be read in 5 s");
  else {
    const evicting = st?.conditions?.find((c) => c.type === "Evicting");
    lines.push(
      `Eviction: ${evicting?.status}/${evicting?.reason}: ${evicting?.message}`,
      `  outstanding ${st?.outstandingCount}, in flight ${st?.inFlightCount} ` +
        `[${(st?.inFlight ?? []).map((x) => x.id).join(", ")}], migrated ` +
        `${st?.migratedCount}, failed ${st?.failed?.length ?? 0}, emptySince ` +
        `${st?.emptySince}, finishedAt ${st?.finishedAt}`,
    );
  }
  const sim = e.sim.state();
  const moving = sim.migrations.filter((m) =>
    m.source === host &&
    !["completed", "error", "cancelled"].includes(m.status)
  );
  lines.push(
    `simulator: ${
      sim.servers.filter((x) => x.host === host).length
    } servers on ${host}, ${moving.length} migrations in progress: ${
      moving.slice(0, 10).map((m) => `${m.serverId} ${m.status}`).join(", ")
    }`,
    "operator's last log lines:",
    ...e.logs.slice(-40).map((l) => `  ${l.trimEnd()}`),
  );
  return lines.join("\n");
}

const envtest = await startEnvtest();
const rows: Row[] = [];
try {
  const configs = values.configs.split(",").flatMap((text) => {
    const c = parseConfig(text);
    // onTimeout matters only where VMs do not converge
    return (c.ncPercent > 0 ? ON_TIMEOUTS : ["Report" as const]).map((
      onTimeout,
    ) => ({
      config: c.ncPercent > 0 ? `${text} ${onTimeout}` : text,
      c: { ...c, onTimeout },
    }));
  });
  for (const { config, c } of configs) {
    for (const mode of MODES) {
      const progress: Progress = { phase: "starting" };
      const row = await withDeadline(
        run(envtest, c, mode, progress),
        DEADLINE_MS,
        () => pendingReport(`${mode} ${config}`, progress),
      ).catch(async (err) => {
        // Fails loudly, and exits: what hangs may never settle.
        console.error(
          `bench:drain: ${err instanceof Error ? err.message : err}`,
        );
        await within(envtest.stop(), 10_000, undefined);
        Deno.exit(1);
      });
      rows.push(row);
      console.error(
        `${mode}: limit ${c.limit}, Nova ${c.novaLimit}${
          c.delayS > 0 ? `, one answer ${c.delayS} s late` : ""
        }${
          row.nc === undefined
            ? ""
            : `, ${row.nc.vms} VMs not converging, ${c.onTimeout}: ${row.nc.outcome}, their slots held ${
              row.nc.heldS.toFixed(0)
            } s, worst ${row.nc.worstPastBoundS.toFixed(0)} s past its bound`
        }: makespan ${row.makespanS.toFixed(0)} s, ` +
          `bound ${row.lowerBoundS.toFixed(0)} s, ratio ${
            row.ratio.toFixed(3)
          }, ` +
          `${row.callsPerVm.toFixed(2)} calls/VM (${
            row.realS.toFixed(0)
          } s real)`,
      );
    }
  }
} finally {
  await within(envtest.stop(), 30_000, undefined);
}

rows.sort((a, b) =>
  a.mode.localeCompare(b.mode) * -1 ||
  a.hostKind.localeCompare(b.hostKind) * -1 ||
  (a.nc?.percent ?? 0) - (b.nc?.percent ?? 0) ||
  (a.nc?.onTimeout ?? "").localeCompare(b.nc?.onTimeout ?? "") ||
  a.delayS - b.delayS || a.novaLimit - b.novaLimit || a.limit - b.limit
);
const undelayedOf = (r: Row) =>
  rows.find((x) =>
    x.mode === r.mode && x.hostKind === r.hostKind && x.delayS === 0 &&
    x.limit === r.limit && x.novaLimit === r.novaLimit && x.nc === undefined
  );
const entries = rows.map((r) => {
  const base = r.delayS > 0 ? undelayedOf(r) : undefined;
  return {
    mode: r.mode,
    host: r.hostKind,
    limit: r.limit,
    novaHostLimit: r.novaLimit,
    vms: r.vms,
    ratio: Number(r.ratio.toFixed(4)),
    novaCallsPerVm: Number(r.callsPerVm.toFixed(3)),
    vmsMigratedTwice: r.twice,
    makespanS: Number(r.makespanS.toFixed(1)),
    lowerBoundS: Number(r.lowerBoundS.toFixed(1)),
    migrated: r.migrated,
    novaCalls: r.novaCalls,
    novaCallsByRoute: r.callsByRoute,
    maxInFlight: r.maxInFlight,
    timeScale: r.scale,
    slotGaps: {
      refills: r.gaps.refills,
      meanIdleS: Number((r.gaps.meanIdleMs / 1000).toFixed(3)),
      meanWaitForPassS: Number((r.gaps.meanWaitMs / 1000).toFixed(3)),
      meanPassS: Number((r.gaps.meanPassMs / 1000).toFixed(3)),
      looks: r.gaps.looks,
      emptyLooks: r.gaps.emptyLooks,
    },
    ...(r.nc === undefined ? {} : {
      nonConverging: {
        percent: r.nc.percent,
        vms: r.nc.vms,
        onTimeout: r.nc.onTimeout,
        policy: benchConvergence(r.nc.onTimeout),
        outcome: r.nc.outcome,
        stalled: r.nc.stalled,
        slotHeldS: Number(r.nc.heldS.toFixed(1)),
        worstPastBoundS: Number(r.nc.worstPastBoundS.toFixed(1)),
        worstVm: r.nc.worstVm ?? null,
      },
    }),
    ...(r.delayS === 0 ? {} : {
      delayedStart: {
        vm: r.delayedVm,
        // Simulated seconds; the simulator holds the answer delayS / timeScale
        // real seconds, Nova having acted at once.
        delayS: r.delayS,
        clock: "simulated",
        realDelayMs: (r.delayS * 1000) / r.scale,
        processedAtOnce: true,
        vmMigrationSpanS: r.delayedVmSpanS,
        makespanWithoutDelayS: base === undefined
          ? null
          : Number(base.makespanS.toFixed(1)),
        addedS: base === undefined
          ? null
          : Number((r.makespanS - base.makespanS).toFixed(1)),
        addsAtMostItsDelay: base === undefined
          ? null
          : r.makespanS - base.makespanS <= r.delayS,
      },
    }),
  };
});
await Deno.writeTextFile(
  values.json,
  `${
    JSON.stringify(
      {
        generatedAt: new Date().toISOString(),
        deno: Deno.version.deno,
        cpus: navigator.hardwareConcurrency,
        pollIntervalS: POLL_VIRTUAL_MS / 1000,
        configurations: entries,
      },
      null,
      2,
    )
  }\n`,
);

const figuresOf = (r: Row): RunFigures => ({
  mode: r.mode,
  host: r.hostKind,
  limit: r.limit,
  novaLimit: r.novaLimit,
  delayS: r.delayS,
  vms: r.vms,
  ratio: r.ratio,
  callsPerVm: r.callsPerVm,
  twice: r.twice,
  meanIdleS: r.gaps.meanIdleMs / 1000,
});
// runs with non-converging VMs have their own table and targets
const plain = rows.filter((r) => r.nc === undefined);
const ncRows = rows.filter((r) => r.nc !== undefined);
const figures = plain.map(figuresOf);
const baseline = baselineOf(BASELINE?.report);
/** The same configuration's calls per VM in the report replaced, if it has it. */
const callsBefore = (r: Row) => {
  const b = baseline.get(configName(figuresOf(r)));
  return b?.vms === r.vms ? b : undefined;
};
const delayed = entries.filter((x) => x.delayedStart !== undefined);
const verdict = (ok: boolean) => ok ? "met" : "MISSED";
const fmtRow = (r: Row) =>
  `| ${r.mode} | ${r.hostKind} (${r.vms}) | ${r.limit} | ${r.novaLimit} | ${
    r.delayS > 0 ? `${r.delayS} s` : "-"
  } | ${r.makespanS.toFixed(0)} | ` +
  `${r.lowerBoundS.toFixed(0)} | ${r.ratio.toFixed(3)} | ${r.novaCalls} | ` +
  `${r.callsPerVm.toFixed(2)} | ${
    callsBefore(r)?.callsPerVm.toFixed(2) ?? "-"
  } | ${r.twice} | ${r.maxInFlight} | ${r.scale}x | ` +
  `${(r.gaps.meanIdleMs / 1000).toFixed(2)} = ${
    (r.gaps.meanWaitMs / 1000).toFixed(2)
  } + ${
    (r.gaps.meanPassMs / 1000).toFixed(2)
  } | ${r.gaps.emptyLooks}/${r.gaps.looks} |`;
const fmtNcRow = (r: Row) =>
  `| ${r.mode} | ${r.hostKind} (${r.vms}) | ${r.limit} | ${r.novaLimit} | ${r.nc?.vms} (${r.nc?.percent} %) | ${r.nc?.onTimeout} | ${r.nc?.outcome} | ${
    r.nc?.stalled ? `(${r.makespanS.toFixed(0)})` : r.makespanS.toFixed(0)
  } | ${r.lowerBoundS.toFixed(0)} | ${
    r.nc?.stalled ? "-" : r.ratio.toFixed(3)
  } | ${r.callsPerVm.toFixed(2)} | ${r.nc?.heldS.toFixed(0)} | ${
    r.nc?.worstPastBoundS.toFixed(0)
  }${r.nc?.worstVm === undefined ? "" : ` (${r.nc.worstVm})`} |`;
const lines = [
  "# Drain benchmark",
  "",
  `${new Date().toISOString()}, Deno ${Deno.version.deno}, ` +
  `${navigator.hardwareConcurrency} CPUs (shared machine). ` +
  "`deno task bench:drain` regenerates this file and `drain.json` " +
  "(`deno task bench:issue38` this one and `wave.json`); each " +
  `configuration has ${DEADLINE_MS / 1000} real seconds (\`--deadline-s\`).`,
  "",
  `Hosts: uniform, ${VMS} VMs of ${
    HOSTS.uniform.ramMb.join("/")
  } MB (cycled); mixed, ${HOSTS.mixed.vms} VMs of ${
    HOSTS.mixed.ramMb.join("/")
  } MB (2-64 GiB, cycled). Live ` +
  `migration copies ${TIMING.liveMbPerSecond} MB/s (±${
    TIMING.jitter * 100
  } % ` +
  `jitter) after the conductor's ${TIMING.recordDelaySeconds} s to write ` +
  `its record, ${TIMING.scheduleSeconds} s scheduling and ` +
  `${TIMING.prepareSeconds} s preparing; the record completes ` +
  `${TIMING.liveCompleteSeconds} s after the server is ACTIVE on its ` +
  `destination (as in real Zed). The poll interval is ${
    POLL_VIRTUAL_MS / 1000
  } s of ` +
  "simulated time; times below are simulated seconds. The simulator runs " +
  "`scale` times faster than real time, so the operator's own latency per " +
  "pass (API server and simulator round trips, some tens of real " +
  "milliseconds) counts `scale` times over in simulated time: a handicap " +
  "that a real cloud, with migrations of real length, does not impose. " +
  "A drain is done when `kubectl evictor drain --wait` would say so: a " +
  "settled Succeeded. Calls / VM before: the same configuration in " +
  (BASELINE === undefined
    ? "the report replaced (none was found)"
    : `the report replaced (${BASELINE.path}, ${
      (BASELINE.report as { generatedAt?: string } | null)?.generatedAt ??
        "undated"
    })`) +
  ".",
  "",
  "| mode | host (VMs) | our limit | Nova limit | start answer late | makespan (s) | lower bound (s) | ratio | Nova calls | calls / VM | calls / VM before | migrated twice | max in flight | scale | idle slot (s) = wait + pass | empty looks |",
  "| ---- | ---------- | --------- | ---------- | ----------------- | ------------ | --------------- | ----- | ---------- | ---------- | ----------------- | -------------- | ------------- | ----- | --------------------------- | ----------- |",
  ...plain.map(fmtRow),
  "",
  ...(ncRows.length === 0 ? [] : [
    `Non-converging VMs (\`:ncP\`: P % of the VMs dirty memory at ${NON_CONVERGING_DIRTY_FACTOR} times the copy rate; the EvictionPolicy's convergence: ${
      JSON.stringify(benchConvergence("Report")).replaceAll('"', "")
    }, onTimeout per row):`,
    "",
    "| mode | host (VMs) | our limit | Nova limit | not converging | onTimeout | outcome | makespan (s) | lower bound (s) | ratio | calls / VM | their slot time (s) | worst past bound (s) |",
    "| ---- | ---------- | --------- | ---------- | -------------- | --------- | ------- | ------------ | --------------- | ----- | ---------- | ------------------- | -------------------- |",
    ...ncRows.map(fmtNcRow),
    "",
  ]),
  "| target | result (worst run) | verdict |",
  "| ------ | ------------------ | ------- |",
  // a mode or host not run has no verdict (--modes, --configs)
  ...drainTargets(figures, baseline).map((v) =>
    `| ${v.target} | ${v.result} | ${verdict(v.met)} |`
  ),
  ...convergenceTargets(
    ncRows.map((r) => ({
      name: configName(figuresOf(r)) + `:nc${r.nc?.percent}`,
      onTimeout: r.nc?.onTimeout ?? "Report",
      worstPastBoundS: r.nc?.worstPastBoundS ?? 0,
      stalled: r.nc?.stalled ?? false,
    })),
    PROGRESS_INTERVAL_S,
  ).map((v) => `| ${v.target} | ${v.result} | ${verdict(v.met)} |`),
  ...delayed.map((d) => {
    const x = d.delayedStart;
    const added = x?.addedS ?? null;
    return `| ${d.mode}: a start answer ${x?.delayS} s late adds <= ${x?.delayS} s (limit ${d.limit}, Nova ${d.novaHostLimit}) | ${
      added === null ? "?" : `${added >= 0 ? "+" : ""}${added}`
    } s (${x?.makespanWithoutDelayS ?? "?"} -> ${d.makespanS}) | ${
      verdict(x?.addsAtMostItsDelay === true)
    } |`;
  }),
  "",
  "Makespan runs from the Eviction's creation to the last VM leaving the host.",
  "The lower bound is max(max t_i, sum t_i / our limit, sum s_i / Nova's limit),",
  "with t_i a VM's migration time when nothing waits and s_i the part of it that",
  "holds one of Nova's per-host slots (scheduling does not): the issue's",
  "max(max t_i, sum t_i / min(our limit, Nova's limit)), made no larger where",
  "Nova's limit binds, so the ratio is never flattered. Nova calls count every",
  "compute API call the simulator served (Keystone excluded), preflight",
  "included. Migrated twice: VMs of which Nova accepted more than one migration.",
  "",
  "Idle slot: the mean time from a migration's completion to the start that",
  "refilled its slot (a start refills the slot of the latest completion not",
  "refilled yet; where Nova's limit binds and the drain holds fewer in flight",
  "than at first, the completions it did not refill stay unpaired),",
  "split into the wait for the first look at the host after the completion",
  "(pacing) and the rest (that pass's latency, or more looks when it saw",
  "nothing). Empty looks: server lists of the host after which nothing",
  "started before the next one (early wakes, and the passes at the end that",
  "only saw a completion), of all looks.",
  "",
  ...(ncRows.length === 0 ? [] : [
    "Non-converging VMs: the lower bound counts each such VM's policy bound",
    "(the sooner of completionTimeoutPerGiB x its GiB and progressTimeoutSeconds,",
    "from its copy's start) as its copy: Report as if it left then, Abort as",
    "maxAbortedTries tries of it, the later ones alone after the others, and",
    "ForceComplete as the bound then the paused copy of its RAM. Calls per VM",
    "count the VMs moved. Their slot time: the time their copies held one of",
    "the host's slots; worst past bound: the longest any held past preparing +",
    "its bound (+ forceCompleteTimeoutSeconds with ForceComplete). A run whose",
    "slots are all held by such copies, not force-completed, past their bound",
    `plus one progress interval (${PROGRESS_INTERVAL_S} s, \`--progress-interval-s\`) and two`,
    "poll intervals can make no more progress: it stops there as stalled (its",
    "makespan in parentheses is the time of the stop, its ratio not given).",
    "Nova's own completion timeout is off on these hosts: the policy is what",
    "acts.",
    "",
  ]),
  "The delayed run: the simulator holds the answer to the start of one VM (the",
  "first 16 GB one) for the stated simulated time (real time = that / scale);",
  "Nova acts at once, only the answer is late. Its makespan is compared with",
  "the same configuration's run without the delay.",
  "",
  "Targets (issue 38): every run of a mode is held to that mode's ceilings,",
  "the mixed host's included; the mixed host (its copies 2-67 s long, so",
  "the first ones run untimed and the end is many short copies) is also",
  "held to a ratio of 1.03 in both modes. Notification mode may not cost",
  "more Nova calls per VM than the report replaced, configuration by",
  "configuration (those it has, with as many VMs).",
  "",
];
const report = lines.join("\n");
console.log(report);
await Deno.writeTextFile(values.out, report);
const fmt = await new Deno.Command(Deno.execPath(), {
  args: ["fmt", values.out],
  stdout: "null",
  stderr: "inherit",
}).output();
if (!fmt.success) console.error(`deno fmt ${values.out} failed`);
console.error(`wrote ${values.out} and ${values.json}`);
