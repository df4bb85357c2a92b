import assert from "node:assert/strict";
import type { OpenStackCloud } from "./openstack.ts";
import { startNovaRegionProxy } from "./nova_region_proxy.ts";

/** A cloud whose Keystone accepts the region and whose Nova is `nova`. */
function fakeCloud(novaUrl: string): OpenStackCloud {
  const call: OpenStackCloud["call"] = (_service, method, path) => {
    const body = path.startsWith("/services")
      ? { services: [{ id: "svc" }] }
      : path === "/endpoints" && method === "POST"
      ? { endpoint: { id: crypto.randomUUID() } }
      : {};
    return Promise.resolve({ status: 201, headers: new Headers(), body });
  };
  return {
    endpoints: {
      compute: `${novaUrl}/v2.1`,
      identity: "http://127.0.0.1:1/v3",
      placement: "http://127.0.0.1:1",
      image: "http://127.0.0.1:1",
      network: "http://127.0.0.1:1",
    },
    region: "RegionOne",
    cloudsYaml: () => "region_name: RegionOne\n",
    call,
  } as Partial<OpenStackCloud> as OpenStackCloud;
}

Deno.test("nova region proxy: a 204 passes with no body, a 200 with its body", async () => {
  const nova = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.body?.cancel();
      return req.method === "POST"
        ? new Response(null, { status: 204 })
        : Response.json({ servers: [] });
    },
  );
  const proxy = await startNovaRegionProxy(
    fakeCloud(`http://127.0.0.1:${nova.addr.port}`),
    { region: "Test" },
  );
  try {
    const confirm = await fetch(`${proxy.url}/servers/x/action`, {
      method: "POST",
      body: JSON.stringify({ confirmResize: null }),
    });
    assert.equal(confirm.status, 204);
    assert.equal(await confirm.text(), "");
    const list = await fetch(`${proxy.url}/servers/detail`);
    assert.deepEqual(await list.json(), { servers: [] });
    assert.deepEqual(proxy.calls.map((c) => [c.method, c.status]), [
      ["POST", 204],
      ["GET", 200],
    ]);
    assert.match(proxy.cloudsYaml(), /region_name: Test/);
  } finally {
    await proxy.close();
    await nova.shutdown();
  }
});
