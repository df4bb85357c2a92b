/**
 * A cloud of two regions, as one Keystone lists them: the simulator's
 * catalog offers RegionOne's Nova and Placement (its own) and RegionTwo's
 * (a second simulator, which accepts the first one's tokens). Through
 * loadCloudConfig and createOpenStackClients, as the operator and the
 * plugin use them: the region chosen (flag, else OS_REGION_NAME, else
 * region_name) is the Nova that answers, and a region the catalog does not
 * have is an error naming the ones it has.
 */
import assert from "node:assert/strict";
import { startNovaSim } from "../tests/harness/nova_sim/mod.ts";
import { createOpenStackClients } from "./client.ts";
import { loadCloudConfig } from "./config.ts";
import { EndpointNotFoundError } from "./keystone.ts";

/** The hosts Nova lists in the region `env` and the flag choose. */
async function hostsSeen(
  env: Record<string, string>,
  dir: string,
  regionFlag?: string,
): Promise<string[]> {
  const config = loadCloudConfig({
    ...(regionFlag === undefined ? {} : { regionName: regionFlag }),
    sources: { env, homeDir: dir, cwd: dir },
  });
  const clients = createOpenStackClients(config, {
    authBackoff: { initialMs: 1, maxMs: 1 },
    retry: { maxAttempts: 1 },
  });
  try {
    const services = await clients.nova.listComputeServices();
    return services.map((s) => s.host).sort();
  } finally {
    clients.close();
  }
}

Deno.test({
  name:
    "catalog regions: OS_REGION_NAME over region_name, the flag over both, an unknown region names the catalog's",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const one = await startNovaSim({
      region: "RegionOne",
      hosts: [{ name: "one-a" }, { name: "one-b" }],
    });
    const two = await startNovaSim({
      region: "RegionTwo",
      hosts: [{ name: "two-a" }],
    });
    const dir = await Deno.makeTempDir({ prefix: "evictor-regions-" });
    try {
      one.addCatalogRegion("RegionTwo", two);
      // clouds.yaml of the first simulator: region_name RegionOne
      await Deno.writeTextFile(
        `${dir}/clouds.yaml`,
        one.cloudsYaml({ cloud: "multi" }),
      );
      const cloud = { OS_CLOUD: "multi" };
      const R1 = ["one-a", "one-b"];
      const R2 = ["two-a"];
      const rows: [
        string,
        Record<string, string>,
        string | undefined,
        string[],
      ][] = [
        ["region_name alone", cloud, undefined, R1],
        [
          "OS_REGION_NAME over region_name",
          {
            ...cloud,
            OS_REGION_NAME: "RegionTwo",
          },
          undefined,
          R2,
        ],
        [
          "--os-region-name over OS_REGION_NAME",
          {
            ...cloud,
            OS_REGION_NAME: "RegionTwo",
          },
          "RegionOne",
          R1,
        ],
        ["--os-region-name over region_name", cloud, "RegionTwo", R2],
        [
          "OS_* variables alone",
          {
            ...one.env(),
            OS_REGION_NAME: "RegionTwo",
          },
          undefined,
          R2,
        ],
      ];
      for (const [name, env, flag, want] of rows) {
        assert.deepEqual(await hostsSeen(env, dir, flag), want, name);
      }

      for (
        const [env, flag] of [
          [{ ...cloud, OS_REGION_NAME: "RegionThree" }, undefined],
          [cloud, "RegionThree"],
        ] as const
      ) {
        await assert.rejects(
          () => hostsSeen(env, dir, flag),
          (e: unknown) =>
            e instanceof EndpointNotFoundError &&
            e.message ===
              'no compute endpoint with interface public in region "RegionThree" in the service catalog; the catalog has it in regions "RegionOne", "RegionTwo": expected OS_REGION_NAME (or region_name) naming one of them',
        );
      }
      // No region at all (OS_* variables without OS_REGION_NAME): the
      // catalog offers Nova in two regions, and none is guessed.
      const { OS_REGION_NAME: _r, ...noRegion } = one.env();
      await assert.rejects(
        () => hostsSeen(noRegion, dir),
        /in several regions \("RegionOne", "RegionTwo"\) and no region is set/,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
      await two.close();
      await one.close();
    }
  },
});
