/**
 * The simulator called exactly as gophercloud v2 calls Nova and Placement
 * for every call the reference Go operator
 * (cobaltcore-dev/openstack-hypervisor-operator) makes while draining a
 * host: the same paths and query strings, the same microversion headers
 * (`X-OpenStack-Nova-API-Version` and `OpenStack-API-Version` for compute,
 * only the latter for Placement), the status codes gophercloud accepts
 * (`OkCodes`), and every field gophercloud decodes, checked against the Go
 * type it decodes into (a JSON value of another type fails `json.Unmarshal`
 * there, and so fails here).
 *
 * Calls (operator file -> gophercloud function -> request):
 * - maintenance controller -> services.Update -> PUT /os-services/{id} (2.90)
 * - eviction controller -> hypervisors.GetExt{WithServers} ->
 *   GET /os-hypervisors/{id}?with_servers=true (2.90)
 * - eviction controller -> servers.Get -> GET /servers/{id} (2.90)
 * - eviction controller -> servers.LiveMigrate{BlockMigration:false} and
 *   servers.Migrate and servers.ConfirmResize -> POST /servers/{id}/action
 * - traits controller -> resourceproviders.GetTraits / UpdateTraits ->
 *   GET/PUT /resource_providers/{uuid}/traits (placement 1.39)
 * - offboarding's lookup -> hypervisors.List{HypervisorHostnamePattern,
 *   WithServers} -> GET /os-hypervisors/detail?hypervisor_hostname_pattern=..&with_servers=true (2.93)
 *
 * @module
 */

import assert from "node:assert/strict";
import type { ScenarioInput } from "./scenario.ts";
import type { NovaSim } from "./server.ts";
import { withSim } from "./test_client.ts";

/** A Go type a JSON value is decoded into. */
type GoType =
  | "string"
  | "int"
  | "bool"
  | "any"
  | "time" // time.Time: RFC 3339
  | "timeMilliNoZ" // gophercloud.JSONRFC3339MilliNoZ
  | { map: GoType } // map[string]T
  | { slice: GoType } // []T
  | { struct: Record<string, GoType> }
  | { custom: (v: unknown, at: string) => void }; // an UnmarshalJSON

function fail(at: string, want: string, v: unknown): never {
  throw new assert.AssertionError({
    message: `${at}: gophercloud cannot decode ${
      JSON.stringify(v)
    } into ${want}`,
  });
}

/** Decodes as Go's encoding/json does: null is always fine, else the type must fit. */
function decode(v: unknown, t: GoType, at: string): void {
  if (v === null || v === undefined) return;
  if (t === "any") return;
  if (t === "string" && typeof v !== "string") fail(at, "string", v);
  if (t === "int" && !(typeof v === "number" && Number.isInteger(v))) {
    fail(at, "int", v);
  }
  if (t === "bool" && typeof v !== "boolean") fail(at, "bool", v);
  if (t === "time") {
    if (
      typeof v !== "string" ||
      !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v)
    ) fail(at, "time.Time (RFC 3339)", v);
  }
  if (t === "timeMilliNoZ") {
    if (typeof v !== "string") fail(at, "JSONRFC3339MilliNoZ", v);
    if (v !== "" && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?$/.test(v)) {
      fail(at, "JSONRFC3339MilliNoZ (2006-01-02T15:04:05.999999)", v);
    }
  }
  if (typeof t !== "object") return;
  if ("custom" in t) return t.custom(v, at);
  if ("slice" in t) {
    if (!Array.isArray(v)) fail(at, "slice", v);
    v.forEach((x, i) => decode(x, t.slice, `${at}[${i}]`));
    return;
  }
  if (typeof v !== "object" || Array.isArray(v)) fail(at, "object", v);
  const o = v as Record<string, unknown>;
  if ("map" in t) {
    for (const [k, x] of Object.entries(o)) decode(x, t.map, `${at}.${k}`);
    return;
  }
  // Go matches keys case-insensitively.
  for (const [field, ft] of Object.entries(t.struct)) {
    const key = Object.keys(o).find((k) =>
      k.toLowerCase() === field.toLowerCase()
    );
    if (key !== undefined) decode(o[key], ft, `${at}.${field}`);
  }
}

/** An `any` id gophercloud turns into a string: int, float or string only. */
const ANY_ID: GoType = {
  custom: (v, at) => {
    if (typeof v !== "number" && typeof v !== "string") fail(at, "id", v);
  },
};

/** hypervisors.Hypervisor with its UnmarshalJSON. */
const HYPERVISOR: GoType = {
  custom: (v, at) => {
    decode(v, {
      struct: {
        current_workload: "int",
        status: "string",
        state: "string",
        disk_available_least: "int",
        host_ip: "string",
        free_ram_mb: "int",
        hypervisor_hostname: "string",
        hypervisor_type: "string",
        local_gb_used: "int",
        memory_mb: "int",
        memory_mb_used: "int",
        running_vms: "int",
        service: {
          custom: (s, sat) => {
            decode(s, {
              struct: { host: "string", disabled_reason: "string" },
            }, sat);
            // Service.UnmarshalJSON: the id must be a number or a string.
            ANY_ID.custom(
              (s as Record<string, unknown>)["id"] ?? "missing",
              `${sat}.id`,
            );
          },
        },
        servers: { slice: { struct: { name: "string", uuid: "string" } } },
        vcpus: "int",
        vcpus_used: "int",
      },
    }, at);
    const o = v as Record<string, unknown>;
    // cpu_info: a JSON string or an object, when present.
    const cpu = o["cpu_info"];
    if (cpu !== undefined && cpu !== null) {
      if (typeof cpu === "string") {
        if (cpu !== "") JSON.parse(cpu);
      } else if (typeof cpu !== "object" || Array.isArray(cpu)) {
        fail(`${at}.cpu_info`, "string or object", cpu);
      }
    }
    // hypervisor_version: int or float64, never absent (nil fails).
    if (typeof o["hypervisor_version"] !== "number") {
      fail(`${at}.hypervisor_version`, "int", o["hypervisor_version"]);
    }
    for (const k of ["free_disk_gb", "local_gb"]) {
      if (o[k] !== undefined && o[k] !== null && typeof o[k] !== "number") {
        fail(`${at}.${k}`, "int", o[k]);
      }
    }
    ANY_ID.custom(o["id"] ?? "missing", `${at}.id`);
    if (o["id"] === undefined) fail(`${at}.id`, "id", undefined);
  },
};

/** servers.Server with its UnmarshalJSON. */
const SERVER: GoType = {
  struct: {
    id: "string",
    tenant_id: "string",
    user_id: "string",
    name: "string",
    updated: "time",
    created: "time",
    hostid: "string",
    status: "string",
    progress: "int",
    accessIPv4: "string",
    accessIPv6: "string",
    image: {
      custom: (v, at) => {
        if (typeof v !== "string" && (typeof v !== "object" || v === null)) {
          fail(at, "map or string", v);
        }
      },
    },
    flavor: { map: "any" },
    addresses: { map: "any" },
    metadata: { map: "string" },
    links: { slice: "any" },
    key_name: "string",
    adminPass: "string",
    security_groups: { slice: { map: "any" } },
    "os-extended-volumes:volumes_attached": {
      slice: { struct: { id: "string" } },
    },
    fault: {
      struct: {
        code: "int",
        created: "time",
        details: "string",
        message: "string",
      },
    },
    tags: { slice: "string" },
    server_groups: { slice: "string" },
    "OS-EXT-SRV-ATTR:host": "string",
    "OS-EXT-SRV-ATTR:instance_name": "string",
    "OS-EXT-SRV-ATTR:hypervisor_hostname": "string",
    "OS-EXT-SRV-ATTR:reservation_id": "string",
    "OS-EXT-SRV-ATTR:launch_index": "int",
    "OS-EXT-SRV-ATTR:ramdisk_id": "string",
    "OS-EXT-SRV-ATTR:kernel_id": "string",
    "OS-EXT-SRV-ATTR:hostname": "string",
    "OS-EXT-SRV-ATTR:root_device_name": "string",
    "OS-EXT-SRV-ATTR:user_data": "string",
    "OS-EXT-STS:task_state": "string",
    "OS-EXT-STS:vm_state": "string",
    "OS-EXT-STS:power_state": "int",
    "OS-SRV-USG:launched_at": "timeMilliNoZ",
    "OS-SRV-USG:terminated_at": "timeMilliNoZ",
    "OS-DCF:diskConfig": "string",
    "OS-EXT-AZ:availability_zone": "string",
    locked: "bool",
    config_drive: {
      custom: (v, at) => {
        if (typeof v === "boolean") return;
        if (
          typeof v !== "string" ||
          ![
            "",
            "1",
            "t",
            "T",
            "TRUE",
            "true",
            "True",
            "0",
            "f",
            "F",
            "FALSE",
            "false",
            "False",
          ]
            .includes(v)
        ) fail(at, "ConfigDrive (bool or strconv.ParseBool string)", v);
      },
    },
  },
};

/** services.Service with its UnmarshalJSON. */
const SERVICE: GoType = {
  custom: (v, at) => {
    decode(v, {
      struct: {
        binary: "string",
        disabled_reason: "string",
        forced_down: "bool",
        host: "string",
        state: "string",
        status: "string",
        updated_at: "timeMilliNoZ",
        zone: "string",
      },
    }, at);
    ANY_ID.custom(
      (v as Record<string, unknown>)["id"] ?? "missing",
      `${at}.id`,
    );
  },
};

const SCENARIO: ScenarioInput = {
  seed: 21,
  timeScale: 1,
  timing: { jitter: 0, scheduleSeconds: 0, prepareSeconds: 0.05 },
  hosts: [
    { name: "node001", maxConcurrentLiveMigrations: 2 },
    { name: "node002" },
    { name: "node003" },
  ],
  servers: [
    {
      name: "vm-a",
      host: "node001",
      ramMb: 512,
      userData: "I2Nsb3VkLWNvbmZpZwo=",
    },
    { name: "vm-b", host: "node001", ramMb: 512, status: "SHUTOFF" },
  ],
};

/** A gophercloud ServiceClient at a microversion: headers as it sets them. */
function goClient(
  sim: NovaSim,
  token: string,
  type: "compute" | "placement",
  mv: string,
) {
  const base = type === "compute" ? sim.computeUrl : sim.placementUrl;
  return async (
    method: string,
    path: string,
    okCodes: number[],
    body?: unknown,
  ): Promise<{ status: number; json: unknown; headers: Headers }> => {
    const headers: Record<string, string> = {
      "X-Auth-Token": token,
      "Accept": "application/json",
      "User-Agent": "gophercloud/v2.9.0",
      "OpenStack-API-Version": `${type} ${mv}`,
    };
    if (type === "compute") headers["X-OpenStack-Nova-API-Version"] = mv;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    // ServiceClient.ServiceURL joins the endpoint and the parts with "/".
    const res = await fetch(`${base}/${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    assert.ok(
      okCodes.includes(res.status),
      `${method} ${path}: ${res.status} is not in gophercloud's OkCodes ${okCodes}: ${text}`,
    );
    return {
      status: res.status,
      headers: res.headers,
      json: text === "" ? undefined : JSON.parse(text),
    };
  };
}

Deno.test("gophercloud: every call of the reference operator's drain, as gophercloud makes it", async () => {
  await withSim(async (sim, token) => {
    const nova = goClient(sim, token, "compute", "2.90");
    const node001 = sim.state().hosts.find((h) => h.name === "node001");
    assert.ok(node001);

    // Maintenance: services.Update disables, then enables the service.
    const disabled = await nova("PUT", `os-services/${node001.serviceId}`, [
      200,
    ], {
      status: "disabled",
      disabled_reason: "Hypervisor CRD: spec.maintenance=manual",
    });
    decode((disabled.json as { service: unknown }).service, SERVICE, "service");
    assert.equal(
      (disabled.json as { service: { status: string } }).service.status,
      "disabled",
    );

    // Preflight: hypervisors.GetExt(id, GetOpts{WithServers: &true}).
    const hv = await nova(
      "GET",
      `os-hypervisors/${node001.hypervisorId}?with_servers=true`,
      [200],
    );
    assert.equal(hv.headers.get("openstack-api-version"), "compute 2.90");
    const h = (hv.json as { hypervisor: Record<string, unknown> }).hypervisor;
    decode(h, HYPERVISOR, "hypervisor");
    assert.equal(h["id"], node001.hypervisorId);
    assert.equal(h["status"], "disabled");
    assert.deepEqual(
      (h["servers"] as { uuid: string }[]).map((s) => s.uuid).sort(),
      [...node001.servers].sort(),
    );
    // 2.88 dropped the usage fields: the Go struct keeps its zero values.
    assert.ok(!("memory_mb_used" in h) && !("running_vms" in h));
    assert.equal(typeof h["uptime"], "string");

    // servers.Get of each VM, at 2.90.
    for (const id of node001.servers) {
      const got = await nova("GET", `servers/${id}`, [200]);
      const s = (got.json as { server: Record<string, unknown> }).server;
      decode(s, SERVER, "server");
      for (
        const k of [
          "OS-EXT-SRV-ATTR:kernel_id",
          "OS-EXT-SRV-ATTR:launch_index",
          "OS-EXT-SRV-ATTR:ramdisk_id",
          "OS-EXT-SRV-ATTR:reservation_id",
          "OS-EXT-SRV-ATTR:root_device_name",
          "OS-EXT-SRV-ATTR:user_data",
          "OS-EXT-SRV-ATTR:hostname",
        ]
      ) assert.ok(k in s, `servers.Get at 2.90 has ${k}`);
      assert.equal(s["OS-EXT-SRV-ATTR:launch_index"], 0);
      assert.match(
        String(s["OS-EXT-SRV-ATTR:reservation_id"]),
        /^r-[0-9a-z]{8}$/,
      );
      assert.equal(s["OS-EXT-SRV-ATTR:root_device_name"], "/dev/vda");
      assert.equal(s["host_status"], "MAINTENANCE", "the host is disabled");
    }
    const a = sim.world.findServerByRef("vm-a");
    const b = sim.world.findServerByRef("vm-b");
    assert.ok(a && b);
    const shownA = (await nova("GET", `servers/${a.id}`, [200])).json as {
      server: Record<string, unknown>;
    };
    assert.equal(
      shownA.server["OS-EXT-SRV-ATTR:user_data"],
      "I2Nsb3VkLWNvbmZpZwo=",
    );

    // servers.LiveMigrate(LiveMigrateOpts{BlockMigration: &false}): host
    // has no omitempty, so it is sent as null. POST OkCodes: 201, 202.
    await nova("POST", `servers/${a.id}/action`, [201, 202], {
      "os-migrateLive": { host: null, block_migration: false },
    });
    // servers.Migrate of the stopped VM.
    await nova("POST", `servers/${b.id}/action`, [201, 202], { migrate: null });
    // The operator polls servers.Get until the VM left; then confirms.
    await new Promise((r) => setTimeout(r, 3000));
    const moved = (await nova("GET", `servers/${b.id}`, [200])).json as {
      server: Record<string, unknown>;
    };
    decode(moved.server, SERVER, "server");
    assert.equal(moved.server["status"], "VERIFY_RESIZE");
    assert.notEqual(
      moved.server["OS-EXT-SRV-ATTR:hypervisor_hostname"],
      "node001",
    );
    await nova("POST", `servers/${b.id}/action`, [201, 202, 204], {
      confirmResize: null,
    });
    const live = (await nova("GET", `servers/${a.id}`, [200])).json as {
      server: Record<string, unknown>;
    };
    assert.equal(live.server["status"], "ACTIVE");
    assert.notEqual(
      live.server["OS-EXT-SRV-ATTR:hypervisor_hostname"],
      "node001",
    );

    // Empty now: with_servers=true at 2.75+ gives servers: [].
    const empty = await nova(
      "GET",
      `os-hypervisors/${node001.hypervisorId}?with_servers=true`,
      [200],
    );
    decode(
      (empty.json as { hypervisor: unknown }).hypervisor,
      HYPERVISOR,
      "hypervisor",
    );
    assert.deepEqual(
      (empty.json as { hypervisor: { servers: unknown } }).hypervisor.servers,
      [],
    );
    // A VM gone is a 404, which the operator checks with ResponseCodeIs.
    sim.deleteServer(a.id);
    const gone = await fetch(`${sim.computeUrl}/servers/${a.id}`, {
      headers: {
        "X-Auth-Token": token,
        "X-OpenStack-Nova-API-Version": "2.90",
        "OpenStack-API-Version": "compute 2.90",
      },
    });
    assert.equal(gone.status, 404);
    await gone.body?.cancel();

    // Maintenance ends: services.Update{Status: enabled, ForcedDown: &false}.
    const enabled = await nova(
      "PUT",
      `os-services/${node001.serviceId}`,
      [200],
      {
        status: "enabled",
        forced_down: false,
      },
    );
    decode((enabled.json as { service: unknown }).service, SERVICE, "service");

    // Traits: resourceproviders.GetTraits, then UpdateTraits (1.39).
    const placement = goClient(sim, token, "placement", "1.39");
    const traits = (await placement(
      "GET",
      `resource_providers/${node001.hypervisorId}/traits`,
      [200],
    )).json;
    decode(traits, {
      struct: {
        resource_provider_generation: "int",
        traits: { slice: "string" },
      },
    }, "traits");
    const t = traits as {
      resource_provider_generation: number;
      traits: string[];
    };
    const updated = (await placement(
      "PUT",
      `resource_providers/${node001.hypervisorId}/traits`,
      [200],
      {
        resource_provider_generation: t.resource_provider_generation,
        traits: [...t.traits, "HW_CPU_X86_AVX2"].sort(),
      },
    )).json as { traits: string[] };
    assert.ok(updated.traits.includes("HW_CPU_X86_AVX2"));

    // Lookup by name: hypervisors.List(ListOpts{pattern, WithServers}) at 2.93.
    const nova93 = goClient(sim, token, "compute", "2.93");
    const listed = await nova93(
      "GET",
      "os-hypervisors/detail?hypervisor_hostname_pattern=node002&with_servers=true",
      [200],
    );
    const hs = (listed.json as { hypervisors: unknown[] }).hypervisors;
    assert.equal(hs.length, 1);
    decode(hs[0], HYPERVISOR, "hypervisors[0]");
    const none = await fetch(
      `${sim.computeUrl}/os-hypervisors/detail?hypervisor_hostname_pattern=nosuch&with_servers=true`,
      {
        headers: {
          "X-Auth-Token": token,
          "X-OpenStack-Nova-API-Version": "2.93",
          "OpenStack-API-Version": "compute 2.93",
        },
      },
    );
    assert.equal(none.status, 404, "the operator maps 404 to ErrNoHypervisor");
    await none.body?.cancel();
  }, SCENARIO);
});

Deno.test("sim: GET /os-hypervisors/{id}: UUID from 2.53 (400 otherwise), 404 unknown, with_servers from 2.53", async () => {
  await withSim(async (sim, token) => {
    const get = async (path: string, mv: string) => {
      const res = await fetch(`${sim.computeUrl}/${path}`, {
        headers: {
          "X-Auth-Token": token,
          "OpenStack-API-Version": `compute ${mv}`,
        },
      });
      return {
        status: res.status,
        json: await res.json() as Record<string, Record<string, unknown>>,
      };
    };
    const bad = await get("os-hypervisors/1", "2.90");
    assert.equal(bad.status, 400);
    assert.equal(bad.json["badRequest"]?.["message"], "Invalid uuid 1");
    const unknown = "0b5e7c1a-1111-4222-8333-944455556666";
    const missing = await get(`os-hypervisors/${unknown}`, "2.90");
    assert.equal(missing.status, 404);
    assert.equal(
      missing.json["itemNotFound"]?.["message"],
      `Hypervisor with ID '${unknown}' could not be found.`,
    );
    // Before 2.53: integer ids, with_servers ignored, usage fields present.
    const old = await get("os-hypervisors/1?with_servers=true", "2.52");
    assert.equal(old.status, 200);
    const h = old.json["hypervisor"] ?? {};
    assert.equal(h["id"], 1);
    assert.equal(h["hypervisor_hostname"], "node001");
    assert.ok(!("servers" in h));
    assert.equal(h["running_vms"], 2);
    assert.deepEqual(h["cpu_info"], {}, "an object from 2.28");
    assert.equal((await get("os-hypervisors/abc", "2.52")).status, 404);
    // Without with_servers there is no servers key.
    const id = sim.state().hosts[0]?.hypervisorId;
    const plain = await get(`os-hypervisors/${id}`, "2.90");
    assert.ok(!("servers" in (plain.json["hypervisor"] ?? {})));
    const badBool = await get(
      `os-hypervisors/${id}?with_servers=maybe`,
      "2.90",
    );
    assert.equal(badBool.status, 400);
  }, SCENARIO);
});

Deno.test("sim: the 2.3 extended attributes are microversion-gated; server_groups only in a show", async () => {
  await withSim(async (sim, token) => {
    const id = sim.world.findServerByRef("vm-a")?.id;
    const show = async (mv: string) => {
      const res = await fetch(`${sim.computeUrl}/servers/${id}`, {
        headers: {
          "X-Auth-Token": token,
          "OpenStack-API-Version": `compute ${mv}`,
        },
      });
      return ((await res.json()) as { server: Record<string, unknown> }).server;
    };
    const v22 = await show("2.2");
    assert.ok(!("OS-EXT-SRV-ATTR:kernel_id" in v22));
    assert.ok(!("OS-EXT-SRV-ATTR:user_data" in v22));
    const v23 = await show("2.3");
    assert.equal(v23["OS-EXT-SRV-ATTR:kernel_id"], "");
    assert.equal(v23["OS-EXT-SRV-ATTR:hostname"], "vm-a");
    assert.ok(!("server_groups" in v23));
    assert.deepEqual((await show("2.71"))["server_groups"], []);
    const list = await fetch(`${sim.computeUrl}/servers/detail?all_tenants=1`, {
      headers: {
        "X-Auth-Token": token,
        "OpenStack-API-Version": "compute 2.96",
      },
    });
    const servers =
      ((await list.json()) as { servers: Record<string, unknown>[] }).servers;
    assert.ok(servers.every((s) => !("server_groups" in s)));
    assert.ok(servers.every((s) => "OS-EXT-SRV-ATTR:user_data" in s));
    assert.ok(servers.every((s) => s["pinned_availability_zone"] === null));
  }, SCENARIO);
});
