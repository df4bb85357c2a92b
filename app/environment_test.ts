import assert from "node:assert/strict";
import { ENV_NAMES } from "./permissions.ts";
import { environmentNames, OPENSTACK_ENV_NAMES } from "./environment.ts";

Deno.test("every OpenStack variable the client reads is read by name", async () => {
  const source = await Deno.readTextFile(
    new URL("../openstack/config.ts", import.meta.url),
  );
  const used = [...new Set(source.match(/"OS_[A-Z_]+"/g) ?? [])]
    .map((s) => s.slice(1, -1)).sort();
  assert.deepEqual(used, [...OPENSTACK_ENV_NAMES].sort());
});

Deno.test("every variable read is allowed by the binary's permissions", () => {
  const allowed = (name: string) =>
    ENV_NAMES.some((p) =>
      p.endsWith("*") ? name.startsWith(p.slice(0, -1)) : p === name
    );
  for (const name of environmentNames()) {
    assert.ok(allowed(name), `${name} is read but not in ENV_NAMES`);
  }
});
