import assert from "node:assert/strict";
import { z } from "zod";
import { PermanentError, TemporaryError } from "./errors.ts";
import { ManualClock } from "./clock.ts";
import type { HandlerContext } from "./handler.ts";
import { createLogger } from "./logger.ts";
import { Operator, type OperatorOptions } from "./operator.ts";
import { updateStatus } from "./status.ts";
import {
  adminClient,
  ConfigMaps,
  createNamespace,
  deleteNamespace,
  type Envtest,
  Gadgets,
  installWidgetCrd,
  INTEGRATION,
  sharedEnvtest,
  uniq,
  waitFor,
  type Widget,
  Widgets,
} from "../tests/harness/framework_util.ts";
import { defineKind, type KubeObject } from "./kind.ts";
import { related } from "./handler.ts";

type CM = KubeObject & { data?: Record<string, string> };

function options(
  env: Envtest,
  ns: string,
  label: string,
  lines: string[],
): OperatorOptions {
  return {
    name: "fwtest",
    kubeConfig: env.kubeConfig(),
    watchNamespace: ns,
    labelSelector: `t=${label}`,
    healthAddress: "127.0.0.1:0",
    metrics: { address: "127.0.0.1:0", insecure: true },
    handleSignals: false,
    processMetrics: false,
    finalizer: "fwtest.example.com/cleanup",
    logger: createLogger({
      name: "fwtest",
      level: "debug",
      destination: { write: (l) => lines.push(l) },
    }),
  };
}

/** Parses Prometheus text into `name{labels}` -> value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(m !== null, `unparsable metrics line: ${line}`);
    out.set(m[1] ?? "", Number(m[2]));
  }
  return out;
}

Deno.test({
  name:
    "operator: reconcile sees create/update/delete, requeues, retries, resumes after restart; health and metrics",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-op");
    const label = uniq("t");
    const cm = (name: string, data: Record<string, string> = {}): CM => ({
      metadata: { name, namespace: ns, labels: { t: label } },
      data,
    });
    const calls: Array<{ key: string; v: string; at: number }> = [];
    const attempts = new Map<string, number>();
    let concurrent = 0;
    let maxConcurrent = 0;
    const handler = async ({ key, object, name }: HandlerContext<CM>) => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      try {
        const n = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, n);
        calls.push({
          key,
          v: object === undefined ? "gone" : object.data?.v ?? "-",
          at: Date.now(),
        });
        await new Promise((r) => setTimeout(r, 5));
        if (object === undefined) return;
        if (name === "requeue" && n < 3) return { requeueAfterMs: 300 };
        if (name === "temp" && n < 3) {
          throw new TemporaryError("not yet", { delayMs: 200 });
        }
        if (name === "perm" && object.data?.v === "1") {
          throw new PermanentError("spec cannot work");
        }
        if (name === "boom" && n < 4) throw new Error("unexpected");
      } finally {
        concurrent--;
      }
    };
    const lines: string[] = [];
    try {
      await client.create(ConfigMaps, cm("pre", { v: "0" }));
      await client.create(
        ConfigMaps,
        { metadata: { name: "unlabelled", namespace: ns }, data: {} } as CM,
      );
      const op = new Operator(options(env, ns, label, lines));
      op.reconcile(ConfigMaps, handler, { maxConcurrent: 3 });
      await op.start();
      const of = (key: string) => calls.filter((c) => c.key === `${ns}/${key}`);
      await waitFor("pre reconciled", () => of("pre").length >= 1);

      await client.create(ConfigMaps, cm("b", { v: "1" }));
      await waitFor("b created", () => of("b").some((c) => c.v === "1"));
      await client.patch(ConfigMaps, `${ns}/b`, { data: { v: "2" } });
      await waitFor("b updated", () => of("b").some((c) => c.v === "2"));
      await client.delete(ConfigMaps, `${ns}/b`);
      await waitFor("b deleted", () => of("b").some((c) => c.v === "gone"));

      await client.create(ConfigMaps, cm("requeue", { v: "1" }));
      await client.create(ConfigMaps, cm("temp", { v: "1" }));
      await client.create(ConfigMaps, cm("perm", { v: "1" }));
      await client.create(ConfigMaps, cm("boom", { v: "1" }));
      await waitFor("requeued twice", () => of("requeue").length >= 3);
      const rq = of("requeue");
      assert.ok(
        (rq[1]?.at ?? 0) - (rq[0]?.at ?? 0) >= 290,
        "requeue waited for its delay",
      );
      await waitFor("temporary error retried", () => of("temp").length >= 3);
      const tp = of("temp");
      assert.ok(
        (tp[1]?.at ?? 0) - (tp[0]?.at ?? 0) >= 190,
        "TemporaryError delay honoured",
      );
      await waitFor(
        "other error retried with backoff",
        () => of("boom").length >= 4,
      );
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(of("perm").length, 1, "PermanentError is not retried");
      assert.equal(of("temp").length, 3, "no retry after success");
      assert.equal(of("boom").length, 4, "no retry after success");
      assert.equal(of("unlabelled").length, 0, "the label selector partitions");
      await client.patch(ConfigMaps, `${ns}/perm`, { data: { v: "2" } });
      await waitFor(
        "perm retried after a change",
        () => of("perm").length === 2,
      );
      assert.ok(maxConcurrent <= 3, `max concurrent ${maxConcurrent} > 3`);

      // health and metrics
      const base = `http://127.0.0.1:${op.healthPort}`;
      const healthz = await fetch(`${base}/healthz`);
      assert.equal(healthz.status, 200, await healthz.text());
      const readyz = await fetch(`${base}/readyz`);
      assert.equal(readyz.status, 200, await readyz.text());
      const metrics = parseMetrics(
        await (await fetch(`http://127.0.0.1:${op.metricsPort}/metrics`))
          .text(),
      );
      const get = (k: string) => metrics.get(k) ?? 0;
      assert.equal(
        get(
          'operator_reconcile_total{controller="configmaps",result="temporary_error"}',
        ),
        2,
      );
      assert.equal(
        get(
          'operator_reconcile_total{controller="configmaps",result="permanent_error"}',
        ),
        1,
      );
      assert.equal(
        get('operator_reconcile_total{controller="configmaps",result="error"}'),
        3,
      );
      assert.equal(
        get(
          'operator_reconcile_total{controller="configmaps",result="requeue"}',
        ),
        2,
      );
      // client-go's retries: every delayed add, so each failure's backoff
      // and each requeue (2 temporary, 3 errors, 2 requeues)
      const queue = '{name="configmaps",controller="configmaps"}';
      assert.equal(get(`workqueue_retries_total${queue}`), 7);
      // controller-runtime's series: every thrown error is an error (2
      // temporary, 1 permanent, 3 others), the permanent one terminal too;
      // a requeue after a delay is requeue_after; every pass is timed
      const cr = (result: string) =>
        get(
          `controller_runtime_reconcile_total{controller="configmaps",result="${result}"}`,
        );
      assert.equal(cr("error"), 6);
      assert.equal(cr("requeue_after"), 2);
      assert.equal(cr("requeue"), 0);
      assert.equal(
        get(
          'controller_runtime_reconcile_errors_total{controller="configmaps"}',
        ),
        6,
      );
      assert.equal(
        get(
          'controller_runtime_terminal_reconcile_errors_total{controller="configmaps"}',
        ),
        1,
      );
      const timed = get(
        'controller_runtime_reconcile_time_seconds_count{controller="configmaps"}',
      );
      assert.ok(timed >= 15, `${timed}`);
      assert.equal(
        timed,
        cr("error") + cr("requeue_after") + cr("requeue") + cr("success"),
      );
      assert.equal(
        get(
          'controller_runtime_max_concurrent_reconciles{controller="configmaps"}',
        ),
        3,
      );
      assert.equal(
        get('controller_runtime_active_workers{controller="configmaps"}'),
        0,
      );
      // no Lease: the only instance leads, under the operator's name
      assert.equal(get('leader_election_master_status{name="fwtest"}'), 1);
      assert.equal(get('operator_cache_objects{kind="ConfigMap"}'), 5);
      assert.equal(get(`workqueue_depth${queue}`), 0);
      // every pass was added, waited and worked; none is in progress
      const passes = get(`workqueue_work_duration_seconds_count${queue}`);
      assert.ok(passes >= 15, `${passes}`);
      assert.equal(
        get(`workqueue_queue_duration_seconds_count${queue}`),
        passes,
      );
      assert.ok(get(`workqueue_adds_total${queue}`) >= passes);
      assert.equal(get(`workqueue_unfinished_work_seconds${queue}`), 0);
      // the API client's requests under client-go's names: reads answered,
      // Events of the failures created
      const requests = (code: string, method: string) =>
        [...metrics].filter(([k]) =>
          k.startsWith(
            `rest_client_requests_total{code="${code}",method="${method}",`,
          )
        ).reduce((sum, [, n]) => sum + n, 0);
      assert.ok(requests("200", "GET") > 0);
      assert.ok(requests("201", "POST") > 0);
      assert.ok(
        get(
          `rest_client_request_duration_seconds_count{verb="GET",host="${
            new URL(env.kubeConfig().getCurrentCluster()?.server ?? "").host
          }"}`,
        ) >= requests("200", "GET"),
      );

      // structured logs: JSON lines with level, name and the object key
      const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const failure = logged.find((l) =>
        l.key === `${ns}/perm` && l.level === "error"
      );
      assert.ok(
        failure !== undefined,
        "a JSON line with the key of the failed object",
      );
      assert.equal(failure.name, "controller");

      await op.stop();
      assert.equal(await op.done, "stopped");

      // restart: every existing object is resumed
      const before = calls.length;
      const op2 = new Operator(options(env, ns, label, lines));
      op2.reconcile(ConfigMaps, handler);
      await op2.start();
      const resumed = () =>
        new Set(calls.slice(before).map((c) => c.key.split("/")[1]));
      await waitFor(
        "all resumed",
        () =>
          ["pre", "requeue", "temp", "perm", "boom"].every((k) =>
            resumed().has(k)
          ),
      );
      await op2.stop();
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name:
    "operator: finalizer added before it is needed and removed after finalize succeeded; status and events",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    await installWidgetCrd(client);
    const ns = await createNamespace(client, "fw-fin");
    const label = uniq("t");
    const lines: string[] = [];
    const seenFinalizers: boolean[] = [];
    const finalized: string[] = [];
    let finalizeAttempts = 0;
    try {
      const op = new Operator(options(env, ns, label, lines));
      op.reconcile(Widgets, async ({ object, updateStatus, event }) => {
        if (object === undefined || object.metadata?.deletionTimestamp) return;
        seenFinalizers.push(
          (object.metadata?.finalizers ?? []).includes(
            "fwtest.example.com/cleanup",
          ),
        );
        await updateStatus((s) => ({
          ...s,
          reconciled: true,
          size: object.spec?.size,
        }));
        await event(
          "Normal",
          "Reconciled",
          `size is ${String(object.spec?.size)}`,
        );
      }, { ignoreStatusUpdates: true });
      op.finalize(Widgets, ({ key, object }) => {
        finalizeAttempts++;
        assert.ok(object.metadata?.deletionTimestamp);
        if (finalizeAttempts === 1) {
          throw new TemporaryError("cleanup not done yet", { delayMs: 100 });
        }
        // Waiting is not a failure: the finalizer stays, no warning.
        if (finalizeAttempts === 2) return { requeueAfterMs: 50 };
        finalized.push(key);
        return undefined;
      });
      await op.start();
      const w: Widget = {
        metadata: { name: "w1", namespace: ns, labels: { t: label } },
        spec: { size: 3 },
      };
      await client.create(Widgets, w);
      await waitFor(
        "status written",
        async () =>
          (await client.get<Widget>(Widgets, `${ns}/w1`)).status?.reconciled ===
            true,
      );
      const got = await client.get<Widget>(Widgets, `${ns}/w1`);
      assert.deepEqual(got.metadata?.finalizers, [
        "fwtest.example.com/cleanup",
      ]);
      assert.deepEqual(got.status, { reconciled: true, size: 3 });
      assert.ok(
        seenFinalizers.length >= 1 && seenFinalizers.every(Boolean),
        "the finalizer was there before any handler ran",
      );

      // the same event again and again: one Event with a count
      await client.patch(Widgets, `${ns}/w1`, {
        metadata: { labels: { t: label, poke: "1" } },
      });
      await client.patch(Widgets, `${ns}/w1`, {
        metadata: { labels: { t: label, poke: "2" } },
      });
      const events = await waitFor(
        "one Reconciled event counted >= 3 times",
        async () => {
          const list = await client.request<
            {
              items: Array<
                {
                  reason: string;
                  count: number;
                  involvedObject: { name: string };
                }
              >;
            }
          >(
            "GET",
            `/api/v1/namespaces/${ns}/events`,
          );
          const mine = list.items.filter((e) =>
            e.reason === "Reconciled" && e.involvedObject.name === "w1"
          );
          return mine.length === 1 && (mine[0]?.count ?? 0) >= 3
            ? mine
            : undefined;
        },
      );
      assert.equal(events.length, 1);
      const describe = await env.kubectl([
        "describe",
        "widgets.fwtest.example.com",
        "w1",
        "-n",
        ns,
      ]);
      assert.equal(describe.code, 0, describe.stderr);
      assert.match(describe.stdout, /Events:/);
      assert.match(
        describe.stdout,
        /Normal\s+Reconciled\s+.*\(x\d+ over .*\)\s+fwtest\s+size is 3/,
      );

      // cluster-scoped objects: the Event lives in "default" and describe finds it
      const gadget = uniq("gadget");
      const g = await client.create(Gadgets, { metadata: { name: gadget } });
      await op.events.record(Gadgets, g, {
        type: "Warning",
        reason: "ClusterScopedEvent",
        message: "seen on a cluster-scoped object",
      });
      const gDescribe = await env.kubectl([
        "describe",
        "gadgets.fwtest.example.com",
        gadget,
      ]);
      await client.delete(Gadgets, gadget);
      assert.match(
        gDescribe.stdout,
        /Warning\s+ClusterScopedEvent\s+.*fwtest\s+seen on a cluster-scoped object/,
      );

      await client.delete(Widgets, `${ns}/w1`);
      await waitFor("deletion completes", async () => {
        try {
          await client.get(Widgets, `${ns}/w1`);
          return false;
        } catch (err) {
          return err instanceof Error && / 404 /.test(err.message);
        }
      });
      assert.deepEqual(finalized, [`${ns}/w1`]);
      assert.equal(finalizeAttempts, 3);
      const failedLines = lines.map((l) => JSON.parse(l) as { msg?: string })
        .filter((l) => l.msg?.startsWith("reconcile failed") === true);
      assert.equal(failedLines.length, 1, "only the TemporaryError warns");
      await op.stop();
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name: "status writes: a concurrent writer on the same object loses no field",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const other = await adminClient(env);
    await installWidgetCrd(client);
    const ns = await createNamespace(client, "fw-status");
    try {
      await client.create(Widgets, {
        metadata: { name: "s", namespace: ns },
        spec: {},
      });
      let conflicts = 0;
      const writer = async (c: typeof client, prefix: string) => {
        for (let i = 0; i < 15; i++) {
          await updateStatus<Record<string, unknown>, Widget>(
            c,
            Widgets,
            `${ns}/s`,
            (s) => {
              s[`${prefix}${i}`] = i;
              s.counter = (typeof s.counter === "number" ? s.counter : 0) + 1;
            },
            { attempts: 50, onConflict: () => conflicts++ },
          );
        }
      };
      await Promise.all([
        writer(client, "a"),
        writer(other, "b"),
        writer(other, "c"),
      ]);
      const final = await client.get<Widget>(Widgets, `${ns}/s`);
      const status = final.status ?? {};
      for (const p of ["a", "b", "c"]) {
        for (let i = 0; i < 15; i++) {
          assert.equal(status[`${p}${i}`], i, `status.${p}${i} lost`);
        }
      }
      assert.equal(status.counter, 45, "every read-modify-write counted once");
      assert.ok(conflicts > 0, "the writers did collide (409s were retried)");
    } finally {
      await deleteNamespace(client, ns);
      client.close();
      other.close();
    }
  },
});

Deno.test({
  name:
    "operator: related kinds enqueue mapped keys (or all); timers run per object on the leader",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-rel");
    const label = uniq("t");
    const Secrets = defineKind<KubeObject>({
      group: "",
      version: "v1",
      plural: "secrets",
      kind: "Secret",
      namespaced: true,
    });
    const reconciled: string[] = [];
    const ticks = new Map<string, number>();
    const lines: string[] = [];
    try {
      for (const name of ["x", "y"]) {
        await client.create(
          ConfigMaps,
          { metadata: { name, namespace: ns, labels: { t: label } } } as CM,
        );
      }
      const op = new Operator(options(env, ns, label, lines));
      const secrets = op.watch(Secrets);
      op.reconcile(ConfigMaps, ({ key, cache }) => {
        reconciled.push(key);
        // typed cache reads of another kind
        assert.ok(cache(Secrets).list().length >= 0);
      }, {
        watches: [
          related(
            Secrets,
            (s) =>
              s.metadata?.name === "all"
                ? "all"
                : [`${ns}/${s.metadata?.name ?? ""}`],
          ),
        ],
      });
      op.timer(ConfigMaps, { intervalMs: 100 }, ({ key }) => {
        ticks.set(key, (ticks.get(key) ?? 0) + 1);
      });
      await op.start();
      await waitFor("initial reconciles", () => reconciled.length >= 2);
      reconciled.length = 0;
      await client.create(Secrets, {
        metadata: { name: "x", namespace: ns, labels: { t: label } },
      });
      await waitFor(
        "x enqueued by its Secret",
        () => reconciled.includes(`${ns}/x`),
      );
      assert.ok(
        secrets.get(`${ns}/x`) !== undefined,
        "the related cache holds the Secret",
      );
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(
        !reconciled.includes(`${ns}/y`),
        "y is not mapped from Secret x",
      );
      reconciled.length = 0;
      await client.create(Secrets, {
        metadata: { name: "all", namespace: ns, labels: { t: label } },
      });
      await waitFor(
        "all enqueued",
        () => reconciled.includes(`${ns}/x`) && reconciled.includes(`${ns}/y`),
      );
      await waitFor(
        "timers ticking for both",
        () =>
          (ticks.get(`${ns}/x`) ?? 0) >= 3 && (ticks.get(`${ns}/y`) ?? 0) >= 3,
      );
      await client.delete(ConfigMaps, `${ns}/y`);
      await new Promise((r) => setTimeout(r, 300));
      const yTicks = ticks.get(`${ns}/y`) ?? 0;
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(
        ticks.get(`${ns}/y`),
        yTicks,
        "no timer for a deleted object",
      );
      await op.stop();
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name:
    "status writes through a schema that strips unknown fields lose nothing on the server",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    await installWidgetCrd(client);
    const ns = await createNamespace(client, "fw-strip");
    const label = uniq("t");
    const Strict = defineKind({ ...Widgets }, {
      // no .loose(): zod strips everything it does not list
      schema: z.object({
        metadata: z.object({ name: z.string(), namespace: z.string() }),
        spec: z.object({ size: z.number() }),
        status: z.object({ seen: z.number().optional() }).optional(),
      }),
    });
    try {
      await client.create(Widgets, {
        metadata: { name: "s", namespace: ns, labels: { t: label } },
        spec: { size: 1, extra: "x" },
      });
      await client.patch(
        Widgets,
        `${ns}/s`,
        { status: { foreign: "keep me" } },
        "merge",
        "status",
      );
      const op = new Operator(options(env, ns, label, []));
      const seen: number[] = [];
      op.reconcile(Strict, async ({ object, updateStatus }) => {
        if (object === undefined) return;
        seen.push(object.spec.size);
        const after = await updateStatus((s) => ({
          ...s,
          seen: object.spec.size,
        }));
        assert.equal(after.status?.seen, object.spec.size);
      }, { ignoreStatusUpdates: true });
      op.finalize(Strict, () => {});
      await op.start();
      await waitFor(
        "status written",
        async () =>
          (await client.get<Widget>(Widgets, `${ns}/s`)).status?.seen === 1,
      );
      const raw = await client.get<Widget>(Widgets, `${ns}/s`);
      assert.deepEqual(raw.status, { foreign: "keep me", seen: 1 });
      assert.deepEqual(raw.spec, { size: 1, extra: "x" });
      assert.deepEqual(raw.metadata?.labels, { t: label });
      assert.deepEqual(raw.metadata?.finalizers, [
        "fwtest.example.com/cleanup",
      ]);
      await op.stop();
      await client.patch(Widgets, `${ns}/s`, {
        metadata: { finalizers: null },
      });
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});

Deno.test({
  name:
    "operator: an error whose cause asks for a later retry and an Event gets both, through a TemporaryError too",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    const ns = await createNamespace(client, "fw-hint");
    const label = uniq("t");
    const clock = new ManualClock(Date.now());
    const lines: string[] = [];
    const op = new Operator({ ...options(env, ns, label, lines), clock });
    // What a library might throw: no import of the framework needed.
    const refused = () =>
      Object.assign(new Error("the credentials were refused"), {
        retryAfterMs: 60_000,
        eventReason: "CredentialsRefused",
      });
    const calls: string[] = [];
    op.reconcile(ConfigMaps, ({ name }: HandlerContext<CM>) => {
      calls.push(name);
      // one plain failure, then one wrapped in a TemporaryError of 1 ms
      if (calls.length === 1) throw refused();
      if (calls.length === 2) {
        throw new TemporaryError("observing failed", {
          delayMs: 1,
          cause: refused(),
        });
      }
    });
    try {
      await client.create(ConfigMaps, {
        metadata: { name: "h", namespace: ns, labels: { t: label } },
        data: {},
      } as CM);
      await op.start();
      for (const expected of [1, 2, 3]) {
        await waitFor(`reconcile #${expected}`, () => calls.length >= expected);
        // Not sooner than asked: a minute on the queue's clock, not 5 ms.
        clock.advance(59_999);
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(calls.length, expected, "retried before retryAfterMs");
        clock.advance(1);
      }
      const events = await waitFor(
        "a counted CredentialsRefused Event",
        async () => {
          const list = await client.request<
            { items: Array<{ reason: string; count: number; message: string }> }
          >("GET", `/api/v1/namespaces/${ns}/events`);
          const mine = list.items.filter((e) =>
            e.reason === "CredentialsRefused"
          );
          return mine.length === 1 && (mine[0]?.count ?? 0) >= 2
            ? mine
            : undefined;
        },
      );
      assert.equal(events[0]?.message, "the credentials were refused");
      await op.stop();
    } finally {
      await deleteNamespace(client, ns);
    }
  },
});
