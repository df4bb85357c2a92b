import assert from "node:assert/strict";
import fc from "fast-check";
import {
  ConflictError,
  errorForStatus,
  NotFoundError,
  OpenStackError,
  TimeoutError,
} from "../../openstack/mod.ts";
import { act, answerOf, convergenceShown } from "./phase_act.ts";
import { NovaClient } from "../../openstack/nova.ts";
import type { EvictionStatus } from "../../models/mod.ts";
import {
  BASIC_SCENARIO,
  eventually,
  type Harness,
  withSim,
} from "../../tests/harness/openstack_util.ts";
import { eviction, passFixture } from "../../tests/harness/pass_fixture.ts";
import { emptyPlan, entry } from "../../tests/harness/plan_fixtures.ts";
import { apply, type MutablePass } from "./pass.ts";
import type { ActionNote } from "./once.ts";
import type { Plan } from "./plan_types.ts";

Deno.test("answerOf: table", () => {
  const rows: Array<[string, unknown, string, boolean | undefined]> = [
    ["202", undefined, "accepted", undefined],
    [
      "409",
      new ConflictError("task_state migrating", { status: 409 }),
      "conflict",
      undefined,
    ],
    [
      "400 no valid host",
      new OpenStackError("No valid host was found.", { status: 400 }),
      "refused",
      true,
    ],
    [
      "400 other",
      new OpenStackError("Invalid input", { status: 400 }),
      "refused",
      false,
    ],
    ["404", new NotFoundError("gone", { status: 404 }), "refused", false],
    [
      "503",
      new OpenStackError("Service Unavailable", { status: 503 }),
      "unknown",
      undefined,
    ],
    ["500", new OpenStackError("boom", { status: 500 }), "unknown", undefined],
    ["timeout", new TimeoutError("timed out", {}), "unknown", undefined],
    ["reset", new TypeError("connection reset"), "unknown", undefined],
  ];
  for (const [name, err, state, transient] of rows) {
    const a = answerOf(err);
    assert.equal(a.state, state, name);
    assert.equal(a.transient, transient, name);
  }
});

Deno.test("answerOf keeps Nova's request id in the message", () => {
  const a = answerOf(
    new ConflictError("busy", { status: 409, requestId: "req-7" }),
  );
  assert.equal(a.message, "busy (request req-7)");
});

Deno.test("property: only a 4xx but 409 and 429 is a refusal; no answer or a 5xx is never one", () => {
  fc.assert(fc.property(
    fc.option(
      fc.oneof(
        fc.integer({ min: 400, max: 599 }),
        fc.constantFrom(409, 429),
      ),
      { nil: undefined },
    ),
    (status) => {
      // as the client throws them: typed by status
      const a = answerOf(
        status === undefined
          ? new OpenStackError("x", {})
          : errorForStatus(status, "x"),
      );
      const definitive = status !== undefined && status < 500 &&
        status !== 409 && status !== 429;
      assert.equal(a.state === "refused", definitive);
    },
  ));
});

const FORCE = "POST /compute/v2.1/servers/{id}/migrations/{mid}/action";

/** A live copy of `name` held unconverged by the simulator, running. */
async function heldCopy(
  h: Harness,
  name: string,
): Promise<{ id: string; migrationId: string }> {
  const id = h.sim.state().servers.find((s) => s.name === name)?.id ?? "";
  h.sim.injectMigrationFault(id, "stuck");
  await h.nova.liveMigrate(id);
  let migrationId = "";
  await eventually(async () => {
    const [m] = await h.nova.listServerMigrations(id);
    migrationId = String(m?.id ?? "");
    return m?.status === "running";
  });
  return { id, migrationId };
}

/** A pass of node001's drain over the simulator's Nova (answers within 300 ms). */
function simPass(h: Harness, status: EvictionStatus = {}) {
  const nova = new NovaClient(h.session, { timeoutMs: 300 });
  return passFixture(eviction("node001", "node001", status), {
    nova: {
      forceCompleteLiveMigration: nova.forceCompleteLiveMigration.bind(nova),
      abortLiveMigration: nova.abortLiveMigration.bind(nova),
    },
  });
}

/** Act on `plan` with its status shown, applied to the pass; the note of `migrationId` once answered. */
async function actOn(
  fx: ReturnType<typeof simPass>,
  plan: Plan,
  notes: "forceCompletes" | "aborts",
  migrationId: string,
): Promise<{ plan: Plan; note: ActionNote }> {
  const shown = convergenceShown(fx.pass, plan);
  apply(fx.pass as MutablePass, act(fx.pass, shown, shown.next));
  const note = fx.pass.state[notes].get(migrationId);
  assert.ok(note, "noted by migration id");
  await eventually(() => note.answeredAtMs !== undefined, 5_000, "answer");
  return { plan: shown, note };
}

/** Acts on a plan with the policy's force_complete of one copy, marked in its entry as the planner marks it. */
async function forceCompleteOnce(
  fx: ReturnType<typeof simPass>,
  id: string,
  migrationId: string,
): Promise<{ plan: Plan; note: ActionNote; sentAt: string }> {
  const sentAt = new Date(fx.clock.now()).toISOString();
  const inFlight = [entry(id, 0, { migrationId, forceCompleteSentAt: sentAt })];
  const acted = await actOn(
    fx,
    emptyPlan({
      forceComplete: [{ id, migrationId, reason: "timeout" }],
      next: { inFlight },
    }),
    "forceCompletes",
    migrationId,
  );
  return { ...acted, sentAt };
}

Deno.test("act: a policy's force_complete goes to Nova once, noted by migration id and shown in status", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async (h) => {
    const { id, migrationId } = await heldCopy(h, "vm-b");
    const fx = simPass(h);
    const { plan, note, sentAt } = await forceCompleteOnce(
      fx,
      id,
      migrationId,
    );
    assert.equal(h.sim.counters().calls[FORCE], 1);
    assert.equal(note.refused, undefined);
    assert.equal(note.serverId, id);
    assert.equal(fx.pass.state.woken, false);
    assert.equal(plan.next.inFlight?.[0]?.forceCompleteSentAt, sentAt);
    assert.deepEqual(fx.events.map((e) => e.reason), ["ForceCompleteSent"]);
    assert.match(
      fx.events[0]?.message ?? "",
      /live migration \d+ of .* \(it did not converge within its policy's bound\)/,
    );
    const text = await fx.pass.deps.metrics.registry.metrics();
    assert.match(
      text,
      /evictor_convergence_actions_total\{action="force_complete",reason="timeout"\} 1/,
    );
    // Nova acted: the copy ends on the other host
    await eventually(async () =>
      (await h.nova.listMigrations({ instanceUuid: id }))[0]?.status ===
        "completed"
    );
    // a pass that does not plan it sends nothing; the notes of a copy no
    // longer in flight are forgotten
    apply(
      fx.pass as MutablePass,
      act(fx.pass, emptyPlan(), {}),
    );
    assert.equal(h.sim.counters().calls[FORCE], 1);
    assert.equal(fx.pass.state.forceCompletes.size, 0);
  });
});

Deno.test("act: a force_complete whose answer is lost is not resent; the status keeps that it was sent", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async (h) => {
    const { id, migrationId } = await heldCopy(h, "vm-b");
    h.sim.injectHttpFault({
      method: "POST",
      path: "/servers/{id}/migrations/{mid}/action",
      dropResponse: true,
      count: 1,
    });
    const fx = simPass(h);
    const { plan, note, sentAt } = await forceCompleteOnce(
      fx,
      id,
      migrationId,
    );
    assert.equal(note.refused, undefined, "no answer is no refusal");
    assert.equal(fx.pass.state.woken, false);
    assert.equal(h.sim.counters().calls[FORCE], 1, "sent once");
    // what the planner's guard reads next pass: the status and the note
    assert.equal(plan.next.inFlight?.[0]?.forceCompleteSentAt, sentAt);
    assert.ok(fx.pass.state.forceCompletes.has(migrationId));
    await eventually(async () =>
      (await h.nova.listMigrations({ instanceUuid: id }))[0]?.status ===
        "completed"
    );
    assert.equal(h.sim.counters().calls[FORCE], 1);
  });
});

Deno.test("act: Nova's refusal of a person's force-complete or abort is told in an Event and marked Refused in status.actions", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async (h) => {
    const { id, migrationId } = await heldCopy(h, "vm-b");
    // the copy ends before the requests reach Nova
    await h.nova.abortLiveMigration(id, Number(migrationId));
    const inFlight = [entry(id, 0, { migrationId })];
    for (
      const [action, notes, reason] of [
        ["ForceComplete", "forceCompletes", "ForceCompleteRefused"],
        ["Abort", "aborts", "AbortRefused"],
      ] as const
    ) {
      const fx = simPass(h);
      const request = {
        server: id,
        action,
        requestedBy: "alice",
        requestedAt: "2026-01-01T00:59:00Z",
      };
      const { plan, note } = await actOn(
        fx,
        emptyPlan({
          ...(action === "ForceComplete"
            ? {
              forceComplete: [{
                id,
                migrationId,
                reason: "requested" as const,
                requestedBy: "alice",
              }],
            }
            : {
              abort: [{
                id,
                migrationId,
                reason: "requested" as const,
                requestedBy: "alice",
              }],
            }),
          requestOutcomes: [{ ...request, outcome: "Sent", message: "" }],
          next: { inFlight },
        }),
        notes,
        migrationId,
      );
      assert.equal(plan.next.actions?.[0]?.outcome, "Sent", action);
      assert.match(
        note.refused ?? "",
        /^Instance .* is in an invalid state for '(force_complete|abort live migration)' \(request req-/,
        action,
      );
      const told = fx.events.find((e) => e.reason === reason);
      assert.equal(told?.type, "Warning", action);
      assert.ok(told?.message.includes(note.refused ?? "-"), action);
      assert.equal(fx.pass.state.woken, true, action);
      assert.deepEqual(fx.enqueued, ["node001"], action);
      // the woken pass marks the request Refused with Nova's words, once
      const next = convergenceShown(
        { ...fx.pass, status: plan.next },
        emptyPlan({ next: plan.next }),
      ).next;
      assert.deepEqual(
        next.actions?.map((a) => [a.outcome, a.message]),
        [["Refused", note.refused]],
        action,
      );
    }
    assert.equal(h.sim.counters().calls[FORCE], 1, "never resent");
  });
});

Deno.test("convergenceShown: a Normal Converging Event when NotConverging turns False, none while it stays", () => {
  const stalled = {
    id: "vm",
    migrationId: "7",
    why: "completion" as const,
    sinceSeconds: 5,
    onTimeout: "Report" as const,
  };
  const inFlight = [entry("vm", 0, { migrationId: "7" })];
  const fx = passFixture(eviction("node001", "node001"));
  const first = convergenceShown(
    fx.pass,
    emptyPlan({ notConverging: [stalled], next: { inFlight } }),
  );
  assert.equal(
    first.next.conditions?.find((c) => c.type === "NotConverging")?.reason,
    "CompletionTimeout",
  );
  const still = passFixture(eviction("node001", "node001", first.next));
  convergenceShown(
    still.pass,
    emptyPlan({ notConverging: [stalled], next: { ...first.next, inFlight } }),
  );
  const ended = passFixture(eviction("node001", "node001", first.next));
  convergenceShown(
    ended.pass,
    emptyPlan({ next: { ...first.next, inFlight } }),
  );
  assert.deepEqual(
    [fx, still, ended].map((f) => f.events.map((e) => [e.type, e.reason])),
    [[], [], [["Normal", "Converging"]]],
  );
});
