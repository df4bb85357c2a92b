/**
 * A cloud's `regions:` list in clouds.yaml, as openstacksdk reads it: the
 * region asked for (`--os-region-name`, else `OS_REGION_NAME`, else
 * `region_name`, openstackclient's order) must be one of
 * them, none asked for means the first, and a region's `values` override
 * the cloud's settings there.
 */
import assert from "node:assert/strict";
import { ConfigError, loadCloudConfig } from "./config.ts";

const FILE = "/etc/openstack/clouds.yaml";

function load(
  yaml: string,
  env: Record<string, string> = {},
  regionName?: string,
) {
  return loadCloudConfig({
    ...(regionName === undefined ? {} : { regionName }),
    sources: {
      env: { OS_CLOUD: "multi", ...env },
      homeDir: "/home/op",
      cwd: "/work",
      readTextFile: (p: string) => (p === FILE ? yaml : undefined),
    },
  });
}

function cloud(extra: string): string {
  return [
    "clouds:",
    "  multi:",
    "    auth:",
    "      auth_url: https://keystone.one/v3",
    "      application_credential_id: ac-1",
    "      application_credential_secret: s",
    "    interface: public",
    extra,
    "",
  ].join("\n");
}

const TWO = cloud([
  "    regions:",
  "      - RegionOne",
  "      - name: RegionTwo",
  "        values:",
  "          interface: internal",
  "          compute_api_version: '2.88'",
  "          auth:",
  "            auth_url: https://keystone.two/v3",
].join("\n"));

Deno.test("config regions: region_name chooses the second of two regions, with its values", () => {
  const c = load(
    TWO.replace("    regions:", "    region_name: RegionTwo\n    regions:"),
  );
  assert.equal(c.regionName, "RegionTwo");
  assert.equal(c.interface, "internal");
  assert.equal(c.computeApiVersion, "2.88");
  assert.equal(c.authUrl, "https://keystone.two/v3");
  // values merge into auth, they do not replace it
  assert.deepEqual(c.auth, {
    type: "v3applicationcredential",
    applicationCredentialId: "ac-1",
    applicationCredentialSecret: "s",
  });
});

Deno.test("config regions: OS_REGION_NAME chooses when the cloud names no region", () => {
  const c = load(TWO, { OS_REGION_NAME: "RegionTwo" });
  assert.equal(c.regionName, "RegionTwo");
  assert.equal(c.interface, "internal");
});

Deno.test("config regions: none asked for means the first of the list (openstacksdk), without the others' values", () => {
  const c = load(TWO);
  assert.equal(c.regionName, "RegionOne");
  assert.equal(c.interface, "public");
  assert.equal(c.authUrl, "https://keystone.one/v3");
  assert.equal(c.computeApiVersionSet, false);
});

Deno.test("config regions: a single region_name without a list is used as is", () => {
  assert.equal(
    load(cloud("    region_name: RegionNine")).regionName,
    "RegionNine",
  );
  assert.equal(load(cloud("    regions: []")).regionName, undefined);
  assert.equal(
    load(cloud("    regions: []"), { OS_REGION_NAME: "R" }).regionName,
    "R",
  );
});

Deno.test("config regions: a region not in the list names it and the cloud's regions", () => {
  const fromFile = TWO.replace(
    "    regions:",
    "    region_name: RegionThree\n    regions:",
  );
  assert.throws(
    () => load(fromFile),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message ===
        `${FILE}: clouds.multi.region_name: "RegionThree" is not a region of cloud "multi"; expected one of its regions: RegionOne, RegionTwo (names are case-sensitive)` &&
      e.where === `${FILE}`,
  );
  assert.throws(
    () => load(TWO, { OS_REGION_NAME: "regiontwo" }),
    /"regiontwo" is not a region of cloud "multi"; expected one of its regions: RegionOne, RegionTwo/,
  );
});

Deno.test("config regions: a malformed list names the file, the key and what an entry may be", () => {
  const rows: [string, RegExp][] = [
    [
      "    regions: RegionOne",
      /^\/etc\/openstack\/clouds\.yaml: clouds\.multi\.regions: got "RegionOne"; expected a list of entries, each a region name or a mapping \{name: \.\.\., values: \{\.\.\.\}\}$/,
    ],
    [
      "    regions:\n      - values: {interface: internal}",
      /^\/etc\/openstack\/clouds\.yaml: clouds\.multi\.regions\[0\]\.name: got nothing; expected the region's name/,
    ],
    [
      "    regions:\n      - name: R\n        values: {interface: 7}",
      /^\/etc\/openstack\/clouds\.yaml: clouds\.multi\.interface: /,
    ],
  ];
  for (const [extra, message] of rows) {
    assert.throws(
      () => load(cloud(extra)),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
      extra,
    );
  }
});

Deno.test("config regions: --os-region-name, then OS_REGION_NAME, then region_name choose (openstackclient's order)", () => {
  const named = TWO.replace(
    "    regions:",
    "    region_name: RegionOne\n    regions:",
  );
  const rows: [
    string,
    string,
    Record<string, string>,
    string | undefined,
    string,
    string,
  ][] = [
    // name, yaml, env, flag, region, interface (RegionTwo's values say internal)
    ["region_name alone", named, {}, undefined, "RegionOne", "public"],
    [
      "OS_REGION_NAME over region_name",
      named,
      {
        OS_REGION_NAME: "RegionTwo",
      },
      undefined,
      "RegionTwo",
      "internal",
    ],
    [
      "the flag over OS_REGION_NAME",
      named,
      {
        OS_REGION_NAME: "RegionTwo",
      },
      "RegionOne",
      "RegionOne",
      "public",
    ],
    [
      "the flag over region_name",
      named,
      {},
      "RegionTwo",
      "RegionTwo",
      "internal",
    ],
    [
      "an empty OS_REGION_NAME is unset",
      named,
      {
        OS_REGION_NAME: "",
      },
      undefined,
      "RegionOne",
      "public",
    ],
    [
      "nothing named: the first of the list",
      TWO,
      {},
      undefined,
      "RegionOne",
      "public",
    ],
  ];
  for (const [name, yaml, env, flag, region, iface] of rows) {
    const c = load(yaml, env, flag);
    assert.equal(c.regionName, region, name);
    assert.equal(c.interface, iface, name);
  }
  // without a regions list the name is used as is, in the same order
  const single = cloud("    region_name: RegionNine");
  assert.equal(load(single, { OS_REGION_NAME: "R8" }).regionName, "R8");
  assert.equal(load(single, { OS_REGION_NAME: "R8" }, "R7").regionName, "R7");
});

Deno.test("config regions: a region not in the list names where it was asked for", () => {
  assert.throws(
    () => load(TWO, { OS_REGION_NAME: "RegionTwo" }, "RegionSix"),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message ===
        `--os-region-name: "RegionSix" is not a region of cloud "multi"; expected one of its regions: RegionOne, RegionTwo (names are case-sensitive)`,
  );
  assert.throws(
    () => load(TWO, { OS_REGION_NAME: "RegionSix" }),
    (e: unknown) => e instanceof ConfigError && e.where === "OS_REGION_NAME",
  );
});
