import assert from "node:assert/strict";
import { loadScenarioFile, parseScenario } from "./scenario.ts";

Deno.test("scenario: defaults are filled in", () => {
  const s = parseScenario({
    hosts: [{ name: "a" }],
    servers: [{ name: "v", host: "a" }],
  });
  assert.equal(s.hosts[0]?.maxConcurrentLiveMigrations, 1);
  assert.equal(s.hosts[0]?.enabled, true);
  assert.equal(s.servers[0]?.status, "ACTIVE");
  assert.equal(s.timeScale, 1);
  assert.equal(s.maxMicroversion, "2.96");
});

Deno.test("scenario: errors name the bad field", () => {
  const cases: [unknown, RegExp][] = [
    [{}, /^scenario: hosts: /],
    [{ hosts: [] }, /^scenario: hosts: /],
    [{ hosts: [{ name: "a", ramMb: -1 }] }, /^scenario: hosts\[0\]\.ramMb: /],
    [
      { hosts: [{ name: "a" }], servers: [{ name: "v", host: "b" }] },
      /^scenario: servers\[0\]\.host: unknown host "b"/,
    ],
    [
      { hosts: [{ name: "a" }], bogus: 1 },
      /^scenario: \(top level\): .*bogus|^scenario: bogus/,
    ],
    [
      { hosts: [{ name: "a", traits: ["lower"] }] },
      /^scenario: hosts\[0\]\.traits\[0\]: trait names/,
    ],
    [
      { hosts: [{ name: "a" }], faults: { liveMigrationFailure: ["ghost"] } },
      /^scenario: faults\.liveMigrationFailure\[0\]: unknown server "ghost"/,
    ],
    [
      { hosts: [{ name: "a" }], faults: { http: [{ status: 418 }] } },
      /^scenario: faults\.http\[0\]\.status: /,
    ],
  ];
  for (const [input, re] of cases) {
    assert.throws(() => parseScenario(input), (e: unknown) => {
      assert.ok(e instanceof TypeError);
      assert.match(e.message, re);
      return true;
    });
  }
});

Deno.test("scenario: the example file loads; a bad file names the file", async () => {
  const s = await loadScenarioFile(
    new URL("./scenarios/small.yaml", import.meta.url).pathname,
  );
  assert.ok(s.hosts.length >= 2);
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/bad.yaml`,
      "hosts:\n  - name: a\n    vcpus: many\n",
    );
    await assert.rejects(
      loadScenarioFile(`${dir}/bad.yaml`),
      /bad\.yaml: hosts\[0\]\.vcpus: /,
    );
    await assert.rejects(
      loadScenarioFile(`${dir}/missing.yaml`),
      /missing\.yaml: cannot read scenario file/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
