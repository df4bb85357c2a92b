import assert from "node:assert/strict";
import { allow, deny } from "../framework/admission.ts";
import {
  REQUESTED_AT_WINDOW_MS,
  validateActionRequests,
  withActionRequests,
} from "./eviction_requests.ts";

const NOW = Date.parse("2026-12-07T10:00:00Z");
const at = (ms: number) => new Date(NOW + ms).toISOString();
const item = (over: Record<string, unknown> = {}) => ({
  server: "vm-1",
  action: "ForceComplete",
  requestedBy: "alice",
  requestedAt: at(0),
  ...over,
});
const ev = (actions?: unknown[], status?: Record<string, unknown>) => ({
  metadata: { name: "n1" },
  spec: {
    hypervisor: "n1",
    reason: "kernel",
    ...(actions === undefined ? {} : { actions }),
  },
  ...(status === undefined ? {} : { status }),
});

Deno.test("validateActionRequests: append-only, the requesting user, near now, not finished", () => {
  const first = item();
  const cases: {
    name: string;
    newObj: unknown;
    oldObj: unknown;
    user?: string | undefined;
    /** undefined: allowed; else the exact refusal. */
    denied?: string;
  }[] = [
    { name: "no actions", newObj: ev(), oldObj: ev() },
    { name: "first request", newObj: ev([first]), oldObj: ev() },
    {
      name: "first request at CREATE",
      newObj: ev([first]),
      oldObj: undefined,
    },
    {
      name: "appended to earlier ones, even another user's",
      newObj: ev([item({ requestedBy: "bob" }), first]),
      oldObj: ev([item({ requestedBy: "bob" })]),
    },
    {
      name: "unchanged list (a finalizer removed, status written)",
      newObj: ev([item({ requestedBy: "bob", requestedAt: at(-3600_000) })]),
      oldObj: ev([item({ requestedBy: "bob", requestedAt: at(-3600_000) })]),
      user: "system:serviceaccount:evictor-system:evictor",
    },
    {
      name: "requestedAt at the edge of the window",
      newObj: ev([item({ requestedAt: at(-REQUESTED_AT_WINDOW_MS) })]),
      oldObj: ev(),
    },
    {
      name: "forged requestedBy",
      newObj: ev([item({ requestedBy: "bob" })]),
      oldObj: ev(),
      denied:
        'spec.actions[0]: requestedBy "bob" is not the requesting user "alice": a request names who made it',
    },
    {
      name: "no user in the request",
      newObj: ev([first]),
      oldObj: ev(),
      user: undefined,
      denied:
        'spec.actions[0]: requestedBy "alice" is not the requesting user "(none)": a request names who made it',
    },
    {
      name: "forged at CREATE",
      newObj: ev([item({ requestedBy: "bob" })]),
      oldObj: undefined,
      denied:
        'spec.actions[0]: requestedBy "bob" is not the requesting user "alice": a request names who made it',
    },
    {
      name: "an earlier item changed",
      newObj: ev([item({ action: "Abort" }), item({ server: "vm-2" })]),
      oldObj: ev([first]),
      denied:
        'spec.actions[0].action was changed from "ForceComplete" to "Abort": requests may only be appended, an earlier one is never changed',
    },
    {
      name: "an earlier item's user rewritten",
      newObj: ev([first]),
      oldObj: ev([item({ requestedBy: "bob" })]),
      denied:
        'spec.actions[0].requestedBy was changed from "bob" to "alice": requests may only be appended, an earlier one is never changed',
    },
    {
      name: "an earlier item removed",
      newObj: ev([first]),
      oldObj: ev([first, item({ server: "vm-2" })]),
      denied:
        "spec.actions[1] was removed: requests may only be appended (1 of 2 are left)",
    },
    {
      name: "the list removed",
      newObj: ev(),
      oldObj: ev([first]),
      denied:
        "spec.actions[0] was removed: requests may only be appended (0 of 1 are left)",
    },
    {
      name: "requestedAt too old",
      newObj: ev([item({ requestedAt: "2026-12-07T09:00:00Z" })]),
      oldObj: ev(),
      denied:
        'spec.actions[0]: requestedAt "2026-12-07T09:00:00Z" is not within 5 minutes of now (2026-12-07T10:00:00.000Z): expected the time of the request',
    },
    {
      name: "requestedAt in the future",
      newObj: ev([item({ requestedAt: at(REQUESTED_AT_WINDOW_MS + 1000) })]),
      oldObj: ev(),
      denied: `spec.actions[0]: requestedAt "${
        at(REQUESTED_AT_WINDOW_MS + 1000)
      }" is not within 5 minutes of now (2026-12-07T10:00:00.000Z): expected the time of the request`,
    },
    {
      name: "a request on a finished drain",
      newObj: ev([first], { finishedAt: "2026-12-07T09:30:00Z" }),
      oldObj: ev([], { finishedAt: "2026-12-07T09:30:00Z" }),
      denied:
        "spec.actions[0]: the drain finished at 2026-12-07T09:30:00Z: nothing is in flight to force-complete or abort",
    },
    {
      name: "a finished drain keeps its earlier requests",
      newObj: ev([item({ requestedBy: "bob" })], {
        finishedAt: "2026-12-07T09:30:00Z",
      }),
      oldObj: ev([item({ requestedBy: "bob" })], {
        finishedAt: "2026-12-07T09:30:00Z",
      }),
    },
  ];
  for (const c of cases) {
    const user = "user" in c ? c.user : "alice";
    const r = validateActionRequests(c.newObj, c.oldObj, user, NOW);
    if (c.denied === undefined) {
      assert.deepEqual(r, { allowed: true }, c.name);
    } else {
      assert.equal(r.allowed, false, c.name);
      assert.equal(!r.allowed && r.message, c.denied, c.name);
    }
  }
});

Deno.test("withActionRequests: joins its refusal to the object validator's, keeps warnings, skips DELETE", async () => {
  const request = (
    operation: "CREATE" | "UPDATE" | "DELETE",
    object: unknown,
  ) => ({
    uid: "1",
    operation,
    name: "n1",
    namespace: "",
    object,
    oldObject: operation === "UPDATE" ? ev() : undefined,
    userInfo: { username: "alice" },
    dryRun: false,
  });
  const forged = ev([item({ requestedBy: "bob" })]);
  const warned = withActionRequests(() => allow(["w"]), () => NOW);
  assert.deepEqual(await warned(request("UPDATE", ev([item()]))), {
    allowed: true,
    warnings: ["w"],
  });
  const r = await warned(request("UPDATE", forged));
  assert.equal(r.allowed, false);
  assert.deepEqual(r.warnings, ["w"]);
  const both = await withActionRequests(
    () => deny("spec.reason: bad"),
    () => NOW,
  )(request("CREATE", forged));
  assert.equal(
    !both.allowed && both.message,
    'spec.reason: bad | spec.actions[0]: requestedBy "bob" is not the requesting user "alice": a request names who made it',
  );
  assert.equal((await warned(request("DELETE", forged))).allowed, true);
});
