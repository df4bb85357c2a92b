import assert from "node:assert/strict";
import fc from "fast-check";
import {
  chooseRegion,
  type CloudRegion,
  expandRegions,
  wantedRegion,
} from "./cloud_region.ts";

Deno.test("cloud region: expandRegions reads names and {name, values} entries", () => {
  assert.deepEqual(
    expandRegions([
      "RegionOne",
      { name: "RegionTwo", values: { interface: "internal" } },
      { name: "RegionThree" },
    ]),
    [
      { name: "RegionOne", values: {} },
      { name: "RegionTwo", values: { interface: "internal" } },
      { name: "RegionThree", values: {} },
    ],
  );
  assert.deepEqual(expandRegions([]), []);
});

Deno.test("cloud region: expandRegions names the bad entry and what is expected", () => {
  const rows: [string, unknown, RegExp][] = [
    ["a string", "RegionOne", /^regions: got "RegionOne"; expected a list/],
    [
      "a mapping",
      { RegionOne: {} },
      /^regions: got a mapping; expected a list/,
    ],
    [
      "an empty name",
      ["A", ""],
      /^regions\[1\]: got ""; expected a region name or a mapping/,
    ],
    ["a number", [7], /^regions\[0\]: got 7; expected a region name/],
    [
      "no name",
      [{ values: {} }],
      /^regions\[0\]\.name: got nothing; expected the region's name/,
    ],
    [
      "a name that is no string",
      [{ name: 3 }],
      /^regions\[0\]\.name: got 3; expected/,
    ],
    [
      "values that are a list",
      ["A", { name: "B", values: ["interface"] }],
      /^regions\[1\]\.values: got \["interface"\]; expected a mapping of the cloud's settings for region "B"$/,
    ],
  ];
  for (const [what, raw, message] of rows) {
    assert.throws(
      () => expandRegions(raw),
      (e: unknown) => e instanceof TypeError && message.test(e.message),
      what,
    );
  }
});

Deno.test("cloud region: chooseRegion takes the one asked for, else the first", () => {
  const regions: CloudRegion[] = [
    { name: "RegionOne", values: {} },
    { name: "RegionTwo", values: { interface: "internal" } },
  ];
  const rows: [string | undefined, CloudRegion | undefined][] = [
    [undefined, regions[0]],
    ["RegionOne", regions[0]],
    ["RegionTwo", regions[1]],
    ["regiontwo", undefined], // names are case-sensitive, as in Keystone
    ["RegionThree", undefined],
  ];
  for (const [wanted, expected] of rows) {
    assert.equal(chooseRegion(regions, wanted), expected, String(wanted));
  }
  assert.equal(chooseRegion([], undefined), undefined);
});

Deno.test("cloud region: chooseRegion returns a region of the list with the name asked for, or none", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.string({ minLength: 1 }), { minLength: 1 }),
      fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
      (names, wanted) => {
        const regions = names.map((name) => ({ name, values: {} }));
        const got = chooseRegion(regions, wanted);
        if (wanted === undefined) return got === regions[0];
        return names.includes(wanted)
          ? got !== undefined && got.name === wanted && regions.includes(got)
          : got === undefined;
      },
    ),
  );
});

Deno.test("cloud region: wantedRegion orders flag, OS_REGION_NAME, region_name as openstackclient does", () => {
  const FLAG = "--os-region-name";
  const KEY = "/etc/openstack/clouds.yaml: clouds.c.region_name";
  const rows: [
    string,
    string | undefined,
    string | undefined,
    string | undefined,
    { value: string | undefined; label: string },
  ][] = [
    // name, flag, OS_REGION_NAME, region_name, wanted
    ["all three: the flag", "F", "E", "R", { value: "F", label: FLAG }],
    ["env over file", undefined, "E", "R", {
      value: "E",
      label: "OS_REGION_NAME",
    }],
    ["file alone", undefined, undefined, "R", { value: "R", label: KEY }],
    ["flag over file", "F", undefined, "R", { value: "F", label: FLAG }],
    ["flag over env", "F", "E", undefined, { value: "F", label: FLAG }],
    ["env alone", undefined, "E", undefined, {
      value: "E",
      label: "OS_REGION_NAME",
    }],
    ["empty flag is unset", "", "E", "R", {
      value: "E",
      label: "OS_REGION_NAME",
    }],
    ["blank env is unset", undefined, " ", "R", { value: "R", label: KEY }],
    ["empty file is unset", undefined, undefined, "", {
      value: undefined,
      label: "OS_REGION_NAME",
    }],
    ["none", undefined, undefined, undefined, {
      value: undefined,
      label: "OS_REGION_NAME",
    }],
  ];
  for (const [name, flag, env, file, want] of rows) {
    assert.deepEqual(
      wantedRegion({
        flag: { value: flag, name: FLAG },
        env,
        file: { value: file, label: KEY },
      }),
      want,
      name,
    );
  }
  // without a cloud entry (OS_* variables only) and without a flag
  assert.deepEqual(wantedRegion({ env: "E" }), {
    value: "E",
    label: "OS_REGION_NAME",
  });
});
