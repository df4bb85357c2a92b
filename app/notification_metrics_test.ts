import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { NotificationMetrics } from "./notification_metrics.ts";

Deno.test("NotificationMetrics: received by type, malformed, dropped, up and reconnects", async () => {
  const m = new NotificationMetrics();
  const registry = new Registry();
  m.register(registry);
  const o = m.observer;
  o.received?.("instance.update");
  o.received?.("instance.update");
  o.received?.("compute_task.migrate_server.error");
  o.malformed?.();
  o.dropped?.("too_large");
  o.state?.("up");
  o.reconnect?.();
  let text = await registry.metrics();
  assert.match(
    text,
    /evictor_nova_notifications_received_total\{event_type="instance.update"\} 2/,
  );
  assert.match(
    text,
    /evictor_nova_notifications_received_total\{event_type="compute_task.migrate_server.error"\} 1/,
  );
  assert.match(text, /evictor_nova_notifications_malformed_total 1/);
  assert.match(
    text,
    /evictor_nova_notifications_dropped_total\{reason="too_large"\} 1/,
  );
  assert.match(text, /evictor_nova_notifications_up 1/);
  assert.match(text, /evictor_nova_notifications_reconnects_total 1/);
  o.state?.("down");
  text = await registry.metrics();
  assert.match(text, /evictor_nova_notifications_up 0/);
});
