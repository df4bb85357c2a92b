import assert from "node:assert/strict";
import { Registry } from "prom-client";
import {
  AUTH_FAILURES_METRIC,
  CREDENTIALS_REFUSED_METRIC,
  OpenStackAuthMetrics,
} from "./openstack_metrics.ts";

async function values(registry: Registry): Promise<[number, number]> {
  const text = await registry.metrics();
  const read = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    assert.ok(m, `${name} missing from:\n${text}`);
    return Number(m[1]);
  };
  return [read(AUTH_FAILURES_METRIC), read(CREDENTIALS_REFUSED_METRIC)];
}

Deno.test("openstack metrics: 0 once registered, then follow the outcomes", async () => {
  const m = new OpenStackAuthMetrics();
  const registry = new Registry();
  m.register(registry);
  assert.deepEqual(await values(registry), [0, 0]);
  m.observe({ ok: false, refused: true, failures: 1, retryInMs: 5_000 });
  m.observe({ ok: false, refused: true, failures: 2, retryInMs: 10_000 });
  assert.deepEqual(await values(registry), [2, 1]);
  m.observe({ ok: true });
  assert.deepEqual(await values(registry), [2, 0]);
  // an unreachable Keystone counts as a failure, not as refused credentials
  m.observe({ ok: false, refused: false, failures: 1, retryInMs: 5_000 });
  assert.deepEqual(await values(registry), [3, 0]);
});
