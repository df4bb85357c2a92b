import assert from "node:assert/strict";
import { BASIC_SCENARIO, withSim } from "../tests/harness/openstack_util.ts";
import { BadRequestError, ConflictError, NotFoundError } from "./errors.ts";
import { PlacementClient } from "./placement.ts";

Deno.test("placement: getTraits returns the traits and generation; sends the microversion", async () => {
  await withSim(BASIC_SCENARIO, async ({ placement, sim, session }) => {
    const rp = sim.state().hosts[0]?.hypervisorId ?? "";
    const t = await placement.getTraits(rp);
    assert.deepEqual(t.traits, ["CUSTOM_GPU"]);
    assert.equal(t.generation, 1);
    const token = await session.token();
    const res = await fetch(
      `${sim.placementUrl}/resource_providers/${rp}/traits`,
      {
        headers: { "X-Auth-Token": token.value },
      },
    );
    // Without a microversion Placement speaks 1.0, which has no traits.
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(body.errors[0].status, 404);
  });
});

Deno.test("placement: putTraits with a stale generation is a Conflict with Placement's code", async () => {
  await withSim(BASIC_SCENARIO, async ({ placement, sim }) => {
    const rp = sim.state().hosts[0]?.hypervisorId ?? "";
    await placement.ensureCustomTrait("CUSTOM_DRAINING");
    const t = await placement.putTraits(
      rp,
      ["CUSTOM_GPU", "CUSTOM_DRAINING"],
      1,
    );
    assert.deepEqual(t.traits, ["CUSTOM_DRAINING", "CUSTOM_GPU"]);
    assert.equal(t.generation, 2);
    await assert.rejects(placement.putTraits(rp, [], 1), (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(e.code, "placement.concurrent_update");
      assert.match(e.message, /generation conflict/);
      return true;
    });
    await assert.rejects(
      placement.putTraits(rp, ["CUSTOM_UNKNOWN"], 2),
      (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.match(e.message, /No such trait\(s\): CUSTOM_UNKNOWN/);
        return true;
      },
    );
    await assert.rejects(
      placement.getTraits("00000000-0000-4000-8000-000000000000"),
      NotFoundError,
    );
  });
});

Deno.test("placement: setTraits retries on a generation conflict", async () => {
  await withSim(BASIC_SCENARIO, async ({ placement, sim }) => {
    const rp = sim.state().hosts[0]?.hypervisorId ?? "";
    await placement.ensureCustomTrait("CUSTOM_A");
    await placement.ensureCustomTrait("CUSTOM_B");
    let raced = false;
    const result = await placement.setTraits(rp, (current) => {
      if (!raced) {
        raced = true;
        // Someone else writes between our read and our write.
        const h = sim.world.hosts.get("node001");
        if (h) {
          h.traits = [...h.traits, "CUSTOM_B"].sort();
          h.rpGeneration++;
        }
      }
      return [...current, "CUSTOM_A"];
    });
    assert.deepEqual(result.traits, ["CUSTOM_A", "CUSTOM_B", "CUSTOM_GPU"]);
    assert.equal(
      sim.counters().calls["PUT /placement/resource_providers/{uuid}/traits"],
      2,
    );
    assert.equal(
      sim.counters().calls["GET /placement/resource_providers/{uuid}/traits"],
      2,
    );
  });
});

Deno.test("placement: setTraits gives up after maxConflictRetries", async () => {
  await withSim(BASIC_SCENARIO, async ({ session, sim }) => {
    const placement = new PlacementClient(session, { maxConflictRetries: 2 });
    const rp = sim.state().hosts[0]?.hypervisorId ?? "";
    await assert.rejects(
      placement.setTraits(rp, (current) => {
        const h = sim.world.hosts.get("node001");
        if (h) h.rpGeneration++;
        return current.filter((t) => t !== "CUSTOM_GPU");
      }),
      ConflictError,
    );
    assert.equal(
      sim.counters().calls["PUT /placement/resource_providers/{uuid}/traits"],
      2,
    );
  });
});

Deno.test("placement: findResourceProvider by name; bad trait names are TypeErrors", async () => {
  await withSim(BASIC_SCENARIO, async ({ placement, sim }) => {
    assert.equal(
      await placement.findResourceProvider("node002"),
      sim.state().hosts[1]?.hypervisorId,
    );
    assert.equal(await placement.findResourceProvider("nope"), undefined);
    await assert.rejects(
      placement.putTraits("x", ["lower"], 1),
      /trait names are \[A-Z0-9_\]/,
    );
    await assert.rejects(
      placement.ensureCustomTrait("HW_X"),
      /custom trait names are CUSTOM_/,
    );
  });
});
