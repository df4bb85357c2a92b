/**
 * One region is one region, on the real cloud: its Keystone gets two more
 * regions whose compute endpoints are loopback proxies in front of its Nova
 * (each counting the calls it carries), and a clouds.yaml with a `regions:`
 * list chooses one of them. The chosen region's Nova is the one the drain
 * uses; none chosen means the first of the list; a region the catalog has
 * no compute endpoint in is refused with the regions it has.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createOpenStackClients } from "../../openstack/client.ts";
import { loadCloudConfig } from "../../openstack/config.ts";
import { EndpointNotFoundError } from "../../openstack/keystone.ts";
import {
  type NovaRegionProxy,
  startNovaRegionProxy,
} from "../harness/nova_region_proxy.ts";
import type { OpenStackCloud } from "../harness/openstack.ts";
import { captureLogger } from "../harness/openstack_util.ts";
import { laneCloud } from "./contract_backends.ts";
import { available, evictingReason, evictionYaml, withLane } from "./lane.ts";

/**
 * The lane's clouds.yaml with `regions:` listing `names` (the last one's
 * values setting the internal interface) and `region_name: chosen` unless
 * none is chosen.
 */
function cloudsYamlWithRegions(
  cloud: OpenStackCloud,
  names: readonly string[],
  chosen: string | undefined,
): string {
  const last = names.length - 1;
  const lines = [
    ...(chosen === undefined ? [] : [`    region_name: ${chosen}`]),
    "    regions:",
    ...names.flatMap((name, i) =>
      i === last
        ? [
          `      - name: ${name}`,
          "        values:",
          "          interface: internal",
        ]
        : [`      - ${name}`]
    ),
  ];
  const yaml = cloud.cloudsYaml();
  assert.ok(yaml.includes(`    region_name: ${cloud.region}\n`));
  return yaml.replaceAll(
    `    region_name: ${cloud.region}\n`,
    lines.join("\n") + "\n",
  );
}

/** Clients for cloud `lane` of `yaml`, as the operator builds them. */
async function clientsFor(yaml: string, env: Record<string, string> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "evictor-regions-" });
  const file = `${dir}/clouds.yaml`;
  await Deno.writeTextFile(file, yaml);
  const config = loadCloudConfig({
    sources: {
      env: { OS_CLOUD: "lane", OS_CLIENT_CONFIG_FILE: file, ...env },
      homeDir: dir,
      cwd: dir,
    },
  });
  const clients = createOpenStackClients(config, { logger: captureLogger() });
  return {
    config,
    clients,
    close: async () => {
      clients.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Two regions beside the cloud's own, each a proxy to its Nova. */
async function withTwoRegions(
  fn: (
    cloud: OpenStackCloud,
    first: NovaRegionProxy,
    second: NovaRegionProxy,
  ) => Promise<void>,
): Promise<void> {
  const cloud = await laneCloud();
  const tag = crypto.randomUUID().slice(0, 6);
  const first = await startNovaRegionProxy(cloud, { region: `First${tag}` });
  try {
    const second = await startNovaRegionProxy(cloud, {
      region: `Second${tag}`,
    });
    try {
      await fn(cloud, first, second);
    } finally {
      await second.close();
    }
  } finally {
    await first.close();
  }
}

Deno.test({
  name:
    "lane: a clouds.yaml listing two regions with the second chosen drains through the second region's Nova and never calls the first's",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withTwoRegions(async (cloud, first, second) => {
      const yaml = cloudsYamlWithRegions(
        cloud,
        [first.region, second.region],
        second.region,
      );
      const host = "node002";
      await withLane(
        [{ name: "regional", host, size: "small" }],
        [host],
        [],
        async (lane) => {
          await lane.kubectl(
            ["create", "-f", "-"],
            evictionYaml(host, lane.labels, "second region"),
          );
          await evictingReason(lane, host, "Succeeded");
          const moved = await lane.b.nova.getServer(
            lane.b.servers.get("regional") as string,
          );
          assert.notEqual(moved.host, host);
        },
        { cloudsYaml: yaml },
      );
      const started = second.calls.filter((c) =>
        c.method === "POST" && /\/servers\/[^/]+\/action$/.test(c.path)
      );
      console.log(
        `lane regions: ${second.calls.length} calls through ${second.region} (${started.length} actions), ${first.calls.length} through ${first.region}`,
      );
      assert.ok(started.length >= 1, "the migration was not started there");
      assert.ok(
        second.calls.some((c) => c.path.includes("/os-migrations")),
        "the migrations were not read there",
      );
      assert.deepEqual(first.calls.map((c) => `${c.method} ${c.path}`), []);
    });
  },
});

Deno.test({
  name:
    "lane: with two regions listed and none chosen the first is used (openstacksdk); OS_REGION_NAME chooses the second; with none listed nor chosen the several regions are refused",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withTwoRegions(async (cloud, first, second) => {
      const names = [first.region, second.region];
      const count = (): [number, number] => [
        first.calls.length,
        second.calls.length,
      ];

      const byDefault = await clientsFor(
        cloudsYamlWithRegions(cloud, names, undefined),
      );
      try {
        assert.equal(byDefault.config.regionName, first.region);
        assert.equal(byDefault.config.interface, "public");
        assert.ok(
          (await byDefault.clients.nova.listComputeServices()).length > 0,
        );
        assert.ok(count()[0] > 0 && count()[1] === 0, `${count()}`);
      } finally {
        await byDefault.close();
      }

      const before = count();
      const byEnv = await clientsFor(
        cloudsYamlWithRegions(cloud, names, undefined),
        { OS_REGION_NAME: second.region },
      );
      try {
        assert.equal(byEnv.config.regionName, second.region);
        assert.equal(byEnv.config.interface, "internal");
        assert.ok((await byEnv.clients.nova.listComputeServices()).length > 0);
        const after = count();
        assert.equal(after[0], before[0], "the first region was called");
        assert.ok(after[1] > before[1], "the second region was not called");
      } finally {
        await byEnv.close();
      }

      // No region anywhere: three regions offer compute, none is guessed.
      const unset = await clientsFor(
        cloud.cloudsYaml().replaceAll(`    region_name: ${cloud.region}\n`, ""),
      );
      try {
        assert.equal(unset.config.regionName, undefined);
        await assert.rejects(
          unset.clients.nova.listComputeServices(),
          (e: unknown) => {
            assert.ok(e instanceof EndpointNotFoundError, String(e));
            assert.match(
              e.message,
              /in several regions \(.*\) and no region is set/,
            );
            for (const r of [cloud.region, first.region, second.region]) {
              assert.ok(e.message.includes(`"${r}"`), `${r}: ${e.message}`);
            }
            return true;
          },
        );
      } finally {
        await unset.close();
      }
    });
  },
});

Deno.test({
  name:
    "lane: a region the catalog has no compute endpoint in is refused with an error naming it and the regions that have one, and no Nova is called",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withTwoRegions(async (cloud, first, second) => {
      const bare = `Bare${crypto.randomUUID().slice(0, 6)}`;
      const made = await cloud.call("identity", "POST", "/regions", {
        body: { region: { id: bare } },
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      try {
        const yaml = cloudsYamlWithRegions(
          cloud,
          [cloud.region, first.region, second.region, bare],
          bare,
        );
        const c = await clientsFor(yaml);
        try {
          await assert.rejects(
            c.clients.nova.listComputeServices(),
            (e: unknown) => {
              assert.ok(e instanceof EndpointNotFoundError, String(e));
              console.log(`lane regions: ${e.message}`);
              assert.match(
                e.message,
                new RegExp(
                  `^no compute endpoint with interface internal in region "${bare}" in the service catalog; the catalog has it in regions `,
                ),
              );
              for (const r of [cloud.region, first.region, second.region]) {
                assert.ok(e.message.includes(`"${r}"`), `${r}: ${e.message}`);
              }
              return true;
            },
          );
          assert.deepEqual([first.calls.length, second.calls.length], [0, 0]);
        } finally {
          await c.close();
        }
      } finally {
        await cloud.call("identity", "DELETE", `/regions/${bare}`);
      }
    });
  },
});
