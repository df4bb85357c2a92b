/**
 * Gate, the second phase: what must hold before Nova is read.
 * @module
 */

import { lastDrainOf } from "../../capacity/last_drain_record.ts";
import {
  CONDITION_PREFLIGHT,
  CONDITION_WAVE_SETTLED,
  drainEndMs,
  REASON_DUPLICATE,
  REASON_NOT_REGISTERED,
} from "../conditions.ts";
import type { HandlerContext } from "../../framework/handler.ts";
import { effectiveSettings, POLICY_NAME } from "../../limits/resolve.ts";
import type { Eviction } from "../../models/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import {
  changeCondition,
  CONDITION_EVICTING,
  setCondition,
} from "./conditions.ts";
import { drainingAhead } from "./host_holds.ts";
import { nothingDrainedMessage, preflight } from "./preflight.ts";
import { applyRetry, RETRY_ANNOTATION } from "./retry.ts";
import { statusEqual } from "./status_equal.ts";
import {
  pendingMembers,
  waveCondition,
  type WaveDecision,
  waveGate,
} from "./wave.ts";
import { capacityPhase } from "../../capacity/gate.ts";
import {
  learnedNovaLimit,
  predictionLimit,
} from "../../capacity/prediction_limit.ts";
import {
  emit,
  finishedLookMs,
  limitOfDrain,
  type NextLook,
  type Pass,
  type Phase,
  type Step,
} from "./pass.ts";

/** The gate's steps, in order. */
export const GATE: readonly Phase[] = [
  duplicateStep,
  (p) => ({ end: watchUnregistered(p) }),
  preflightStep,
  waveStep,
  retryStep,
  (p) => ({ end: watchFinished(p) }),
];

/** Only the oldest Eviction of a hypervisor, of every partition's, drains. */
function duplicateStep(pass: Pass): Step {
  const { deps, ev, host } = pass;
  const ahead = drainingAhead(ev, everyEviction(pass));
  if (ahead === undefined) return {};
  const other = ahead.metadata?.name ?? "";
  const { status, event } = changeCondition(
    pass.status,
    {
      type: CONDITION_EVICTING,
      status: "False",
      reason: REASON_DUPLICATE,
      message:
        `Eviction ${other} already drains hypervisor ${host}; this one waits until it is finished or deleted`,
    },
    new Date(deps.clock.now()),
    ev.metadata?.generation,
    {
      type: "Warning",
      reason: "DuplicateEviction",
      message: `Eviction ${other} already drains hypervisor ${host}`,
    },
  );
  if (event !== undefined) emit(pass, event);
  return { status, end: { inMs: pass.times.slowPollMs } };
}

/** Before the compute service is known disabled: capacity, then the preflight. */
async function preflightStep(pass: Pass): Promise<Step> {
  const { ctx, deps, ev, host } = pass;
  if (pass.status.hypervisorServiceId !== undefined) return {};
  const now = new Date(deps.clock.now());
  const generation = ev.metadata?.generation;
  const capacity = await checkCapacityFirst(pass, now, generation);
  if (capacity.end !== undefined) return capacity;
  const status = capacity.status ?? pass.status;
  const out = await preflight(deps.nova, {
    host,
    reason: ev.spec.reason,
    hypervisor: pass.hypervisor,
    status,
    now,
    generation,
  }, ctx.signal);
  if (out.kind === "failed") {
    if (!statusEqual(status, out.status)) {
      pass.log.error({ err: out.message }, "preflight failed");
      emit(pass, {
        type: "Warning",
        reason: "PreflightFailed",
        message: out.message,
      });
    }
    // No hot loop: a change of the Hypervisor enqueues this Eviction.
    return {
      ...capacity,
      status: out.status,
      end: { inMs: pass.times.slowPollMs * 10 },
    };
  }
  if (out.kind === "unregistered") {
    if (status.finishedAt === undefined) {
      emit(pass, {
        type: "Normal",
        reason: "DrainFinished",
        message: nothingDrainedMessage(host),
      });
    }
    deps.memory.ledger.set(ctx.key, 0);
    return {
      status: out.status,
      end: { inMs: pass.times.finishedCheckMs },
      record: { ...capacity.record, lastFinishedCheckMs: now.getTime() },
    };
  }
  if (status.startedAt === undefined) {
    emit(pass, {
      type: "Normal",
      reason: "DrainStarted",
      message: `draining host ${host}${
        out.disabledNow
          ? `; compute service ${out.status.hypervisorServiceId} disabled`
          : ""
      }`,
    });
  }
  return { ...capacity, status: out.status };
}

/** A retry annotation re-arms failed VMs (removed after the write). */
function retryStep(pass: Pass): Step {
  const retry = pass.ev.metadata?.annotations?.[RETRY_ANNOTATION];
  if (typeof retry !== "string") return {};
  const r = applyRetry(pass.status, retry);
  emit(pass, {
    type: "Normal",
    reason: "RetryRequested",
    message: `re-armed ${
      r.rearmed.length === 0 ? "no VM" : r.rearmed.join(", ")
    }${
      r.ignored.length === 0
        ? ""
        : `; not failed, ignored: ${r.ignored.join(", ")}`
    }`,
  });
  return { status: r.status, retry };
}

/** A drain finished because its host never registered asks Nova again only at the slow finished check. */
function watchUnregistered(pass: Pass): NextLook | undefined {
  const { deps, state, status } = pass;
  if (status.finishedAt === undefined) return undefined;
  if (status.hypervisorServiceId !== undefined) return undefined;
  const preflight = status.conditions?.find((c) =>
    c.type === CONDITION_PREFLIGHT
  );
  if (preflight?.reason !== REASON_NOT_REGISTERED) return undefined;
  const last = state.lastFinishedCheckMs;
  if (last === undefined) return undefined;
  const leftMs = last + pass.times.finishedCheckMs - deps.clock.now();
  return leftMs > 0 ? { inMs: leftMs } : undefined;
}

/** Waits for the wave (wave.ts); with migrations in flight it only holds its starts. */
function waveStep(pass: Pass): Step {
  const { ctx, deps } = pass;
  if (pass.status.finishedAt !== undefined) return {};
  const now = new Date(deps.clock.now());
  const evictions = everyEviction(pass).map((e) => ctx.latest(e));
  const { decision, seen } = decideWave(pass, evictions, now);
  const before = pass.status;
  const update = waveCondition(pass.host, decision, evictions);
  const { status, event } = changeCondition(
    pass.status,
    update,
    now,
    pass.ev.metadata?.generation,
    {
      type: "Normal",
      reason: decision.go ? "WaveSettled" : "WaitingForWave",
    },
  );
  if (event !== undefined) emit(pass, event);
  const newlyDisabled = before.hypervisorServiceId !== undefined &&
    pass.ev.status?.hypervisorServiceId === undefined;
  const idle = (status.inFlight ?? []).length === 0;
  const step: Step = {
    status,
    record: { waveSeen: seen },
    ...(newlyDisabled ? { after: () => wakeWaitingPeers(ctx, evictions) } : {}),
  };
  if (decision.go) return step;
  if (!idle) return { ...step, hold: update.message };
  return {
    ...step,
    end: { inMs: Math.min(pass.times.pollMs, decision.waitMs) },
  };
}

/** The wave decision, with when each pending member was first seen. */
function decideWave(
  pass: Pass,
  evictions: readonly Eviction[],
  now: Date,
): { decision: WaveDecision; seen: Map<string, number> } {
  const nowMs = now.getTime();
  const current = (pass.status.conditions ?? []).find((c) =>
    c.type === CONDITION_WAVE_SETTLED
  );
  const since = current?.status === "False"
    ? Date.parse(current.lastTransitionTime)
    : Number.NaN;
  const self = { ...pass.ev, status: pass.status };
  const seen = new Map<string, number>();
  for (const name of pendingMembers(self, evictions)) {
    seen.set(name, pass.state.waveSeen.get(name) ?? nowMs);
  }
  const decision = waveGate({
    self,
    evictions,
    waitingSinceMs: Number.isNaN(since) ? Number.NEGATIVE_INFINITY : since,
    firstSeenMs: (name) => seen.get(name),
    nowMs,
    settleMs: pass.times.waveSettleMs,
  });
  return { decision, seen };
}

/** Every partition's Evictions, whatever this process's label selector. */
function everyEviction(pass: Pass): Eviction[] {
  return (pass.deps.allEvictions ?? pass.ctx.cache(EvictionKind)).list();
}

function wakeWaitingPeers(
  ctx: HandlerContext<Eviction>,
  evictions: readonly Eviction[],
): void {
  for (const e of evictions) {
    const name = e.metadata?.name;
    if (name === undefined || name === ctx.key) continue;
    if (ctx.cache(EvictionKind).get(name) === undefined) continue;
    const c = e.status?.conditions?.find((x) =>
      x.type === CONDITION_WAVE_SETTLED
    );
    if (c?.status === "False") ctx.enqueue(EvictionKind, name);
  }
}

/** Capacity, before the service is disabled: do the wave's VMs fit elsewhere? */
async function checkCapacityFirst(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Promise<Step> {
  const { ctx, deps, ev, host } = pass;
  if (deps.capacity === undefined) return {};
  const firstSeenMs = pass.state.firstSeenMs ?? now.getTime();
  const record = { firstSeenMs };
  const gathering = gatherWave(pass, firstSeenMs, now);
  if (gathering !== undefined) return { end: gathering, record };
  const spec = ctx.cache(EvictionPolicyKind).get(POLICY_NAME)?.spec;
  const settings = effectiveSettings(spec, deps.flagSettings);
  // every partition's: their VMs compete for the same room
  const evictions = everyEviction(pass);
  const hypervisors = ctx.cache(HypervisorKind);
  // as `kubectl evictor plan` predicts: under Nova's limit where learned
  const limitOf = (name: string) =>
    predictionLimit(
      limitOfDrain(
        settings,
        hypervisors,
        name === host
          ? ev.spec
          : evictions.find((e) =>
            e.spec.hypervisor === name && e.status?.finishedAt === undefined
          )?.spec ?? { hypervisor: name },
      ).limit,
      (name === host ? pass.status.novaLiveMigrationLimit : undefined) ??
        learnedNovaLimit(
          name,
          evictions,
          lastDrainOf(hypervisors.get(name) ?? {}),
        ),
    );
  const phase = await capacityPhase(deps.nova, deps.capacity, {
    host,
    evictions,
    hypervisor: (name) => hypervisors.get(name),
    hypervisors: hypervisors.list(),
    endOf: (e) => drainEndMs(e.status),
    mode: spec?.capacityCheck,
    limitOf,
    budget: settings.spec.clusterMaxConcurrentMigrations,
    signal: ctx.signal,
    status: pass.status,
    now,
    generation,
    setCondition,
  });
  if (phase.event !== undefined) emit(pass, phase.event);
  return phase.hold
    ? { status: phase.status, end: { inMs: pass.times.slowPollMs }, record }
    : { status: phase.status, record };
}

/** Evictions created together reach the cache ms apart: the first capacity check waits `waveGatherMs` to judge the wave whole. */
function gatherWave(pass: Pass, seen: number, now: Date): NextLook | undefined {
  const leftMs = seen + pass.times.waveGatherMs - now.getTime();
  return leftMs > 0 ? { inMs: leftMs } : undefined;
}

/** A finished drain stays watched; at once (at most once per poll) when its Hypervisor reports instances. */
function watchFinished(pass: Pass): NextLook | undefined {
  const { deps, state } = pass;
  if (pass.retryValue !== undefined || pass.status.finishedAt === undefined) {
    return undefined;
  }
  const nowMs = deps.clock.now();
  const last = state.lastFinishedCheckMs;
  const { pollMs } = pass.times;
  const since = last === undefined ? Infinity : nowMs - last;
  const reported = pass.hypervisor?.status?.numInstances ?? 0;
  deps.memory.ledger.set(pass.ctx.key, 0);
  if (deps.memory.informer.woken(pass.ctx.key)) return undefined;
  const interval = last === undefined
    ? 0
    : finishedLookMs(pass, pass.status.finishedAt, last);
  if (since >= interval) return undefined;
  if (reported > 0 && since >= pollMs) return undefined;
  return {
    inMs: (reported > 0 ? Math.min(pollMs, interval) : interval) - since,
  };
}
