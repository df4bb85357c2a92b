import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { KubeClient } from "./client.ts";
import { restClientMetrics } from "./rest_client_metrics.ts";
import { metricSum } from "../tests/_monitoring.ts";

/**
 * A server with client-go's answers on fixed paths: an object, a missing
 * one, a conflict, an error, and a watch that sends one event and stays
 * open until the client leaves.
 */
function startServer() {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => {
      const { pathname, searchParams } = new URL(req.url);
      if (searchParams.get("watch") === "true") {
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(
              new TextEncoder().encode('{"type":"BOOKMARK","object":{}}\n'),
            );
          },
        });
        return new Response(body);
      }
      const status = Number(pathname.split("/").at(-1));
      return Response.json({ kind: "Status", message: "x" }, {
        status: Number.isInteger(status) && status >= 200 ? status : 200,
      });
    },
  );
}

Deno.test("rest client metrics: every request counted by code, method and host, and timed by verb and host", async () => {
  const server = startServer();
  const registry = new Registry();
  const host = `127.0.0.1:${server.addr.port}`;
  const client = await KubeClient.fromCredentials(
    { server: `http://${host}` },
    { requests: restClientMetrics(registry) },
  );
  try {
    await client.request("GET", "/api/v1/x/200");
    await client.request("GET", "/api/v1/x/200");
    await client.request("POST", "/api/v1/x/201", { body: {} });
    await assert.rejects(client.request("GET", "/api/v1/x/404"), /404/);
    await assert.rejects(client.request("PUT", "/api/v1/x/409"), /409/);
    await assert.rejects(client.request("PATCH", "/api/v1/x/500"), /500/);
    const stream = client.watch("/api/v1/x", {}, 5_000);
    const first = await stream.next();
    assert.equal((first.value as { type: string }).type, "BOOKMARK");
    await stream.return(undefined);
    const text = await registry.metrics();
    const requests = (code: string, method: string) =>
      metricSum(
        text,
        "rest_client_requests_total",
        `{code="${code}",method="${method}",host="${host}"}`,
      );
    assert.equal(requests("200", "GET"), 3, "two reads and the watch");
    assert.equal(requests("201", "POST"), 1);
    assert.equal(requests("404", "GET"), 1);
    assert.equal(requests("409", "PUT"), 1);
    assert.equal(requests("500", "PATCH"), 1);
    assert.equal(metricSum(text, "rest_client_requests_total"), 7);
    const timed = (verb: string) =>
      metricSum(
        text,
        "rest_client_request_duration_seconds_count",
        `{verb="${verb}",host="${host}"}`,
      );
    assert.equal(timed("GET"), 4);
    assert.equal(timed("POST") + timed("PUT") + timed("PATCH"), 3);
    const seconds = metricSum(text, "rest_client_request_duration_seconds_sum");
    // a loopback server answers in well under the client's 30 s timeout
    assert.ok(seconds > 0 && seconds < 7 * 30, `${seconds}`);
  } finally {
    client.close();
    await server.shutdown();
  }
});

Deno.test("rest client metrics: no answer is code <error>, and still timed", async () => {
  // A port where nothing listens: no answer at all.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const registry = new Registry();
  const client = await KubeClient.fromCredentials(
    { server: `http://127.0.0.1:${port}` },
    { requests: restClientMetrics(registry) },
  );
  try {
    await assert.rejects(client.request("DELETE", "/api/v1/x"));
    const text = await registry.metrics();
    assert.equal(
      metricSum(
        text,
        "rest_client_requests_total",
        `{code="<error>",method="DELETE",host="127.0.0.1:${port}"}`,
      ),
      1,
    );
    assert.equal(
      metricSum(text, "rest_client_request_duration_seconds_count"),
      1,
    );
  } finally {
    client.close();
  }
});
