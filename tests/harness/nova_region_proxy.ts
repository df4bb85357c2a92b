/**
 * A loopback HTTP proxy in front of the lane's Nova that a Keystone region
 * of its own names as the compute endpoint, so an operator configured with
 * that region finds it in the catalog as it finds Nova. It records every
 * call, and can play an older Nova: with `maxMicroversion` it rewrites the
 * version documents to that maximum and answers a request above it with
 * Nova's own 406, as a cloud of that release does.
 *
 * @module
 */
import type { OpenStackCloud } from "./openstack.ts";

/** One call that went through the proxy. */
export interface ProxiedCall {
  /** When it came (ms). */
  at: number;
  method: string;
  /** Path and query. */
  path: string;
  /** The compute microversion asked for, if any. */
  microversion: string | undefined;
  /** The answer's status. */
  status: number;
}

/** A running proxy and its region. */
export interface NovaRegionProxy {
  /** The Keystone region whose compute endpoint is the proxy. */
  region: string;
  /** The proxy's compute endpoint, `http://127.0.0.1:PORT/v2.1`. */
  url: string;
  /** Every call so far. */
  calls: ProxiedCall[];
  /** The cloud's clouds.yaml with its clouds in this region. */
  cloudsYaml(): string;
  /** Removes the region's endpoints and the region, stops the proxy. */
  close(): Promise<void>;
}

/** Options of {@linkcode startNovaRegionProxy}. */
export interface NovaRegionProxyOptions {
  /** The region's name (unique in the cloud). */
  region: string;
  /** Play a Nova whose maximum compute microversion is this (e.g. "2.88"). */
  maxMicroversion?: string;
}

function versionParts(v: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function above(v: string, max: string): boolean {
  const a = versionParts(v);
  const b = versionParts(max);
  if (!a || !b) return false;
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

/** The microversion a request asks for (either header), else undefined. */
function askedVersion(headers: Headers): string | undefined {
  const modern = headers.get("openstack-api-version");
  if (modern) {
    const m = /compute\s+(\S+)/i.exec(modern);
    if (m) return m[1];
  }
  return headers.get("x-openstack-nova-api-version") ?? undefined;
}

/** Rewrites the maximum in a version document (`version` or `versions`). */
function capVersionDocument(text: string, max: string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return text;
  }
  const cap = (v: unknown) => {
    const o = v as { id?: string; version?: string };
    if (o && o.id === "v2.1" && typeof o.version === "string") o.version = max;
  };
  const d = doc as { version?: unknown; versions?: unknown[] };
  if (d && typeof d === "object") {
    if (d.version) cap(d.version);
    if (Array.isArray(d.versions)) d.versions.forEach(cap);
  }
  return JSON.stringify(doc);
}

/**
 * Starts the proxy and registers region `options.region` with it as the
 * compute endpoint (Placement and Keystone as the cloud has them).
 */
export async function startNovaRegionProxy(
  cloud: OpenStackCloud,
  options: NovaRegionProxyOptions,
): Promise<NovaRegionProxy> {
  const max = options.maxMicroversion;
  if (max !== undefined && !versionParts(max)) {
    throw new RangeError(
      `maxMicroversion: got "${max}"; expected MAJOR.MINOR such as 2.88`,
    );
  }
  const target = new URL(cloud.endpoints.compute);
  const calls: ProxiedCall[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const asked = askedVersion(req.headers);
      const call: ProxiedCall = {
        at: Date.now(),
        method: req.method,
        path: `${url.pathname}${url.search}`,
        microversion: asked,
        status: 0,
      };
      calls.push(call);
      const headers = new Headers(req.headers);
      headers.delete("host");
      if (max !== undefined && asked !== undefined) {
        if (asked === "latest") {
          headers.set("openstack-api-version", `compute ${max}`);
          headers.set("x-openstack-nova-api-version", max);
        } else if (above(asked, max)) {
          call.status = 406;
          await req.body?.cancel();
          // Nova's own answer, with its numbers (see the contract tests).
          return Response.json({
            computeFault: {
              code: 406,
              message:
                `Version ${asked} is not supported by the API. Minimum is 2.1 and maximum is ${max}.`,
            },
          }, { status: 406 });
        }
      }
      const body = req.method === "GET" || req.method === "HEAD"
        ? undefined
        : await req.arrayBuffer();
      const upstream = await fetch(
        `${target.origin}${url.pathname}${url.search}`,
        { method: req.method, headers, ...(body ? { body } : {}) },
      );
      call.status = upstream.status;
      // Nova's links name its own address: rewrite them to the proxy's.
      let text = (await upstream.text()).replaceAll(target.origin, url.origin);
      const isVersionDocument = /^\/(v2(\.1)?\/?)?$/.test(url.pathname);
      if (max !== undefined && isVersionDocument) {
        text = capVersionDocument(text, max);
      }
      const out = new Headers(upstream.headers);
      out.delete("content-length");
      if (max !== undefined && asked === "latest") {
        out.set("openstack-api-version", `compute ${max}`);
        out.set("x-openstack-nova-api-version", max);
      }
      // A 204 (confirmResize, for one) has no body, and a Response refuses one.
      const noBody = [204, 205, 304].includes(upstream.status);
      return new Response(noBody ? null : text, {
        status: upstream.status,
        headers: out,
      });
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/v2.1`;
  const endpointIds: string[] = [];
  const ok = (what: string, r: { status: number; body: unknown }) => {
    if (r.status >= 300) {
      throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    return r.body as Record<string, unknown>;
  };
  try {
    ok(
      `region ${options.region}`,
      await cloud.call("identity", "POST", "/regions", {
        body: { region: { id: options.region } },
      }),
    );
    for (const type of ["compute", "placement", "identity"] as const) {
      const s = ok(
        `service ${type}`,
        await cloud.call("identity", "GET", `/services?type=${type}`),
      ) as { services: { id: string }[] };
      const serviceId = s.services[0]?.id;
      for (const iface of ["public", "internal", "admin"]) {
        const e = ok(
          `endpoint ${type}`,
          await cloud.call("identity", "POST", "/endpoints", {
            body: {
              endpoint: {
                service_id: serviceId,
                interface: iface,
                region_id: options.region,
                url: type === "compute" ? url : cloud.endpoints[type],
              },
            },
          }),
        ) as { endpoint: { id: string } };
        endpointIds.push(e.endpoint.id);
      }
    }
  } catch (error) {
    await server.shutdown();
    throw error;
  }
  return {
    region: options.region,
    url,
    calls,
    cloudsYaml: () =>
      cloud.cloudsYaml().replaceAll(
        `region_name: ${cloud.region}`,
        `region_name: ${options.region}`,
      ),
    close: async () => {
      for (const id of endpointIds) {
        await cloud.call("identity", "DELETE", `/endpoints/${id}`).catch(
          () => {},
        );
      }
      await cloud.call("identity", "DELETE", `/regions/${options.region}`)
        .catch(() => {});
      await server.shutdown();
    },
  };
}
