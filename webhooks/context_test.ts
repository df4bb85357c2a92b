import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import { policySettings } from "../limits/resolve.ts";
import { evictionContextFrom, policyContextFrom } from "./context.ts";

const EVICTIONS: Eviction[] = [
  {
    metadata: { name: "running" },
    spec: { hypervisor: "h1", reason: "r", maxConcurrentMigrations: 2 },
    status: { effectiveLimit: 2 },
  },
  {
    metadata: { name: "not-started" },
    spec: { hypervisor: "h2", reason: "r" },
  },
  {
    metadata: { name: "done" },
    spec: { hypervisor: "h3", reason: "r" },
    status: { effectiveLimit: 4, finishedAt: "2026-11-29T10:00:00Z" },
  },
  {
    metadata: {
      name: "done-deleting",
      deletionTimestamp: "2026-11-29T11:00:00Z",
    },
    spec: { hypervisor: "h4", reason: "r" },
    status: { finishedAt: "2026-11-29T10:00:00Z" },
  },
];
const traits = (name: string) => name === "h1" ? ["CUSTOM_A"] : undefined;

Deno.test("policyContextFrom: running drains with a limit, with traits", () => {
  assert.deepEqual(policyContextFrom(EVICTIONS, traits), {
    runningEvictions: [{
      name: "running",
      hypervisor: "h1",
      traits: ["CUSTOM_A"],
      effectiveLimit: 2,
      maxConcurrentMigrations: 2,
    }],
  });
});

Deno.test("evictionContextFrom: finished means finishedAt and not being deleted", () => {
  const settings = policySettings({
    maxConcurrentMigrations: 1,
    abortStuckMigrations: false,
  });
  const ctx = evictionContextFrom(EVICTIONS, traits, settings);
  assert.deepEqual(ctx.evictions, [
    { name: "running", hypervisor: "h1", finished: false, deleting: false },
    { name: "not-started", hypervisor: "h2", finished: false, deleting: false },
    { name: "done", hypervisor: "h3", finished: true, deleting: false },
    {
      name: "done-deleting",
      hypervisor: "h4",
      finished: false,
      deleting: true,
    },
  ]);
  assert.equal(ctx.settings, settings);
  assert.deepEqual(ctx.hypervisorTraits("h1"), ["CUSTOM_A"]);
});
