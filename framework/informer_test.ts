import assert from "node:assert/strict";
import fc from "fast-check";
import { z } from "zod";
import {
  Informer,
  type InformerEvent,
  informerRetryDelay,
} from "./informer.ts";
import { defineKind, type KubeObject } from "./kind.ts";
import { FrameworkMetrics } from "./metrics.ts";
import {
  adminClient,
  ConfigMaps,
  createNamespace,
  deleteNamespace,
  hostPort,
  INTEGRATION,
  sharedEnvtest,
  TcpProxy,
  uniq,
  waitFor,
} from "../tests/harness/framework_util.ts";
import { startEnvtest } from "../tests/harness/envtest.ts";

type CM = KubeObject & { data?: Record<string, string> };

function cm(
  ns: string,
  name: string,
  labels: Record<string, string>,
  data: Record<string, string> = {},
): CM {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: ns, labels },
    data,
  };
}

Deno.test({
  name:
    "informer: lists, watches add/update/delete, honours the label selector, skips invalid objects",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-inf");
    const label = uniq("t");
    const metrics = new FrameworkMetrics({ processMetrics: false });
    const Strict = defineKind({ ...ConfigMaps }, {
      schema: z.object({
        metadata: z.object({ name: z.string(), namespace: z.string() }).loose(),
        data: z.object({ n: z.string().regex(/^\d+$/) }),
      }).loose(),
    });
    try {
      await client.create(ConfigMaps, cm(ns, "pre", { t: label }, { n: "1" }));
      await client.create(
        ConfigMaps,
        cm(ns, "other", { t: "someone-else" }, { n: "1" }),
      );
      const inf = new Informer({
        kind: Strict,
        client,
        namespace: ns,
        labelSelector: `t=${label}`,
        metrics,
      });
      const seen: InformerEvent<unknown>[] = [];
      inf.on((ev) => seen.push(ev));
      inf.start();
      await inf.synced();
      assert.deepEqual(inf.keys(), [`${ns}/pre`]);
      await client.create(ConfigMaps, cm(ns, "a", { t: label }, { n: "2" }));
      await client.create(
        ConfigMaps,
        cm(ns, "bad", { t: label }, { n: "not a number" }),
      );
      await client.patch(ConfigMaps, `${ns}/pre`, { data: { n: "3" } });
      await client.delete(ConfigMaps, `${ns}/a`);
      await waitFor(
        "the delete",
        () => seen.some((e) => e.type === "deleted" && e.key === `${ns}/a`),
      );
      const typed = inf.get(`${ns}/pre`);
      assert.equal(typed?.data.n, "3");
      assert.equal(
        inf.get(`${ns}/bad`),
        undefined,
        "invalid objects are skipped",
      );
      assert.deepEqual(
        seen.map((e) => `${e.type} ${e.key}`),
        [
          `added ${ns}/pre`,
          `added ${ns}/a`,
          `modified ${ns}/pre`,
          `deleted ${ns}/a`,
        ],
      );
      assert.match(
        await metrics.registry.metrics(),
        /operator_invalid_objects_total\{kind="ConfigMap"\} 1/,
      );
      await inf.stop();
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name:
    "informer: a stalled stream is restarted after the inactivity timeout and misses nothing",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const admin = await adminClient(env);
    const proxy = new TcpProxy(hostPort(env.server));
    const viaProxy = await adminClient(env, `https://127.0.0.1:${proxy.port}`);
    const ns = await createNamespace(admin, "fw-stall");
    const label = uniq("t");
    const metrics = new FrameworkMetrics({ processMetrics: false });
    try {
      const inf = new Informer({
        kind: ConfigMaps,
        client: viaProxy,
        namespace: ns,
        labelSelector: `t=${label}`,
        inactivityMs: 800,
        metrics,
      });
      inf.start();
      await inf.synced();
      proxy.stall();
      await admin.create(ConfigMaps, cm(ns, "during-stall", { t: label }));
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(
        inf.get(`${ns}/during-stall`),
        undefined,
        "the stalled stream delivered nothing",
      );
      proxy.stall(false);
      await waitFor(
        "the object after the restart",
        () => inf.get(`${ns}/during-stall`),
        10_000,
      );
      const text = await metrics.registry.metrics();
      const m =
        /operator_watch_restarts_total\{kind="ConfigMap",reason="stalled"\} (\d+)/
          .exec(text);
      assert.ok(
        m !== null && Number(m[1]) >= 1,
        `no stalled restart counted:\n${text}`,
      );
      assert.equal(
        inf.listCount,
        1,
        "a stall restarts the watch from its resourceVersion, no relist",
      );
      await inf.stop();
    } finally {
      await deleteNamespace(admin, ns);
      admin.close();
      viaProxy.close();
      await proxy.close();
    }
  },
});

Deno.test({
  name:
    "informer: caughtUp resolves once the cache holds every change up to a version, false while the stream lags or on a version it cannot order",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const admin = await adminClient(env);
    const proxy = new TcpProxy(hostPort(env.server));
    const viaProxy = await adminClient(env, `https://127.0.0.1:${proxy.port}`);
    const ns = await createNamespace(admin, "fw-caught");
    const label = uniq("t");
    try {
      const inf = new Informer<CM>({
        kind: ConfigMaps,
        client: viaProxy,
        namespace: ns,
        labelSelector: `t=${label}`,
        // the stall drops bytes: the watch resumes after a restart
        inactivityMs: 800,
      });
      assert.equal(await inf.caughtUp("1", 10), false, "not started");
      inf.start();
      await inf.synced();
      assert.equal(await inf.caughtUp(inf.resourceVersion, 10), true);
      assert.equal(await inf.caughtUp("abc", 10), false);
      proxy.stall();
      // another writer first, then "ours": once ours is in, theirs is too
      await admin.create(
        ConfigMaps,
        cm(ns, "theirs", { t: label }, { n: "1" }),
      );
      const ours = await admin.create(
        ConfigMaps,
        cm(ns, "ours", { t: label }, { n: "1" }),
      );
      const rv = ours.metadata?.resourceVersion ?? "";
      assert.equal(await inf.caughtUp(rv, 300), false, "the stream lags");
      const caught = inf.caughtUp(rv, 10_000);
      proxy.stall(false);
      assert.equal(await caught, true);
      assert.ok(inf.get(`${ns}/theirs`) !== undefined);
      assert.ok(inf.get(`${ns}/ours`) !== undefined);
      const pending = inf.caughtUp(String(BigInt(rv) + 1_000_000n), 10_000);
      await inf.stop();
      assert.equal(await pending, false, "stop releases the callers");
    } finally {
      await deleteNamespace(admin, ns);
      admin.close();
      viaProxy.close();
      await proxy.close();
    }
  },
});

async function etcdRevision(endpoint: string): Promise<number> {
  const res = await fetch(`${endpoint}/v3/kv/range`, {
    method: "POST",
    body: JSON.stringify({ key: btoa("/") }),
  });
  const body = await res.json() as { header?: { revision?: string } };
  return Number(body.header?.revision ?? "0");
}

Deno.test({
  name:
    "informer: a watch broken by 410 Gone (etcd compaction) relists and misses no object",
  ...INTEGRATION,
  fn: async () => {
    // a dedicated API server: compaction is global; without the watch cache
    // a watch from a compacted revision goes to etcd and gets 410
    const env = await startEnvtest({
      installCrds: false,
      apiServerFlags: ["--watch-cache=false"],
    });
    const admin = await adminClient(env);
    const proxy = new TcpProxy(hostPort(env.server));
    const viaProxy = await adminClient(env, `https://127.0.0.1:${proxy.port}`);
    const metrics = new FrameworkMetrics({ processMetrics: false });
    try {
      const ns = await createNamespace(admin, "fw-gone");
      await admin.create(ConfigMaps, cm(ns, "keep", {}));
      await admin.create(ConfigMaps, cm(ns, "goes", {}));
      const inf = new Informer({
        kind: ConfigMaps,
        client: viaProxy,
        namespace: ns,
        metrics,
      });
      const deleted: string[] = [];
      inf.on((ev) => ev.type === "deleted" && deleted.push(ev.key));
      inf.start();
      await inf.synced();
      assert.equal(inf.list().length, 2);
      proxy.cut();
      await admin.create(ConfigMaps, cm(ns, "new", {}));
      await admin.delete(ConfigMaps, `${ns}/goes`);
      await admin.patch(ConfigMaps, `${ns}/keep`, { data: { v: "2" } });
      for (let i = 0; i < 5; i++) {
        await admin.create(ConfigMaps, cm(ns, `filler-${i}`, {}));
      }
      const rev = await etcdRevision(env.etcdEndpoint);
      const compacted = await fetch(`${env.etcdEndpoint}/v3/kv/compaction`, {
        method: "POST",
        body: JSON.stringify({ revision: String(rev), physical: true }),
      });
      assert.equal(compacted.status, 200, await compacted.text());
      proxy.restore();
      await waitFor("the relist", () => inf.listCount >= 2, 20_000);
      await waitFor(
        "the cache to converge",
        () => inf.list().length === 7,
        10_000,
      );
      assert.equal(inf.get(`${ns}/goes`), undefined);
      assert.ok(
        deleted.includes(`${ns}/goes`),
        "the deletion missed while cut off is reported",
      );
      assert.equal(inf.get(`${ns}/keep`)?.data?.v, "2");
      assert.ok(inf.get(`${ns}/new`) !== undefined);
      assert.match(
        await metrics.registry.metrics(),
        /operator_watch_restarts_total\{kind="ConfigMap",reason="expired"\} [1-9]/,
      );
      // and it keeps watching after the relist
      await admin.create(ConfigMaps, cm(ns, "after", {}));
      await waitFor(
        "a watch event after the relist",
        () => inf.get(`${ns}/after`),
        10_000,
      );
      await inf.stop();
    } finally {
      admin.close();
      viaProxy.close();
      await proxy.close();
      await env.stop();
    }
  },
});

Deno.test("informerRetryDelay: doubles from the base to the cap, jittered into [half, full)", () => {
  assert.equal(informerRetryDelay(0, 200, 5000, 0), 100);
  assert.equal(informerRetryDelay(0, 200, 5000, 1), 200);
  assert.equal(informerRetryDelay(3, 200, 5000, 1), 1600);
  assert.equal(informerRetryDelay(5, 200, 5000, 1), 5000);
  assert.equal(informerRetryDelay(1000, 200, 5000, 0), 2500);
  fc.assert(
    fc.property(
      fc.nat(100),
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 1000, max: 60_000 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (failures, base, max, random) => {
        const d = informerRetryDelay(failures, base, max, random);
        assert.ok(d >= Math.min(base, max) / 2 && d <= max, `${d}`);
      },
    ),
  );
});
