/**
 * Act: the plan's calls, none awaited (a lost answer holds only its VM's slot); answers that need action wake the drain.
 * @module
 */

import { backoffDelay } from "../../framework/backoff.ts";
import { errText } from "../../framework/errors.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import {
  type ActionResult,
  ConflictError,
  OpenStackError,
  UnavailableError,
} from "../../openstack/mod.ts";
import { isTransientRefusal } from "../../openstack/informer/nova_states.ts";
import { EvictionKind } from "../kinds.ts";
import { startedNote } from "./event_notes.ts";
import { noteMarks } from "./drain_lesson.ts";
import type { IssuedStart } from "./memory.ts";
import type { ActionNote, StartNote } from "./once.ts";
import { emit, type Pass, type Step } from "./pass.ts";
import type { AbortAction, ForceCompleteAction, Plan } from "./plan_types.ts";
import { type Refusal, withConvergence } from "./next_status.ts";
import { CONDITION_NOT_CONVERGING, REASON_CONVERGING } from "./conditions.ts";
import { UNANSWERED_REPORT_AFTER } from "./plan_steps.ts";
import { countsOf } from "./report.ts";

/** First wait after an unanswered start (drain clock ms), doubling. */
export const UNANSWERED_BACKOFF_BASE_MS = 2_000;
/** The longest wait after unanswered starts (drain clock ms). */
export const UNANSWERED_BACKOFF_CAP_MS = 120_000;

/**
 * The backoff after the `count`-th unknown answer in a row.
 *
 * @example
 * ```ts
 * import { unansweredBackoffMs } from "./phase_act.ts";
 * console.assert(unansweredBackoffMs(1) === 2000);
 * console.assert(unansweredBackoffMs(3) === 8000);
 * console.assert(unansweredBackoffMs(50) === 120_000);
 * ```
 */
export function unansweredBackoffMs(count: number): number {
  return backoffDelay(
    Math.max(0, count - 1),
    UNANSWERED_BACKOFF_BASE_MS,
    UNANSWERED_BACKOFF_CAP_MS,
  );
}

/**
 * What Nova's answer to a start means: a 4xx but 409 is a refusal; a timeout, reset or 5xx unknown.
 *
 * @example
 * ```ts
 * import { answerOf } from "./phase_act.ts";
 * import { ConflictError, OpenStackError } from "../../openstack/mod.ts";
 * console.assert(answerOf(undefined).state === "accepted");
 * console.assert(answerOf(new ConflictError("busy", { status: 409 })).state === "conflict");
 * console.assert(answerOf(new OpenStackError("x", { status: 503 })).state === "unknown");
 * console.assert(answerOf(new OpenStackError("No valid host was found.", { status: 400 })).transient === true);
 * ```
 */
export function answerOf(
  err: unknown,
): Pick<StartNote, "state" | "message" | "transient"> {
  if (err === undefined) return { state: "accepted" };
  const message = errText(err);
  if (err instanceof ConflictError) return { state: "conflict", message };
  const status = err instanceof OpenStackError ? err.status : undefined;
  // a 429 (UnavailableError) is no refusal: Nova did not take it on
  if (
    status !== undefined && status >= 400 && status < 500 &&
    !(err instanceof UnavailableError)
  ) {
    return {
      state: "refused",
      message,
      transient: isTransientRefusal(message),
    };
  }
  return { state: "unknown", message };
}

/**
 * Act: issues the plan's calls; its Step leaves `next` and notes the calls.
 *
 * @example
 * ```ts ignore
 * apply(pass, act(pass, plan, next));
 * ```
 */
export function act(pass: Pass, plan: Plan, next: EvictionStatus): Step {
  const nowMs = pass.deps.clock.now();
  const send = sender(pass, nowMs);
  const confirms = send(confirmCalls(pass, plan), "confirmResize failed");
  const aborts = send(abortCalls(pass, plan), "abort failed");
  const forceCompletes = send(
    forceCompleteCalls(pass, plan),
    "force_complete failed",
  );
  const inFlight = plan.next.inFlight ?? [];
  return {
    status: next,
    record: {
      tracked: {
        servers: new Set(inFlight.map((e) => e.id)),
        migrations: new Set(inFlight.flatMap((e) => e.migrationId ?? [])),
      },
      issued: {
        starts: startAll(pass, plan, nowMs),
        confirms,
        aborts,
        forceCompletes,
      },
      marks: noteMarks(pass.state.marks, {
        before: pass.status,
        started: plan.start.length,
        ended: plan.done.length + plan.failed.length,
        nowMs,
      }),
    },
  };
}

/** Sends calls, each noted with its answer's time (once.ts); a refusal wakes the drain to report it. */
function sender(
  pass: Pass,
  nowMs: number,
): (calls: readonly Call[], failed: string) => Map<string, ActionNote> {
  const { deps, ctx, log } = pass;
  return (calls, failed) =>
    new Map(calls.map(({ key, serverId, call, done, refused }) => {
      const note: ActionNote = { sentAtMs: nowMs, serverId };
      call().then(
        (r) => done(r.requestId),
        (err: unknown) => {
          log.warn({ serverId, err: errText(err) }, failed);
          const answer = answerOf(err);
          if (
            refused === undefined ||
            (answer.state !== "refused" && answer.state !== "conflict")
          ) return;
          note.refused = answer.message ?? errText(err);
          refused(note.refused);
          pass.state.woken = true;
          ctx.enqueue(EvictionKind, ctx.key);
        },
      ).finally(() => note.answeredAtMs = deps.clock.now());
      return [key, note];
    }));
}

function confirmCalls(pass: Pass, plan: Plan): Call[] {
  const { deps, ctx, log } = pass;
  return plan.confirmResize.map((id) => ({
    key: id,
    serverId: id,
    call: () => deps.nova.confirmResize(id, ctx.signal),
    done: (requestId) => {
      log.info({ serverId: id, requestId }, "resize confirmed");
      emit(pass, {
        type: "Normal",
        reason: "ResizeConfirmed",
        message: `confirmed the cold migration of ${id}`,
      });
    },
  }));
}

function abortCalls(pass: Pass, plan: Plan): Call[] {
  const { deps, ctx, log } = pass;
  return plan.abort.map((a) => ({
    key: a.migrationId,
    serverId: a.id,
    call: () => {
      deps.metrics.convergenceActions.inc({
        action: "abort",
        reason: a.reason,
      });
      return deps.nova.abortLiveMigration(
        a.id,
        Number(a.migrationId),
        ctx.signal,
      );
    },
    done: (requestId) => {
      log.warn(
        { serverId: a.id, migrationId: a.migrationId, requestId },
        "live migration aborted",
      );
      emit(pass, {
        type: "Warning",
        reason: "MigrationAborted",
        message: abortedNote(a),
      });
    },
    refused: (message: string) =>
      emit(pass, {
        type: "Warning",
        reason: "AbortRefused",
        message:
          `Nova refused to abort live migration ${a.migrationId} of ${a.id}: ${message}`,
      }),
  }));
}

function forceCompleteCalls(pass: Pass, plan: Plan): Call[] {
  const { deps, ctx, log } = pass;
  return plan.forceComplete.map((f) => ({
    key: f.migrationId,
    serverId: f.id,
    call: () => {
      deps.metrics.convergenceActions.inc({
        action: "force_complete",
        reason: f.reason,
      });
      emit(pass, {
        type: "Normal",
        reason: "ForceCompleteSent",
        message: forceCompleteNote(f),
      });
      return deps.nova.forceCompleteLiveMigration(
        f.id,
        Number(f.migrationId),
        ctx.signal,
      );
    },
    done: (requestId) =>
      log.info(
        { serverId: f.id, migrationId: f.migrationId, requestId },
        "force_complete accepted",
      ),
    refused: (message: string) =>
      emit(pass, {
        type: "Warning",
        reason: "ForceCompleteRefused",
        message:
          `Nova refused force_complete of live migration ${f.migrationId} of ${f.id}: ${message}; it is not sent again`,
      }),
  }));
}

function abortedNote(a: AbortAction): string {
  const what = `live migration ${a.migrationId} of ${a.id}`;
  if (a.reason === "stuck") return `aborted stuck ${what}`;
  if (a.reason === "requested") {
    return `aborted ${what} as ${
      a.requestedBy ?? "a person"
    } asked; it goes to the back of the host's queue`;
  }
  return `aborted ${what}: it did not converge within its policy's bound; it goes to the back of the host's queue and is retried alone`;
}

function forceCompleteNote(f: ForceCompleteAction): string {
  const why = f.reason === "requested"
    ? `as ${f.requestedBy ?? "a person"} asked`
    : "it did not converge within its policy's bound";
  return `sent force_complete for live migration ${f.migrationId} of ${f.id} (${why}): Nova switches it to post-copy where permitted, else pauses the VM until the copy ends; never sent twice`;
}

interface Call {
  /** Its note's key. */
  key: string;
  serverId: string;
  call: () => Promise<ActionResult>;
  done: (requestId: string | undefined) => void;
  /** Nova refused it (a 4xx but 429). */
  refused?: (message: string) => void;
}

/** The plan's starts, each noted; one `MigrationsStarted` Event, once all answered. */
function startAll(pass: Pass, plan: Plan, nowMs: number): IssuedStart[] {
  const { deps, log, state, ctx } = pass;
  const accepted: { id: string; kind: "live" | "cold" }[] = [];
  const answers: Promise<void>[] = [];
  const issuedAll: IssuedStart[] = [];
  for (const { id, kind, attempt, ramMb } of plan.start) {
    const issued: IssuedStart = {
      id,
      kind,
      state: "pending",
      issuedAtMs: nowMs,
    };
    issuedAll.push(issued);
    const call = kind === "live"
      ? deps.nova.liveMigrate(id, {}, ctx.signal)
      : deps.nova.coldMigrate(id, {}, ctx.signal);
    answers.push(call.then(
      (r) => {
        Object.assign(issued, answerOf(undefined), {
          answeredAtMs: deps.clock.now(),
        });
        state.startBackoff.delete(id);
        if (r.requestId !== undefined) issued.requestId = r.requestId;
        deps.metrics.started.inc({ kind });
        log.info(
          { serverId: id, kind, attempt, ramMb, requestId: r.requestId },
          "migration started",
        );
        accepted.push({ id, kind });
      },
      (err: unknown) => {
        Object.assign(issued, answerOf(err), {
          answeredAtMs: deps.clock.now(),
        });
        if (issued.state === "unknown") {
          noteUnanswered(pass, id, issued.message);
        } else state.startBackoff.delete(id);
        log.warn(
          { serverId: id, kind, answer: issued.state, err: issued.message },
          "migration start not accepted",
        );
        if (state.starts.get(id) === issued) {
          state.woken = true;
          ctx.enqueue(EvictionKind, ctx.key);
        }
      },
    ));
  }
  void Promise.allSettled(answers).then(() => {
    if (accepted.length === 0) return;
    emit(pass, {
      type: "Normal",
      reason: "MigrationsStarted",
      message: startedNote(accepted, countsOf(plan.next)),
      series: true,
    });
  });
  return issuedAll;
}

/** Backs off a VM whose start went unanswered, nothing charged; tells it at the report threshold. */
function noteUnanswered(
  pass: Pass,
  id: string,
  message: string | undefined,
): void {
  const { startBackoff } = pass.state;
  const count = (startBackoff.get(id)?.count ?? 0) + 1;
  startBackoff.set(id, {
    count,
    retryAtMs: pass.deps.clock.now() + unansweredBackoffMs(count),
  });
  if (count === UNANSWERED_REPORT_AFTER) {
    emit(pass, {
      type: "Warning",
      reason: "StartsUnanswered",
      message:
        `Nova is not taking starts: ${count} starts of ${id} in a row went unanswered (${
          message ?? "no answer"
        }); retrying with backoff up to ${UNANSWERED_BACKOFF_CAP_MS / 1000} s`,
    });
  }
}

/** The plan with its status showing convergence; a `Converging` Event when it turns False. */
export function convergenceShown(pass: Pass, plan: Plan): Plan {
  const { state } = pass;
  const refusals = [
    ...refusalsOf(state.forceCompletes, "ForceComplete"),
    ...refusalsOf(state.aborts, "Abort"),
  ];
  const next = withConvergence(plan.next, {
    notConverging: plan.notConverging,
    requestOutcomes: plan.requestOutcomes,
    refusals,
    now: new Date(pass.deps.clock.now()),
    generation: pass.ev.metadata?.generation,
  });
  const was = pass.status.conditions?.find((c) =>
    c.type === CONDITION_NOT_CONVERGING
  );
  const is = next.conditions?.find((c) => c.type === CONDITION_NOT_CONVERGING);
  if (was?.status === "True" && is?.status === "False") {
    emit(pass, {
      type: "Normal",
      reason: REASON_CONVERGING,
      message: is.message,
    });
  }
  return { ...plan, next };
}

function refusalsOf(
  notes: ReadonlyMap<string, ActionNote>,
  action: Refusal["action"],
): Refusal[] {
  return [...notes.values()].flatMap((n) =>
    n.refused === undefined || n.serverId === undefined ? [] : [{
      server: n.serverId,
      action,
      sentAtMs: n.sentAtMs,
      message: n.refused,
    }]
  );
}
