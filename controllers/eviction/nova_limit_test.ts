import assert from "node:assert/strict";
import { CONDITION_NOVA_LIMITED, withNovaLimit } from "./nova_limit.ts";

Deno.test("withNovaLimit: field and condition while known, False once Nova ran more, nothing before", () => {
  const now = new Date("2026-12-02T10:00:00Z");
  const known = withNovaLimit(
    { effectiveLimit: 4 },
    1,
    "h",
    now,
  );
  assert.equal(known.status.novaLiveMigrationLimit, 1);
  assert.equal(known.changed, true);
  const c = known.status.conditions?.find((x) =>
    x.type === CONDITION_NOVA_LIMITED
  );
  assert.equal(c?.status, "True");
  assert.equal(c?.reason, "NovaQueues");
  assert.equal(
    c?.message,
    "Nova runs at most 1 live migration(s) at a time from host h (nova.conf [DEFAULT] max_concurrent_live_migrations) and queued more; evictor starts no more than that here (its own limit: 4), leaving the rest of the cluster budget to other hosts",
  );
  const again = withNovaLimit(
    known.status,
    1,
    "h",
    now,
  );
  assert.equal(again.changed, false);
  const raised = withNovaLimit(again.status, undefined, "h", now);
  assert.equal(raised.status.novaLiveMigrationLimit, undefined);
  const off = raised.status.conditions?.find((x) =>
    x.type === CONDITION_NOVA_LIMITED
  );
  assert.equal(off?.status, "False");
  assert.equal(off?.reason, "LimitRaised");
  assert.equal(raised.changed, false);
  assert.deepEqual(
    withNovaLimit(raised.status, undefined, "h", now),
    { status: raised.status, changed: false },
    "False stays as it is",
  );
  assert.deepEqual(withNovaLimit({ effectiveLimit: 4 }, undefined, "h", now), {
    status: { effectiveLimit: 4 },
    changed: false,
  });
});
