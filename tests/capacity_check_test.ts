/**
 * The capacity check against the Nova simulator's Placement: allocation
 * candidates, inventories and usages as Placement's API reference defines
 * them at microversion 1.39.
 */
import { strict as assert } from "node:assert";
import { checkCapacity } from "../capacity/check.ts";
import { capacityVerdict } from "../capacity/verdict.ts";
import {
  BadRequestError,
  createOpenStackClients,
  loadCloudConfig,
  type OpenStackClients,
  PlacementClient,
} from "../openstack/mod.ts";
import { type ScenarioInput, startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  aggregatesOf,
  setAggregates,
} from "./harness/nova_sim/placement_capacity.ts";
import { KeystoneSession } from "../openstack/keystone.ts";

async function withSim(
  scenario: ScenarioInput,
  fn: (
    c: OpenStackClients,
    sim: Awaited<ReturnType<typeof startNovaSim>>,
  ) => Promise<void>,
): Promise<void> {
  const sim = await startNovaSim(scenario);
  const clients = createOpenStackClients(
    loadCloudConfig({
      sources: { env: sim.env(), readTextFile: () => undefined },
    }),
  );
  try {
    await fn(clients, sim);
  } finally {
    clients.close();
    await sim.close();
  }
}

function vmsPerHost(report: Awaited<ReturnType<typeof checkCapacity>>) {
  return new Map([...report.vmsByHost].map(([h, v]) => [h, v.length]));
}

Deno.test("capacity: a host whose VMs fit is True", async () => {
  await withSim({
    hosts: [
      { name: "src", ramMb: 65536 },
      { name: "t1", ramMb: 32768 },
      { name: "t2", ramMb: 32768 },
    ],
    servers: [
      { name: "a", host: "src", ramMb: 16384 },
      { name: "b", host: "src", ramMb: 16384 },
      { name: "c", host: "src", ramMb: 16384 },
      { name: "used", host: "t1", ramMb: 8192 },
    ],
  }, async ({ nova, placement }) => {
    const report = await checkCapacity(nova, placement, [{ name: "src" }]);
    assert.equal(report.assignment.fits, true);
    const v = capacityVerdict({
      host: "src",
      vmsPerHost: vmsPerHost(report),
      unplaced: report.assignment.unplaced,
    });
    assert.equal(v.status, "True");
    assert.match(v.message, /^all 3 VMs fit on other hosts/);
  });
});

Deno.test("capacity: one VM too large for any other host is named", async () => {
  await withSim({
    hosts: [
      { name: "src", ramMb: 262144 },
      { name: "t1", ramMb: 65536 },
      { name: "t2", ramMb: 65536 },
    ],
    servers: [
      { name: "small", host: "src", ramMb: 4096 },
      { name: "huge", host: "src", ramMb: 131072 },
    ],
  }, async ({ nova, placement }) => {
    const report = await checkCapacity(nova, placement, [{ name: "src" }]);
    assert.equal(report.assignment.fits, false);
    assert.deepEqual(report.assignment.unplaced.map((u) => u.vm.name), [
      "huge",
    ]);
    assert.equal(report.assignment.unplaced[0]?.cause, "no_candidate");
    const v = capacityVerdict({
      host: "src",
      vmsPerHost: vmsPerHost(report),
      unplaced: report.assignment.unplaced,
    });
    assert.equal(v.status, "False");
    assert.match(v.message, /^1 of 2 VMs have no target: huge \(/);
    assert.match(v.message, /MEMORY_MB=131072/);
  });
});

Deno.test("capacity: two hosts of a wave never count the same free capacity twice", async () => {
  await withSim({
    hosts: [
      { name: "a", ramMb: 65536 },
      { name: "b", ramMb: 65536 },
      { name: "t", ramMb: 65536 },
    ],
    servers: [
      { name: "on-a", host: "a", ramMb: 40960 },
      { name: "on-b", host: "b", ramMb: 40960 },
    ],
  }, async ({ nova, placement }) => {
    // Each host alone fits on t (or on the other drained host, which a
    // wave excludes).
    for (const h of ["a", "b"]) {
      const alone = await checkCapacity(nova, placement, [{ name: h }]);
      assert.equal(alone.assignment.fits, true, h);
    }
    const wave = await checkCapacity(nova, placement, [
      { name: "a" },
      { name: "b" },
    ]);
    assert.equal(wave.assignment.fits, false);
    assert.equal(wave.assignment.unplaced.length, 1);
    assert.equal(wave.assignment.unplaced[0]?.cause, "no_room");
    assert.deepEqual(wave.assignment.unplaced[0]?.short, ["MEMORY_MB"]);
  });
});

Deno.test("capacity: a disabled host is no target (COMPUTE_STATUS_DISABLED)", async () => {
  await withSim({
    hosts: [{ name: "src", ramMb: 65536 }, { name: "t", ramMb: 65536 }],
    servers: [{ name: "vm", host: "src", ramMb: 4096 }],
  }, async ({ nova, placement }, sim) => {
    assert.equal(
      (await checkCapacity(nova, placement, [{ name: "src" }])).assignment
        .fits,
      true,
    );
    const t = sim.world.hosts.get("t");
    assert.ok(t !== undefined);
    sim.world.setService(t, "disabled", "maintenance", undefined);
    const after = await checkCapacity(nova, placement, [{ name: "src" }]);
    assert.equal(after.assignment.fits, false);
    assert.equal(after.assignment.unplaced[0]?.cause, "no_candidate");
  });
});

Deno.test("capacity: Placement answers candidates, inventories, usages and aggregates at 1.39", async () => {
  await withSim({
    hosts: [
      { name: "src", ramMb: 65536, traits: ["CUSTOM_GOLD"] },
      { name: "t1", ramMb: 32768, vcpus: 8 },
      { name: "t2", ramMb: 32768, traits: ["CUSTOM_GOLD"] },
    ],
    servers: [{ name: "on-t1", host: "t1", ramMb: 2048, vcpus: 2 }],
  }, async ({ placement }, sim) => {
    const t1 = sim.world.hosts.get("t1");
    const t2 = sim.world.hosts.get("t2");
    assert.ok(t1 !== undefined && t2 !== undefined);
    const inv = await placement.getInventories(t1.hypervisorId);
    assert.deepEqual(inv["VCPU"], {
      total: 8,
      reserved: 0,
      allocationRatio: 1,
      minUnit: 1,
      maxUnit: 8,
      stepSize: 1,
    });
    assert.deepEqual(await placement.getUsages(t1.hypervisorId), {
      VCPU: 2,
      MEMORY_MB: 2048,
      DISK_GB: 20,
    });
    const gold = await placement.allocationCandidates({
      resources: { MEMORY_MB: 1024, VCPU: 1 },
      required: ["CUSTOM_GOLD"],
    });
    assert.deepEqual(
      gold.allocationRequests.flatMap((r) => Object.keys(r)).sort(),
      [sim.world.hosts.get("src")?.hypervisorId, t2.hypervisorId].sort(),
    );
    assert.deepEqual(gold.providerSummaries[t2.hypervisorId]?.resources, {
      VCPU: { capacity: 64, used: 0 },
      MEMORY_MB: { capacity: 32768, used: 0 },
      DISK_GB: { capacity: 10240, used: 0 },
    });
    const notGold = await placement.allocationCandidates({
      resources: { MEMORY_MB: 1024 },
      forbidden: ["CUSTOM_GOLD"],
    });
    assert.deepEqual(
      notGold.allocationRequests.flatMap((r) => Object.keys(r)),
      [t1.hypervisorId],
    );
    // max_unit: no host offers 9 vCPUs in one allocation on t1.
    const big = await placement.allocationCandidates({
      resources: { VCPU: 9 },
      forbidden: ["CUSTOM_GOLD"],
    });
    assert.deepEqual(big.allocationRequests, []);
    // member_of: only providers in the aggregate.
    const agg = crypto.randomUUID();
    setAggregates(t2, [agg]);
    assert.deepEqual(await placement.getAggregates(t2.hypervisorId), [agg]);
    assert.deepEqual(aggregatesOf(t1), []);
    const inAgg = await placement.allocationCandidates({
      resources: { MEMORY_MB: 1 },
      memberOf: [[agg]],
    });
    assert.deepEqual(
      inAgg.allocationRequests.flatMap((r) => Object.keys(r)),
      [t2.hypervisorId],
    );
  });
});

Deno.test("capacity: forbidden traits before 1.22 are a 400, as in Placement", async () => {
  await withSim({ hosts: [{ name: "a" }] }, async (_clients, sim) => {
    const env = sim.env();
    const session = new KeystoneSession({
      authUrl: env["OS_AUTH_URL"] ?? "",
      auth: {
        type: "password",
        username: env["OS_USERNAME"] ?? "",
        password: env["OS_PASSWORD"] ?? "",
        userDomainName: env["OS_USER_DOMAIN_NAME"] ?? "Default",
        projectName: env["OS_PROJECT_NAME"] ?? "",
        projectDomainName: env["OS_PROJECT_DOMAIN_NAME"] ?? "Default",
      },
    });
    try {
      const old = new PlacementClient(session, { microversion: "1.21" });
      await assert.rejects(
        () =>
          old.allocationCandidates({
            resources: { MEMORY_MB: 1 },
            forbidden: ["COMPUTE_STATUS_DISABLED"],
          }),
        BadRequestError,
      );
    } finally {
      session.close();
    }
  });
});

Deno.test("capacity: flavor extra specs (traits, dedicated CPUs) reach Placement", async () => {
  await withSim({
    hosts: [
      { name: "src", ramMb: 262144, traits: ["CUSTOM_GOLD"] },
      { name: "gold", ramMb: 65536, traits: ["CUSTOM_GOLD"] },
      { name: "plain", ramMb: 65536 },
    ],
    servers: [
      {
        name: "wants-gold",
        host: "src",
        ramMb: 8192,
        extraSpecs: { "trait:CUSTOM_GOLD": "required" },
      },
      {
        name: "avoids-gold",
        host: "src",
        ramMb: 4096,
        extraSpecs: { "trait:CUSTOM_GOLD": "forbidden" },
      },
      {
        name: "pinned",
        host: "src",
        ramMb: 1024,
        extraSpecs: { "hw:cpu_policy": "dedicated" },
      },
    ],
  }, async ({ nova, placement }, sim) => {
    const id = (name: string) => sim.world.findServerByRef(name)?.id ?? "";
    const rp = (host: string) => sim.world.hosts.get(host)?.hypervisorId;
    const report = await checkCapacity(nova, placement, [{ name: "src" }]);
    const placed = report.assignment.placed;
    assert.equal(placed.get(id("wants-gold")), rp("gold"));
    assert.equal(placed.get(id("avoids-gold")), rp("plain"));
    // No simulated host has PCPU inventory.
    assert.deepEqual(
      report.assignment.unplaced.map((u) => [u.vm.name, u.cause]),
      [["pinned", "no_candidate"]],
    );
    assert.match(report.assignment.unplaced[0]?.why ?? "", /PCPU=1/);
  });
});

Deno.test("capacity: a host disabled from the start carries COMPUTE_STATUS_DISABLED", async () => {
  await withSim({
    hosts: [
      { name: "src", ramMb: 65536 },
      { name: "off", ramMb: 65536, enabled: false },
    ],
    servers: [{ name: "vm", host: "src", ramMb: 4096 }],
  }, async ({ nova, placement }, sim) => {
    const off = sim.world.hosts.get("off");
    assert.ok(off?.traits.includes("COMPUTE_STATUS_DISABLED"));
    const report = await checkCapacity(nova, placement, [{ name: "src" }]);
    assert.equal(report.assignment.unplaced[0]?.cause, "no_candidate");
  });
});
