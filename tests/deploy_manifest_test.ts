/**
 * What the Deployment promises without a cluster: its memory request and
 * limit cover the whole operator's figures in bench/reports/framework.json
 * (request >= settled, limit >= 1.5x peak), and the binary has somewhere to
 * write under a read-only root filesystem.
 */
import assert from "node:assert/strict";
import { type Deployment, mebibytes } from "./harness/deployment_manifest.ts";
import { parse } from "yaml";

const ROOT = new URL("../", import.meta.url);

const manifestText = await Deno.readTextFile(
  new URL("manifests/manager/deployment.yaml", ROOT),
);
const deployment = parse(manifestText) as Deployment;
const manager = deployment.spec.template.spec.containers[0];

Deno.test("mebibytes reads the quantities a manifest may hold", () => {
  const table: [string, number][] = [
    ["256Mi", 256],
    ["1Gi", 1024],
    ["512Ki", 0.5],
    ["1048576", 1],
    ["1000k", 1e6 / 2 ** 20],
    ["200M", 200e6 / 2 ** 20],
  ];
  for (const [q, want] of table) assert.equal(mebibytes(q), want, q);
  assert.throws(() => mebibytes("256 MiB"), /256 MiB/);
});

Deno.test("the Deployment's memory covers the whole operator's measured RSS", async () => {
  const report = JSON.parse(
    await Deno.readTextFile(new URL("bench/reports/framework.json", ROOT)),
  ) as { peakRssMb?: number; settledRssMb?: number };
  const { peakRssMb, settledRssMb } = report;
  assert.ok(
    typeof peakRssMb === "number" && typeof settledRssMb === "number",
    "bench/reports/framework.json has peakRssMb and settledRssMb (npx deno task bench:framework)",
  );
  const request = mebibytes(manager?.resources?.requests?.["memory"] ?? "");
  const limit = mebibytes(manager?.resources?.limits?.["memory"] ?? "");
  assert.ok(
    request >= settledRssMb,
    `request ${request} MiB < settled ${settledRssMb}`,
  );
  assert.ok(
    limit >= 1.5 * peakRssMb,
    `limit ${limit} MiB < 1.5 x peak ${peakRssMb}`,
  );
  // and the webhook under hostile load on top of the operator's own peak
  const webhook = JSON.parse(
    await Deno.readTextFile(new URL("bench/reports/webhook.json", ROOT)),
  ) as { hostile?: { rssIdleMb?: number; rssPeakMb?: number } };
  const { rssIdleMb, rssPeakMb } = webhook.hostile ?? {};
  assert.ok(
    typeof rssIdleMb === "number" && typeof rssPeakMb === "number",
    "bench/reports/webhook.json has hostile.rssIdleMb and rssPeakMb (npx deno task bench:webhook)",
  );
  const hostilePeak = peakRssMb + rssPeakMb - rssIdleMb;
  assert.ok(
    limit >= hostilePeak,
    `limit ${limit} MiB < operator peak + webhook hostile growth ${hostilePeak}`,
  );
  // the manifest says where its figures come from, with the figures
  assert.match(manifestText, /bench\/reports\/framework\.json/);
  assert.ok(
    manifestText.includes(`${peakRssMb}`),
    "peak figure in the comment",
  );
  assert.ok(
    manifestText.includes(`${settledRssMb}`),
    "settled figure in the comment",
  );
});

Deno.test("under a read-only root filesystem the binary writes only to an emptyDir at /tmp", () => {
  assert.equal(manager?.securityContext?.readOnlyRootFilesystem, true);
  const tmp = manager?.volumeMounts?.find((m) => m.mountPath === "/tmp");
  assert.ok(tmp !== undefined, "/tmp is mounted");
  const volume = deployment.spec.template.spec.volumes.find((v) =>
    v.name === tmp.name
  );
  assert.ok(volume?.emptyDir !== undefined, "/tmp is an emptyDir");
});
