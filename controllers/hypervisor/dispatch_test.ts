import assert from "node:assert/strict";
import type { HandlerContext } from "../../framework/handler.ts";
import { silentLogger } from "../../framework/logger.ts";
import type { Hypervisor } from "../../models/mod.ts";
import { type HypervisorPart, runParts } from "./dispatch.ts";

// runParts reads nothing of the context but the logger.
const ctx = { logger: silentLogger() } as unknown as HandlerContext<
  Hypervisor
>;

Deno.test("runParts: earliest requeue wins; no requeue when none asks", async () => {
  const parts = new Map<string, HypervisorPart>([
    ["a", () => Promise.resolve({ requeueAfterMs: 500 })],
    ["b", () => Promise.resolve()],
    ["c", () => Promise.resolve({ requeueAfterMs: 200 })],
  ]);
  assert.deepEqual(await runParts(parts, ctx), { requeueAfterMs: 200 });
  assert.equal(
    await runParts(new Map([["b", () => Promise.resolve()]]), ctx),
    undefined,
  );
});

Deno.test("runParts: a failing part does not stop the others; its error is rethrown", async () => {
  const ran: string[] = [];
  const parts = new Map<string, HypervisorPart>([
    ["sync", () => {
      ran.push("sync");
      return Promise.reject(new Error("placement down"));
    }],
    ["maintenance", () => {
      ran.push("maintenance");
      return Promise.resolve({ requeueAfterMs: 10 });
    }],
  ]);
  await assert.rejects(runParts(parts, ctx), /placement down/);
  assert.deepEqual(ran, ["sync", "maintenance"]);
});
