/**
 * Gate, the first phase of a pass: what must hold before Nova is read
 * (the oldest Eviction of a host drains, capacity, preflight, the wave, a
 * retry request, a finished or never-registered host watched cheaply).
 * Its steps read the pass and return what they decide (a Step: the
 * status they leave, the pass's end); the pass applies it (reconcile.ts).
 *
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
import type {
  HandlerContext,
  ReconcileResult,
} from "../../framework/handler.ts";
import { effectiveSettings, POLICY_NAME } from "../../limits/resolve.ts";
import type { Eviction, EvictionStatus } from "../../models/mod.ts";
import { EvictionKind, EvictionPolicyKind, HypervisorKind } from "../kinds.ts";
import {
  changeCondition,
  CONDITION_EVICTING,
  setCondition,
} from "./conditions.ts";
import { drainingAhead } from "./gates.ts";
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
  type Pass,
  type Step,
} from "./pass.ts";

/**
 * Gate: what must hold before Nova is read, as steps in this order: only
 * the oldest Eviction of a hypervisor drains; a host that never
 * registered is looked at only at the slow check; the compute service is
 * disabled first (capacity, preflight); the wave's hosts are disabled; a
 * retry request is applied; a finished drain is watched cheaply. Each
 * later step reads the status the earlier ones left; the returned Step
 * carries the last, and ends the pass when a step did.
 */
export async function gate(pass: Pass): Promise<Step> {
  const now = new Date(pass.deps.clock.now());
  const generation = pass.ev.metadata?.generation;
  const duplicate = duplicateStep(pass, now, generation);
  if (duplicate.end !== undefined) return duplicate;
  const unregistered = watchUnregistered(pass);
  if (unregistered !== undefined) return { end: unregistered };
  const preflighted = await preflightStep(pass, now, generation);
  if (preflighted.end !== undefined) return preflighted;
  const afterPreflight = withStatus(pass, preflighted.status);
  const wave = waveGatePhase(afterPreflight, now, generation);
  if (wave.end !== undefined) return wave;
  const retry = retryStep(withStatus(afterPreflight, wave.status));
  const status = retry.status ?? wave.status ?? afterPreflight.status;
  const gated = { ...wave, ...retry, status };
  if (retry.retry === undefined && status.finishedAt !== undefined) {
    const finished = watchFinished(withStatus(pass, status));
    if (finished !== undefined) return { ...gated, end: finished };
  }
  return gated;
}

/** The pass as a later step of the gate sees it: with an earlier step's status. */
function withStatus(pass: Pass, status: EvictionStatus | undefined): Pass {
  return status === undefined ? pass : { ...pass, status };
}

/**
 * Only the oldest Eviction of a hypervisor drains, of every partition's
 * (an older one may be another process's): this one waits, Duplicate.
 */
function duplicateStep(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Step {
  const { ctx, deps, ev, host } = pass;
  const ahead = drainingAhead(
    ev,
    (deps.allEvictions ?? ctx.cache(EvictionKind)).list(),
  );
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
    now,
    generation,
    {
      type: "Warning",
      reason: "DuplicateEviction",
      message: `Eviction ${other} already drains hypervisor ${host}`,
    },
  );
  if (event !== undefined) emit(pass, event);
  return { status, end: { requeueAfterMs: deps.slowPollMs } };
}

/**
 * Before the compute service is known disabled: the capacity check, then
 * the preflight (disable it; a host Nova never knew is done at once, one
 * it lost fails).
 */
async function preflightStep(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Promise<Step> {
  const { ctx, deps, ev, host } = pass;
  if (pass.status.hypervisorServiceId !== undefined) return {};
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
      status: out.status,
      end: { requeueAfterMs: deps.slowPollMs * 10 },
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
    pass.state.lastFinishedCheckMs = deps.clock.now();
    return {
      status: out.status,
      end: { requeueAfterMs: deps.finishedCheckMs },
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
  return { status: out.status };
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

/**
 * A drain finished because its host never registered in Nova asks Nova
 * again (capacity, preflight) only at the slow finished check, not on
 * every pass a Hypervisor status sync wakes. Returns the pass's result
 * while the check is not due.
 */
export function watchUnregistered(pass: Pass): ReconcileResult | undefined {
  const { deps, state, status } = pass;
  if (status.finishedAt === undefined) return undefined;
  if (status.hypervisorServiceId !== undefined) return undefined;
  const preflight = status.conditions?.find((c) =>
    c.type === CONDITION_PREFLIGHT
  );
  if (preflight?.reason !== REASON_NOT_REGISTERED) return undefined;
  const last = state.lastFinishedCheckMs;
  if (last === undefined) return undefined;
  const sinceReal = (deps.clock.now() - last) / pass.rate;
  if (sinceReal >= deps.finishedCheckMs) return undefined;
  return {
    requeueAfterMs: Math.max(1, Math.round(deps.finishedCheckMs - sinceReal)),
  };
}

/**
 * Wave (after this drain's own preflight, before every start): waits,
 * bounded per member, while another pending Eviction's compute service is
 * still enabled (wave.ts). A drain with nothing in flight waits without a
 * Nova call; one with migrations in flight goes on watching them and only
 * holds its new starts (the Step's `hold`). The peers waiting in this
 * process are woken once this drain's disabled service is recorded.
 */
export function waveGatePhase(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Step {
  const { ctx, deps } = pass;
  if (pass.status.finishedAt !== undefined) return {};
  // every partition's Evictions: another process disables their hosts
  const evictions = (deps.allEvictions ?? ctx.cache(EvictionKind)).list().map((
    e,
  ) => ctx.latest(e));
  const decision = decideWave(pass, evictions, now);
  const before = pass.status;
  const update = waveCondition(pass.host, decision, evictions);
  const { status, event } = changeCondition(
    pass.status,
    update,
    now,
    generation,
    {
      type: "Normal",
      reason: decision.go ? "WaveSettled" : "WaitingForWave",
    },
  );
  if (event !== undefined) emit(pass, event);
  const newlyDisabled = before.hypervisorServiceId !== undefined &&
    pass.ev.status?.hypervisorServiceId === undefined;
  const idle = (status.inFlight ?? []).length === 0;
  const step: Step = newlyDisabled
    ? { status, after: () => wakeWaitingPeers(ctx, evictions) }
    : { status };
  if (decision.go) return step;
  if (!idle) return { ...step, hold: update.message };
  return {
    ...step,
    end: {
      requeueAfterMs: Math.max(
        1,
        Math.round(Math.min(deps.pollIntervalMs, decision.waitMs / pass.rate)),
      ),
    },
  };
}

/**
 * The wave decision on the drain's clock: each member's wait runs from
 * when this drain began waiting (its WaveSettled=False condition) or first
 * saw the member enabled, whichever is later.
 */
function decideWave(
  pass: Pass,
  evictions: readonly Eviction[],
  now: Date,
): WaveDecision {
  const seen = pass.state.waveSeen;
  const nowMs = now.getTime();
  const current = (pass.status.conditions ?? []).find((c) =>
    c.type === CONDITION_WAVE_SETTLED
  );
  const since = current?.status === "False"
    ? Date.parse(current.lastTransitionTime)
    : Number.NaN;
  const self = { ...pass.ev, status: pass.status };
  const pending = new Set(pendingMembers(self, evictions));
  for (const name of [...seen.keys()]) {
    if (!pending.has(name)) seen.delete(name);
  }
  for (const name of pending) if (!seen.has(name)) seen.set(name, nowMs);
  return waveGate({
    self,
    evictions,
    waitingSinceMs: Number.isNaN(since) ? Number.NEGATIVE_INFINITY : since,
    firstSeenMs: (name) => seen.get(name),
    nowMs,
    settleMs: pass.deps.waveSettleMs * pass.rate,
  });
}

/** Enqueues this process's drains that wait for their wave. */
export function wakeWaitingPeers(
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

/**
 * Capacity (before the compute service is disabled, and again at the slow
 * interval while `capacityCheck: Hold` waits): does the wave's VMs fit
 * elsewhere, in Placement's view? The Step ends the pass while it holds.
 */
export async function checkCapacityFirst(
  pass: Pass,
  now: Date,
  generation: number | undefined,
): Promise<Step> {
  const { ctx, deps, ev, host } = pass;
  if (deps.capacity === undefined) return {};
  const gathering = gatherWave(pass, now);
  if (gathering !== undefined) return { end: gathering };
  const spec = ctx.cache(EvictionPolicyKind).get(POLICY_NAME)?.spec;
  const settings = effectiveSettings(spec, deps.flagSettings);
  // every partition's: their VMs compete for the same room
  const evictions = (deps.allEvictions ?? ctx.cache(EvictionKind)).list();
  const hypervisors = ctx.cache(HypervisorKind);
  // A host of the wave: its traits and its own drain's cap (this one's
  // for this host; a host drained by a running Eviction, that one's),
  // under Nova's limit where a drain of the host learned it (as `kubectl
  // evictor plan` predicts).
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
      (name === host ? pass.state.novaLimit?.limit : undefined) ??
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
  if (!phase.hold) return { status: phase.status };
  return { status: phase.status, end: { requeueAfterMs: deps.slowPollMs } };
}

/** How long a new drain waits for the rest of its wave to appear (real ms). */
const WAVE_GATHER_MS = 1_000;

/**
 * Evictions created together (one `kubectl apply`, `kubectl evictor
 * drain A B`) reach the cache some milliseconds apart; a capacity check
 * run at once would judge each without the others and count the same
 * free room twice. So a drain's first capacity check waits
 * {@linkcode WAVE_GATHER_MS} (real) from when this process first saw it.
 */
function gatherWave(pass: Pass, now: Date): ReconcileResult | undefined {
  const seen = pass.state.firstSeenMs ??= now.getTime();
  const leftMs = seen + WAVE_GATHER_MS * pass.rate - now.getTime();
  if (leftMs <= 0) return undefined;
  return { requeueAfterMs: Math.max(1, Math.ceil(leftMs / pass.rate)) };
}

/**
 * A finished drain stays watched while its Eviction exists: often at
 * first (a VM forced here just after the finish is found within a poll
 * interval or two), then less often ({@linkcode finishedLookMs}), and at
 * once (at most once per poll interval) when the Hypervisor's status sync
 * reports instances on the host, or at once when the informer saw a VM
 * come here. A look reads Nova afresh, and a VM found there reopens the
 * drain.
 */
export function watchFinished(pass: Pass): ReconcileResult | undefined {
  const { deps, state } = pass;
  const nowMs = deps.clock.now();
  const last = state.lastFinishedCheckMs;
  const sinceReal = last === undefined ? Infinity : (nowMs - last) / pass.rate;
  const reported = pass.hypervisor?.status?.numInstances ?? 0;
  deps.memory.ledger.set(pass.ctx.key, 0);
  // The informer saw a VM come here: look now.
  if (deps.memory.informer.woken(pass.ctx.key)) return undefined;
  const interval = last === undefined
    ? 0
    : finishedLookMs(pass, pass.status.finishedAt, last);
  if (sinceReal >= interval) return undefined;
  if (reported > 0 && sinceReal >= deps.pollIntervalMs) return undefined;
  const waitMs = reported > 0
    ? Math.min(deps.pollIntervalMs, interval) - sinceReal
    : interval - sinceReal;
  return { requeueAfterMs: Math.max(1, Math.round(waitMs)) };
}
