import assert from "node:assert/strict";
import { Prng } from "./prng.ts";
import { parseScenario, type ScenarioInput } from "./scenario.ts";
import { ManualClock } from "./sim_clock.ts";
import { NovaFault, serverStatus, World } from "./world.ts";

function build(input: ScenarioInput, start = 1_700_000_000_000) {
  const clock = new ManualClock(start);
  const world = new World(
    parseScenario(input),
    clock,
    new Prng(parseScenario(input).seed),
  );
  const id = (name: string) => world.findServerByRef(name)?.id ?? "";
  const step = (ms: number) => {
    clock.advance(ms);
    world.advance();
  };
  return { world, clock, id, step };
}

const TWO_HOSTS: ScenarioInput = {
  seed: 3,
  timing: {
    jitter: 0,
    scheduleSeconds: 0,
    // these tests follow Nova's phases; the record's lag has its own test
    recordDelaySeconds: 0,
    prepareSeconds: 1,
    postSeconds: 1,
    liveMbPerSecond: 1000,
  },
  hosts: [{ name: "src", maxConcurrentLiveMigrations: 2 }, { name: "dst" }],
  servers: [
    { name: "v1", host: "src", ramMb: 10_000 },
    { name: "v2", host: "src", ramMb: 20_000 },
    { name: "v3", host: "src", ramMb: 30_000 },
    { name: "v4", host: "src", ramMb: 1000 },
  ],
};

Deno.test("world: a live migration's record is written by the conductor before anything of it happens", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    timing: { ...TWO_HOSTS.timing, recordDelaySeconds: 3, scheduleSeconds: 1 },
  });
  const m = world.liveMigrate(id("v1"), null);
  const s = world.findServerByRef("v1");
  // The API saved the task at once; the record is not listed for 3 s.
  assert.equal(s?.taskState, "migrating");
  assert.equal(m.visibleAt - world.now(), 3000);
  step(3900);
  assert.equal(m.status, "accepted", "scheduled only after the record");
  step(200);
  assert.equal(m.status, "preparing");
});

Deno.test("world: the per-host limit keeps extra live migrations queued", () => {
  const { world, id, step } = build(TWO_HOSTS);
  for (const n of ["v1", "v2", "v3", "v4"]) world.liveMigrate(id(n), null);
  step(0);
  const status = () => world.migrations.map((m) => m.status);
  assert.deepEqual(status(), ["preparing", "preparing", "queued", "queued"]);
  assert.equal(world.activeLiveMigrations("src"), 2);
  // Every server is MIGRATING, queued or not.
  for (const n of ["v1", "v2", "v3", "v4"]) {
    const s = world.findServerByRef(n);
    assert.equal(s && serverStatus(s.vmState, s.taskState), "MIGRATING");
  }
  // v1: 1 s prepare + 10 s copy + 1 s post = 12 s; then v3 starts.
  step(12_000);
  assert.deepEqual(status(), ["completed", "running", "preparing", "queued"]);
  assert.equal(world.findServerByRef("v1")?.host, "dst");
  step(100_000);
  assert.deepEqual(status(), [
    "completed",
    "completed",
    "completed",
    "completed",
  ]);
  for (const n of ["v1", "v2", "v3", "v4"]) {
    assert.equal(world.findServerByRef(n)?.host, "dst");
  }
});

Deno.test("world: live migration passes accepted -> preparing -> running -> completed, the server ACTIVE on the destination first (as real Zed)", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    timing: { ...TWO_HOSTS.timing, scheduleSeconds: 1 },
  });
  world.liveMigrate(id("v4"), null);
  const m = world.migrations[0];
  assert.ok(m);
  const seen = [m.status];
  let movedBeforeCompleted = false;
  for (let i = 0; i < 200; i++) {
    step(50);
    if (seen.at(-1) !== m.status) seen.push(m.status);
    const s = world.findServerByRef("v4");
    if (
      m.status === "running" && s?.host === "dst" && s.taskState === null
    ) movedBeforeCompleted = true;
  }
  assert.deepEqual(seen, ["accepted", "preparing", "running", "completed"]);
  assert.ok(movedBeforeCompleted);
  // accepted -> queued -> preparing happen at the same instant when a slot is free.
});

Deno.test("world: durations are proportional to RAM, jitter is bounded and seeded", () => {
  const input: ScenarioInput = {
    seed: 11,
    timing: { jitter: 0.2, liveMbPerSecond: 500 },
    hosts: [{ name: "a", maxConcurrentLiveMigrations: 8 }, { name: "b" }],
    servers: [1000, 2000, 4000, 8000, 16000].map((ramMb, i) => ({
      name: `v${i}`,
      host: "a",
      ramMb,
    })),
  };
  const run = () => {
    const { world, id } = build(input);
    for (let i = 0; i < 5; i++) world.liveMigrate(id(`v${i}`), null);
    return world.migrations.map((m) => m.copyMs);
  };
  const copy = run();
  copy.forEach((ms, i) => {
    const nominal = ([1000, 2000, 4000, 8000, 16000][i] ?? 0) / 500 * 1000;
    assert.ok(
      ms >= nominal * 0.8 && ms <= nominal * 1.2,
      `${ms} vs ${nominal}`,
    );
  });
  assert.ok((copy[4] ?? 0) > (copy[0] ?? 0) * 8);
  assert.deepEqual(run(), copy, "same seed, same durations");
});

Deno.test("world: async live-migration failure leaves the VM ACTIVE on the source, migration error", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    faults: { liveMigrationFailure: ["v1"] },
  });
  world.liveMigrate(id("v1"), null);
  step(60_000);
  const m = world.migrations[0];
  assert.equal(m?.status, "error");
  const s = world.findServerByRef("v1");
  assert.ok(s);
  assert.equal(serverStatus(s.vmState, s.taskState), "ACTIVE");
  assert.equal(s.host, "src");
  assert.equal(s.fault, null, "no fault on an ACTIVE VM");
  // The fault was used up: the retry works.
  world.liveMigrate(id("v1"), null);
  step(60_000);
  assert.equal(world.migrations[1]?.status, "completed");
  assert.equal(world.acceptedMigrations.get(id("v1")), 2);
});

Deno.test("world: a VM that goes to ERROR in its copy carries no fault (as real Zed)", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    faults: { errorOnMigration: ["v2"] },
  });
  world.liveMigrate(id("v2"), null);
  step(60_000);
  const s = world.findServerByRef("v2");
  assert.equal(s?.vmState, "error");
  assert.equal(s?.fault, null);
  assert.equal(world.migrations[0]?.status, "error");
  assert.throws(
    () => world.liveMigrate(id("v2"), null),
    (e: unknown) =>
      e instanceof NovaFault && e.status === 409 &&
      /vm_state error/.test(e.message),
  );
});

Deno.test("world: a stuck migration stays running until aborted; abort frees the slot", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    hosts: [{ name: "src" }, { name: "dst" }],
    faults: { stuckMigration: ["v1"] },
  });
  world.liveMigrate(id("v1"), null);
  world.liveMigrate(id("v4"), null);
  step(3_600_000);
  assert.deepEqual(world.migrations.map((m) => m.status), [
    "running",
    "queued",
  ]);
  const m = world.migrations[0];
  assert.ok(m);
  assert.ok(world.memoryProgress(m, world.now()).remaining > 0);
  world.abortLiveMigration(id("v1"), m.id, 90);
  assert.equal(m.status, "cancelled");
  step(10_000);
  assert.equal(world.migrations[1]?.status, "completed");
});

Deno.test("world: a VM deleted mid-migration disappears and its migration ends in error", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    faults: { deleteDuringMigration: ["v1"] },
  });
  const vid = id("v1");
  world.liveMigrate(vid, null);
  step(60_000);
  assert.equal(world.findServerByRef("v1"), undefined);
  assert.equal(world.migrations[0]?.status, "error");
  assert.throws(
    () => world.liveMigrate(vid, null),
    (e: unknown) => e instanceof NovaFault && e.status === 404,
  );
  // Deleting at run time works too.
  world.liveMigrate(id("v2"), null);
  step(1500);
  world.deleteServer(id("v2"));
  assert.equal(world.migrations[1]?.status, "error");
});

Deno.test("world: cold migration ends in VERIFY_RESIZE until confirmResize", () => {
  const { world, id, step } = build({
    ...TWO_HOSTS,
    servers: [{ name: "off", host: "src", ramMb: 4000, status: "SHUTOFF" }],
  });
  const vid = id("off");
  assert.throws(
    () => world.liveMigrate(vid, null),
    (e: unknown) =>
      e instanceof NovaFault && e.status === 409 &&
      /vm_state stopped/.test(e.message),
  );
  world.coldMigrate(vid, null);
  const m = world.migrations[0];
  const s = world.findServerByRef("off");
  assert.ok(m && s);
  const seen: string[] = [];
  for (let i = 0; i < 80; i++) {
    const st = `${m.status}/${serverStatus(s.vmState, s.taskState)}`;
    if (seen.at(-1) !== st) seen.push(st);
    step(250);
  }
  assert.deepEqual(seen, [
    "pre-migrating/RESIZE",
    "migrating/RESIZE",
    "post-migrating/RESIZE",
    "finished/VERIFY_RESIZE",
  ]);
  step(3_600_000);
  assert.equal(serverStatus(s.vmState, s.taskState), "VERIFY_RESIZE");
  assert.equal(s.host, "dst");
  world.confirmResize(vid);
  assert.equal(m.status, "confirmed");
  assert.equal(serverStatus(s.vmState, s.taskState), "SHUTOFF");
  assert.throws(
    () => world.confirmResize(vid),
    (e: unknown) => e instanceof NovaFault && e.status === 409,
  );
});

Deno.test("world: disabled hosts receive no migrations; no room means error (live) or 400 (cold)", () => {
  const { world, id, step } = build({
    seed: 1,
    timing: { jitter: 0 },
    hosts: [
      { name: "src", maxConcurrentLiveMigrations: 4 },
      { name: "off", enabled: false, ramMb: 1_000_000 },
      { name: "small", ramMb: 6000 },
    ],
    servers: [
      { name: "a", host: "src", ramMb: 4000 },
      { name: "b", host: "src", ramMb: 4000 },
      { name: "c", host: "src", ramMb: 4000, status: "SHUTOFF" },
    ],
  });
  world.liveMigrate(id("a"), null);
  world.liveMigrate(id("b"), null);
  step(120_000);
  const [ma, mb] = world.migrations;
  assert.equal(ma?.dest, "small");
  assert.equal(ma?.status, "completed");
  // Only "small" is enabled and it is full now: NoValidHost, async.
  assert.equal(mb?.status, "error");
  assert.equal(mb?.dest, null);
  assert.equal(world.findServerByRef("b")?.host, "src");
  assert.equal(world.findServerByRef("b")?.taskState, null);
  assert.throws(
    () => world.coldMigrate(id("c"), null),
    (e: unknown) =>
      e instanceof NovaFault && e.status === 400 &&
      /No valid host/.test(e.message),
  );
  assert.ok(world.migrations.every((m) => m.dest !== "off"));
  // Admin-forced placement onto the disabled host is allowed.
  const forced = world.addServer({ name: "forced", host: "off", ramMb: 1000 });
  assert.equal(forced.host, "off");
  // Enabling it makes it a target.
  const off = world.hosts.get("off");
  assert.ok(off);
  world.setService(off, "enabled", undefined, undefined);
  world.liveMigrate(id("b"), null);
  step(120_000);
  assert.equal(world.migrations[2]?.dest, "off");
});

Deno.test("world: disabling a service sets COMPUTE_STATUS_DISABLED and bumps the generation", () => {
  const { world } = build(TWO_HOSTS);
  const h = world.hosts.get("src");
  assert.ok(h);
  world.setService(h, "disabled", "drain", undefined);
  assert.deepEqual(h.traits, ["COMPUTE_STATUS_DISABLED"]);
  assert.equal(h.rpGeneration, 2);
  assert.equal(h.disabledReason, "drain");
  world.setService(h, "enabled", undefined, undefined);
  assert.deepEqual(h.traits, []);
  assert.equal(h.disabledReason, null);
});

Deno.test("world: locked and busy servers are refused with 409", () => {
  const { world, id } = build({
    ...TWO_HOSTS,
    servers: [
      { name: "locked", host: "src", locked: true },
      { name: "deleting", host: "src", taskState: "deleting" },
      { name: "paused", host: "src", status: "PAUSED" },
    ],
  });
  assert.throws(() => world.liveMigrate(id("locked"), null), /is locked/);
  assert.throws(
    () => world.liveMigrate(id("deleting"), null),
    /task_state deleting/,
  );
  world.liveMigrate(id("paused"), null);
  assert.equal(world.acceptedMigrations.get(id("paused")), 1);
  assert.equal(world.acceptedMigrations.get(id("locked")), undefined);
});

Deno.test("world: scenario events add, delete and break servers at their virtual time", () => {
  const { world, step } = build({
    ...TWO_HOSTS,
    hosts: [{ name: "src" }, { name: "dst", enabled: false }],
    events: [
      { atSeconds: 10, addServer: { name: "late", host: "dst", ramMb: 512 } },
      { atSeconds: 20, deleteServer: "v1" },
      { atSeconds: 30, errorServer: "v2", message: "disk gone" },
    ],
  });
  step(9_000);
  assert.equal(world.findServerByRef("late"), undefined);
  step(1_000);
  assert.equal(
    world.findServerByRef("late")?.host,
    "dst",
    "admin-forced onto a disabled host",
  );
  step(10_000);
  assert.equal(world.findServerByRef("v1"), undefined);
  step(10_000);
  assert.equal(world.findServerByRef("v2")?.fault?.message, "disk gone");
});
