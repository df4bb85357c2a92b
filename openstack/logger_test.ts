import assert from "node:assert/strict";
import pino from "pino";
import { BASIC_SCENARIO, withSim } from "../tests/harness/openstack_util.ts";
import { type Logger, silentLogger, urlForLog } from "./logger.ts";
import { KeystoneSession } from "./keystone.ts";
import { NovaClient } from "./nova.ts";

Deno.test("logger: a pino logger can be passed as is; secrets stay out of its output", async () => {
  const chunks: string[] = [];
  const logger: Logger = pino({ level: "debug" }, {
    write: (chunk: string) => {
      chunks.push(chunk);
    },
  });
  await withSim(BASIC_SCENARIO, async ({ sim }) => {
    const c = sim.credentials.password;
    const session = new KeystoneSession({
      authUrl: sim.authUrl,
      auth: { type: "password", ...c },
      logger,
    });
    const nova = new NovaClient(session);
    const id = sim.state().servers[0]?.id ?? "";
    await nova.liveMigrate(id);
    const token = (await session.token()).value;
    const text = chunks.join("");
    assert.match(text, /"msg":"Nova accepted action"/);
    assert.match(text, /"requestId":"req-/);
    assert.ok(!text.includes(c.password));
    assert.ok(!text.includes(token));
  });
});

Deno.test("logger: helpers", () => {
  silentLogger.info({}, "nothing");
  assert.equal(
    urlForLog("http://n/v2.1/servers/detail?host=a"),
    "http://n/v2.1/servers/detail",
  );
  assert.equal(urlForLog("http://n/v2.1/"), "http://n/v2.1/");
});
