import assert from "node:assert/strict";
import { Registry } from "prom-client";
import {
  ControllerRuntimeMetrics,
  controllerRuntimeResult,
  type FrameworkOutcome,
} from "./controller_runtime_metrics.ts";

Deno.test("controllerRuntimeResult maps the framework's outcomes onto controller-runtime's four results", () => {
  const table: [FrameworkOutcome, number | undefined, string][] = [
    ["success", undefined, "success"],
    ["requeue", 2000, "requeue_after"],
    ["requeue", 0, "requeue"],
    ["requeue", undefined, "requeue"],
    ["temporary_error", undefined, "error"],
    ["permanent_error", undefined, "error"],
    ["unavailable", undefined, "error"],
    ["error", 500, "error"],
  ];
  for (const [outcome, after, want] of table) {
    assert.equal(controllerRuntimeResult(outcome, after), want, outcome);
  }
});

Deno.test("ControllerRuntimeMetrics: controller-runtime's series, names and labels", async () => {
  const registry = new Registry();
  const m = new ControllerRuntimeMetrics(registry);
  m.started("pods", 3);
  const text0 = await registry.metrics();
  // every result exists at 0 once the controller starts, as initMetrics does
  for (const result of ["success", "error", "requeue", "requeue_after"]) {
    assert.ok(
      text0.includes(
        `controller_runtime_reconcile_total{controller="pods",result="${result}"} 0`,
      ),
      result,
    );
  }
  assert.ok(
    text0.includes(
      'controller_runtime_max_concurrent_reconciles{controller="pods"} 3',
    ),
  );
  m.working("pods", 1);
  m.working("pods", 1);
  m.working("pods", -1);
  m.reconciled("pods", "permanent_error", 0.02);
  m.reconciled("pods", "unavailable", 0.3);
  m.reconciled("pods", "requeue", 1.2, 1000);
  m.reconciled("pods", "success", 0.004);
  m.leading("lease-a", true);
  m.leading("lease-b", false);
  const text = await registry.metrics();
  const want = [
    'controller_runtime_active_workers{controller="pods"} 1',
    'controller_runtime_reconcile_total{controller="pods",result="error"} 2',
    'controller_runtime_reconcile_total{controller="pods",result="requeue_after"} 1',
    'controller_runtime_reconcile_total{controller="pods",result="success"} 1',
    'controller_runtime_reconcile_errors_total{controller="pods"} 2',
    'controller_runtime_terminal_reconcile_errors_total{controller="pods"} 1',
    'controller_runtime_reconcile_time_seconds_count{controller="pods"} 4',
    'controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="pods"} 1',
    'controller_runtime_reconcile_time_seconds_bucket{le="60",controller="pods"} 4',
    'leader_election_master_status{name="lease-a"} 1',
    'leader_election_master_status{name="lease-b"} 0',
    "# TYPE controller_runtime_reconcile_time_seconds histogram",
    "# TYPE leader_election_master_status gauge",
  ];
  for (const line of want) assert.ok(text.includes(line), `${line}\n${text}`);
});
