import assert from "node:assert/strict";
import { ProgressReads } from "./progress_reads.ts";
import type { CopyToWatch } from "./progress.ts";
import type { ServerMigration } from "../nova_types.ts";
import { PollingInformer } from "./informer.ts";
import { NovaLister } from "./lister.ts";
import {
  BASIC_SCENARIO,
  eventually,
  withSim,
} from "../../tests/harness/openstack_util.ts";

const S = 1000;

const record = (id: string, remaining: number): ServerMigration => ({
  id: Number(id),
  uuid: "u",
  serverUuid: `vm${id}`,
  status: "running",
  sourceCompute: "h",
  destCompute: "d",
  createdAt: "",
  updatedAt: null,
  memoryTotalBytes: 1000,
  memoryProcessedBytes: 1000 - remaining,
  memoryRemainingBytes: remaining,
  diskTotalBytes: null,
  diskProcessedBytes: null,
  diskRemainingBytes: null,
});

/** Nova's answers per migration id, in order; "gone" is a 404, "fail" a failed read. */
function reader(answers: Record<string, (number | "gone" | "fail")[]>) {
  const asked: string[] = [];
  const read = (_serverId: string, migrationId: string) => {
    asked.push(migrationId);
    const next = answers[migrationId]?.shift();
    if (next === "fail" || next === undefined) {
      return Promise.reject(new Error("503"));
    }
    return Promise.resolve({
      atMs: now,
      migration: next === "gone" ? undefined : record(migrationId, next),
    });
  };
  let now = 0;
  return {
    asked,
    read,
    at(ms: number) {
      now = ms;
    },
  };
}

const copy = (id: string, o: Partial<CopyToWatch> = {}): CopyToWatch => ({
  serverId: `vm${id}`,
  migrationId: id,
  sinceMs: 0,
  ...o,
});

Deno.test("ProgressReads: reads an untimed copy at its first figures, keeps the last progress, reads it again 10 s later, not before", async () => {
  const nova = reader({ "1": [800, 600] });
  const warned: string[] = [];
  const reads = new ProgressReads(nova.read, (_f, m) => warned.push(m));
  const need = (
    nowMs: number,
    copies = [copy("1"), copy("2", { sinceMs: nowMs })],
  ) => {
    nova.at(nowMs);
    return { copies, nowMs, intervalMs: 30 * S, nextLookAtMs: nowMs + 2 * S };
  };
  // untimed: read at its first figures (10 s into the copy), not before
  assert.equal((await reads.read("ev", need(9 * S))).size, 0);
  assert.deepEqual(nova.asked, []);
  const first = await reads.read("ev", need(10 * S));
  assert.deepEqual(nova.asked, ["1"]);
  assert.equal(first.get("vm1")?.remainingBytes, 800);
  const kept = await reads.read("ev", need(15 * S));
  assert.deepEqual(nova.asked, ["1"]);
  assert.equal(kept.get("vm1")?.remainingBytes, 800);
  // untimed: read again after 10 s (not an interval), so two reads time it
  const second = await reads.read("ev", need(20 * S));
  assert.deepEqual(nova.asked, ["1", "1"]);
  assert.equal(second.get("vm1")?.remainingBytes, 600);
  assert.equal(second.get("vm1")?.bytesPerSecond, 20);
  assert.equal(second.get("vm1")?.etaSeconds, 30);
  assert.deepEqual(warned, []);
});

Deno.test("ProgressReads: a failed read keeps the last progress and is tried an interval later; a 404 ends the copy's reads; a copy not in flight and a forgotten drain are forgotten", async () => {
  const nova = reader({ "1": [800, "fail", 500, "gone", 300] });
  const warned: string[] = [];
  const reads = new ProgressReads(nova.read, (_f, m) => warned.push(m));
  const need = (
    nowMs: number,
    // timed and overdue: read each interval
    copies = [copy("1", {
      decideAtMs: 900 * S,
      endAtMs: 20 * S,
      overdueAtMs: 25 * S,
    })],
  ) => {
    nova.at(nowMs);
    return { copies, nowMs, intervalMs: 30 * S, nextLookAtMs: nowMs + 2 * S };
  };
  await reads.read("ev", need(30 * S));
  assert.equal(reads.pendingReadAtMs("ev"), 60 * S);
  const failed = await reads.read("ev", need(60 * S));
  assert.equal(failed.get("vm1")?.remainingBytes, 800);
  assert.equal(warned.length, 1);
  assert.equal(reads.pendingReadAtMs("ev"), 90 * S);
  assert.equal(
    (await reads.read("ev", need(70 * S))).get("vm1")?.readAtMs,
    30 * S,
  );
  assert.equal(
    (await reads.read("ev", need(90 * S))).get("vm1")?.remainingBytes,
    500,
  );
  // Nova: no longer in progress. Its progress goes, and it is not read again.
  assert.equal((await reads.read("ev", need(120 * S))).size, 0);
  assert.equal(reads.pendingReadAtMs("ev"), undefined);
  await reads.read("ev", need(200 * S));
  assert.deepEqual(nova.asked, ["1", "1", "1", "1"]);
  // the copy left the drain's in-flight set: a later copy with its id is new
  await reads.read("ev", need(210 * S, []));
  const later = await reads.read(
    "ev",
    need(240 * S, [copy("1", { sinceMs: 200 * S })]),
  );
  assert.equal(later.get("vm1")?.remainingBytes, 300);
  assert.equal(later.get("vm1")?.lowestAtMs, 240 * S);
  assert.deepEqual(nova.asked, ["1", "1", "1", "1", "1"]);
  reads.forget("ev");
  assert.equal(reads.pendingReadAtMs("ev"), undefined);
});

Deno.test("ProgressReads: a progress interval of 0 reads nothing and asks for no look", async () => {
  const nova = reader({ "1": [800] });
  const reads = new ProgressReads(nova.read);
  const seen = await reads.read("ev", {
    copies: [copy("1", { overdueAtMs: 5 * S, decideAtMs: 10 * S })],
    nowMs: 100 * S,
    intervalMs: 0,
    nextLookAtMs: 102 * S,
  });
  assert.equal(seen.size, 0);
  assert.deepEqual(nova.asked, []);
  assert.equal(reads.pendingReadAtMs("ev"), undefined);
});

Deno.test("PollingInformer.progress against the simulator over HTTP: a copy due is read through the lister, one past Nova's end is dropped, a forgotten drain asks for no look", async () => {
  await withSim({ ...BASIC_SCENARIO, timeScale: 50 }, async ({ nova, sim }) => {
    const id = sim.state().servers.find((s) => s.name === "vm-b")?.id ?? "";
    sim.injectMigrationFault(id, "stuck");
    await nova.liveMigrate(id);
    let mid = "";
    await eventually(async () => {
      const [m] = await nova.listServerMigrations(id);
      mid = m?.status === "running" ? String(m.id) : "";
      return mid !== "";
    });
    let now = 1_000_000;
    const informer = new PollingInformer(
      new NovaLister(nova, { now: () => now }),
    );
    const need = () => ({
      copies: [{
        serverId: id,
        migrationId: mid,
        sinceMs: now - 31 * S,
        // timed and overdue: read each interval
        endAtMs: now - 5 * S,
        overdueAtMs: now - 2 * S,
        decideAtMs: now + 600 * S,
      }],
      nowMs: now,
      intervalMs: 30 * S,
      nextLookAtMs: now + 2 * S,
    });
    const read = await informer.progress("ev", need());
    const p = read.get(id);
    assert.equal(p?.migrationId, mid);
    assert.equal(p?.totalBytes, 8192 * 1024 * 1024);
    assert.ok((p?.remainingBytes ?? -1) > 0);
    assert.equal(p?.readAtMs, now);
    assert.equal(informer.progressDueAtMs("ev"), now + 30 * S);
    await nova.abortLiveMigration(id, Number(mid));
    now += 30 * S;
    assert.equal((await informer.progress("ev", need())).size, 0);
    assert.equal(informer.progressDueAtMs("ev"), undefined);
    now += 30 * S;
    await informer.progress("ev", need());
    assert.equal(
      sim.counters().calls["GET /compute/v2.1/servers/{id}/migrations/{mid}"],
      2,
      "not read again after Nova's 404",
    );
    informer.forget("ev");
    assert.equal(informer.progressDueAtMs("ev"), undefined);
  });
});
