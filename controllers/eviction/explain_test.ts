import assert from "node:assert/strict";
import type { InstanceAction } from "../../openstack/mod.ts";
import { novaReasons, withReasons } from "./explain.ts";
import type { IssuedStart } from "./memory.ts";
import type { Plan } from "./plan.ts";

const AT = "2026-12-02T10:00:00Z";

function planFailing(...ids: string[]): Plan {
  return {
    failed: ids.map((id) => ({
      id,
      reason: `live-migration ${id.length} ended error`,
      attempts: 1,
      exhausted: false,
      transient: true,
    })),
    next: {
      failed: ids.map((id) => ({
        id,
        reason: `live-migration ${id.length} ended error`,
        attempts: 1,
        lastAttemptAt: AT,
      })),
    },
  } as unknown as Plan;
}

function action(details: string | null, result = "Error"): InstanceAction {
  return {
    action: "live-migration",
    instanceUuid: "vm",
    requestId: "req",
    startTime: null,
    updatedAt: null,
    message: result === "Error" ? "Error" : null,
    events: [{
      event: "conductor_live_migrate_instance",
      startTime: null,
      finishTime: null,
      result,
      details,
      traceback: null,
      host: "nova-conductor",
    }],
  };
}

function started(requestId?: string): IssuedStart {
  return {
    id: "x",
    kind: "live",
    state: "accepted",
    issuedAtMs: 0,
    ...(requestId === undefined ? {} : { requestId }),
  };
}

Deno.test("withReasons: appends Nova's reason to the pass's failure and the status entry, once", () => {
  const cases: Array<[string, Map<string, string>, string]> = [
    ["none known", new Map(), "live-migration 2 ended error"],
    ["other VM", new Map([["b", "x"]]), "live-migration 2 ended error"],
    [
      "known",
      new Map([["vm", "No valid host was found."]]),
      "live-migration 2 ended error: No valid host was found.",
    ],
  ];
  for (const [what, reasons, want] of cases) {
    const out = withReasons(planFailing("vm"), reasons);
    assert.equal(out.failed[0]?.reason, want, what);
    assert.equal(out.next.failed?.[0]?.reason, want, what);
  }
  const twice = withReasons(
    withReasons(planFailing("vm"), new Map([["vm", "why"]])),
    new Map([["vm", "why"]]),
  );
  assert.equal(twice.failed[0]?.reason, "live-migration 2 ended error: why");
});

Deno.test("novaReasons: one read per failure with a request id; a failed read or no details gives none", async () => {
  const reads: string[] = [];
  const answers: Record<string, () => Promise<InstanceAction>> = {
    "req-a": () => Promise.resolve(action("No valid host was found.")),
    "req-b": () => Promise.reject(new Error("503")),
    "req-c": () => Promise.resolve(action(null, "Success")),
  };
  const reasons = await novaReasons(
    planFailing("a", "b", "c", "d"),
    new Map([
      ["a", started("req-a")],
      ["b", started("req-b")],
      ["c", started("req-c")],
      ["d", started()],
    ]),
    (id, requestId) => {
      reads.push(`${id} ${requestId}`);
      return answers[requestId]!();
    },
  );
  assert.deepEqual([...reasons], [["a", "No valid host was found."]]);
  assert.deepEqual(reads.sort(), ["a req-a", "b req-b", "c req-c"]);
});
