import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { InformerMetrics } from "./informer_metrics.ts";

Deno.test("InformerMetrics: the hosts demoted now by reason, 0 for both from the start", async () => {
  const idle = new InformerMetrics(new Registry());
  const text = await idle.registry.metrics();
  assert.match(
    text,
    /^evictor_nova_notifications_hosts_demoted\{reason="deaf"\} 0$/m,
  );
  assert.match(
    text,
    /^evictor_nova_notifications_hosts_demoted\{reason="wrong"\} 0$/m,
  );
  let now = { wrong: 0, deaf: 1 };
  const m = new InformerMetrics(new Registry(), () => false, () => now);
  assert.match(
    await m.registry.metrics(),
    /^evictor_nova_notifications_hosts_demoted\{reason="deaf"\} 1$/m,
  );
  now = { wrong: 0, deaf: 0 };
  assert.match(
    await m.registry.metrics(),
    /^evictor_nova_notifications_hosts_demoted\{reason="deaf"\} 0$/m,
    "trusted again: 0",
  );
});
