import assert from "node:assert/strict";
import fc from "fast-check";
import { compareMicroversions } from "./config.ts";
import {
  chooseComputeVersion,
  COMPUTE_CEILING,
  COMPUTE_FLOOR,
  MicroversionError,
  versionDocumentUrl,
} from "./microversion.ts";

Deno.test("chooseComputeVersion: the highest both support, a pin within Nova's range, refusals below", () => {
  const cases: {
    nova: [string, string];
    pinned?: string;
    want: string | RegExp;
  }[] = [
    { nova: ["2.1", "2.93"], want: "2.90" }, // Zed: ours is lower
    { nova: ["2.1", "2.88"], want: "2.88" }, // Wallaby
    { nova: ["2.1", "2.59"], want: "2.59" }, // exactly the floor
    { nova: ["2.60", "2.95"], want: "2.90" },
    {
      nova: ["2.1", "2.58"],
      want:
        /Nova supports compute microversions 2\.1 to 2\.58; evictor needs 2\.59 to 2\.90/,
    },
    {
      nova: ["2.91", "2.99"],
      want:
        /supports compute microversions 2\.91 to 2\.99; evictor needs 2\.59 to 2\.90/,
    },
    { nova: ["2.1", "2.88"], pinned: "2.79", want: "2.79" },
    { nova: ["2.1", "2.88"], pinned: "2.88", want: "2.88" },
    {
      nova: ["2.1", "2.88"],
      pinned: "2.90",
      want:
        /compute_api_version 2\.90 is not supported by Nova, which supports compute microversions 2\.1 to 2\.88/,
    },
  ];
  for (const c of cases) {
    const run = () =>
      chooseComputeVersion(
        { min: c.nova[0], max: c.nova[1] },
        c.pinned === undefined ? {} : { pinned: c.pinned },
      );
    if (typeof c.want === "string") {
      assert.equal(run(), c.want, JSON.stringify(c));
    } else {
      assert.throws(run, (e: unknown) => {
        assert.ok(e instanceof MicroversionError);
        assert.match(e.message, c.want as RegExp);
        return true;
      });
    }
  }
});

Deno.test("chooseComputeVersion: a malformed version is a RangeError naming it", () => {
  assert.throws(
    () => chooseComputeVersion({ min: "2.1", max: "" }),
    /Nova's version must look like "2.N", got ""/,
  );
  assert.throws(
    () => chooseComputeVersion({ min: "2.1", max: "2.90" }, { pinned: "3" }),
    /compute_api_version must look like "2.N", got "3"/,
  );
});

Deno.test("chooseComputeVersion (property): within both ranges and the highest such, or a refusal exactly when none exists", () => {
  const minor = fc.integer({ min: 1, max: 120 });
  fc.assert(
    fc.property(minor, minor, (a, b) => {
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      const nova = { min: `2.${lo}`, max: `2.${hi}` };
      const floor = Number(COMPUTE_FLOOR.split(".")[1]);
      const ceiling = Number(COMPUTE_CEILING.split(".")[1]);
      const best = Math.min(hi, ceiling);
      const possible = best >= Math.max(lo, floor);
      try {
        const v = chooseComputeVersion(nova);
        assert.ok(possible);
        assert.equal(v, `2.${best}`);
        assert.ok(compareMicroversions(v, nova.min) >= 0);
        assert.ok(compareMicroversions(v, COMPUTE_FLOOR) >= 0);
      } catch (e) {
        assert.ok(e instanceof MicroversionError);
        assert.ok(!possible);
      }
    }),
  );
});

Deno.test("versionDocumentUrl: the endpoint up to its major version, with a slash", () => {
  const cases: [string, string][] = [
    ["http://h/compute/v2.1", "http://h/compute/v2.1/"],
    ["http://h/compute/v2.1/", "http://h/compute/v2.1/"],
    ["https://h:8774/v2.1/6f0c2a", "https://h:8774/v2.1/"],
    ["https://h:8774/v2/6f0c2a", "https://h:8774/v2/"],
    ["https://h/nova", "https://h/nova/"],
  ];
  for (const [base, want] of cases) {
    assert.equal(versionDocumentUrl(base), want, base);
  }
});
