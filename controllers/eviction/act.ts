/**
 * Act: issue the plan's starts, confirms and aborts. Each call is issued
 * and tracked on its own and none is awaited by the pass: a slow or lost
 * answer holds only its own VM's slot, never the others, and never delays
 * the next pass. A start's answer becomes a {@linkcode StartNote} in the
 * drain's memory that the next pass reads; an answer that needs action (a
 * refusal, a 409, no answer at all) wakes the drain at once.
 *
 * @module
 */

import type { Logger } from "../../framework/logger.ts";
import {
  ConflictError,
  errText,
  OpenStackError,
  UnavailableError,
} from "../../openstack/mod.ts";
import type { DrainState, IssuedStart } from "./memory.ts";
import type { EvictionMetrics } from "./metrics.ts";
import type { CountedNova } from "./nova_calls.ts";
import { isTransientRefusal } from "./nova_states.ts";
import type { StartNote } from "./observation.ts";
import type { Plan } from "./plan.ts";

/** An Event to record on the Eviction. */
export interface PendingEvent {
  /** Normal or Warning. */
  type: "Normal" | "Warning";
  /** CamelCase reason. */
  reason: string;
  /** Message. */
  message: string;
}

/** What acting needs. */
export interface ActDeps {
  /** Nova. */
  nova: CountedNova;
  /** Metrics (migrations started). */
  metrics: EvictionMetrics;
}

/** Where the answers go. */
export interface ActSinks {
  /** Records an Event (errors are the sink's business). */
  emit: (event: PendingEvent) => void;
  /** Runs the drain's next pass soon. */
  wake: () => void;
  /** Logger. */
  log: Logger;
}

/**
 * What Nova's answer to a start means: 202 accepted; 409 conflict (look at
 * the VM); another 4xx a definitive refusal (transient for "no valid
 * host"); anything else (timeout, reset, 5xx, an abort) unknown: Nova may
 * or may not have processed it, so only observation can tell.
 *
 * @example
 * ```ts
 * import { answerOf } from "./act.ts";
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
  // An UnavailableError (429, as the client types it) is no refusal: Nova
  // did not take the request on.
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
 * Issues the plan's starts, confirms and aborts without waiting for any of
 * them. `nowMs` is the controller clock, recorded as the starts' issue time.
 *
 * @example
 * ```ts ignore
 * actOnPlan(plan, state, deps, sinks, nowMs, signal);
 * ```
 */
export function actOnPlan(
  plan: Plan,
  state: DrainState,
  deps: ActDeps,
  sinks: ActSinks,
  nowMs: number,
  signal: AbortSignal,
): void {
  const { log, emit } = sinks;
  for (const s of plan.start) {
    const issued: IssuedStart = {
      id: s.id,
      kind: s.kind,
      state: "pending",
      issuedAtMs: nowMs,
    };
    state.starts.set(s.id, issued);
    const call = s.kind === "live"
      ? deps.nova.liveMigrate(s.id, signal)
      : deps.nova.coldMigrate(s.id, signal);
    call.then(
      (r) => {
        Object.assign(issued, answerOf(undefined));
        if (r.requestId !== undefined) issued.requestId = r.requestId;
        deps.metrics.started.inc({ kind: s.kind });
        log.info(
          {
            serverId: s.id,
            kind: s.kind,
            attempt: s.attempt,
            ramMb: s.ramMb,
            requestId: r.requestId,
          },
          "migration started",
        );
        emit({
          type: "Normal",
          reason: "MigrationStarted",
          message:
            `${s.kind} migration of ${s.id} started (attempt ${s.attempt}, ${s.ramMb} MB, request ${
              r.requestId ?? "unknown"
            })`,
        });
      },
      (err: unknown) => {
        Object.assign(issued, answerOf(err));
        log.warn(
          {
            serverId: s.id,
            kind: s.kind,
            answer: issued.state,
            err: issued.message,
          },
          "migration start not accepted",
        );
        if (state.starts.get(s.id) === issued) {
          state.woken = true;
          sinks.wake();
        }
      },
    );
  }
  for (const id of plan.confirmResize) {
    if (state.confirming.has(id)) continue;
    state.confirming.add(id);
    deps.nova.confirmResize(id, signal).then(
      (r) => {
        log.info({ serverId: id, requestId: r.requestId }, "resize confirmed");
        emit({
          type: "Normal",
          reason: "ResizeConfirmed",
          message: `confirmed the cold migration of ${id}`,
        });
      },
      (err: unknown) =>
        log.warn({ serverId: id, err: errText(err) }, "confirmResize failed"),
    ).finally(() => state.confirming.delete(id));
  }
  for (const a of plan.abort) {
    deps.nova.abortLiveMigration(a.id, Number(a.migrationId), signal).then(
      (r) => {
        log.warn(
          {
            serverId: a.id,
            migrationId: a.migrationId,
            requestId: r.requestId,
          },
          "stuck live migration aborted",
        );
        emit({
          type: "Warning",
          reason: "MigrationAborted",
          message: `aborted stuck live migration ${a.migrationId} of ${a.id}`,
        });
      },
      (err: unknown) =>
        log.warn({ serverId: a.id, err: errText(err) }, "abort failed"),
    );
  }
}
