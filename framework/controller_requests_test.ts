/**
 * What a controller costs the API server, counted by the API server itself
 * (`apiserver_request_total` on its /metrics, for a resource that only
 * this test uses): K status changes cost K writes and the one finalizer
 * patch, idle passes cost nothing, and no pass ever sees an object older
 * than its own last write although it runs before the watch delivers it.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { createLogger } from "./logger.ts";
import { Operator } from "./operator.ts";
import {
  adminClient,
  createNamespace,
  deleteNamespace,
  INTEGRATION,
  sharedEnvtest,
  uniq,
  waitFor,
} from "../tests/harness/framework_util.ts";
import { defineKind, type KubeObject } from "./kind.ts";
import { apiRequests, requestsBetween } from "../tests/harness/api_requests.ts";

interface Tally extends KubeObject {
  spec: { goal: number };
  status?: { count?: number | undefined } | undefined;
}

const TALLY = {
  group: "fwtest.example.com",
  version: "v1",
  plural: "tallies",
  kind: "Tally",
  namespaced: true,
} as const;

// A schema that strips what it does not list (status.foreign below): the
// writes must still keep it on the server.
const Tallies = defineKind<Tally>(TALLY, {
  schema: z.object({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: z.looseObject({}),
    spec: z.object({ goal: z.number() }),
    status: z.object({ count: z.number().optional() }).optional(),
  }),
});

const TALLY_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "tallies.fwtest.example.com" },
  spec: {
    group: TALLY.group,
    scope: "Namespaced",
    names: {
      plural: "tallies",
      singular: "tally",
      kind: "Tally",
      listKind: "TallyList",
    },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
        },
      },
    }],
  },
};

const K = 6;
const IDLE = 25;

Deno.test({
  name:
    "controller: one API request per status change, none per idle pass, and passes read their own writes",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    try {
      await client.request(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        { body: TALLY_CRD },
      );
    } catch (err) {
      if (!(err instanceof Error && / 409 /.test(err.message))) throw err;
    }
    await waitFor(
      "the tallies CRD to be served",
      async () => {
        await client.request("GET", "/apis/fwtest.example.com/v1/tallies");
        return true;
      },
      30_000,
      100,
    );
    const ns = await createNamespace(client, "fw-req");
    const label = uniq("t");
    const stale: string[] = [];
    let passes = 0;
    let idle = 0;
    let lastWritten = 0;
    try {
      await client.create(Tallies, {
        metadata: { name: "t", namespace: ns, labels: { t: label } },
        spec: { goal: K },
      });
      await client.patch(
        Tallies,
        `${ns}/t`,
        { status: { foreign: "keep me" } },
        "merge",
        "status",
      );
      const op = new Operator({
        name: "fwreq",
        kubeConfig: env.kubeConfig(),
        watchNamespace: ns,
        labelSelector: `t=${label}`,
        healthAddress: false,
        handleSignals: false,
        processMetrics: false,
        finalizer: "fwtest.example.com/req",
        logger: createLogger({ name: "fwreq", level: "error" }),
      });
      op.reconcile(Tallies, async ({ object, updateStatus }) => {
        if (object === undefined || object.metadata?.deletionTimestamp) return;
        passes++;
        const count = object.status?.count ?? 0;
        if (count < lastWritten) {
          stale.push(
            `pass ${passes} saw ${count} after writing ${lastWritten}`,
          );
        }
        if (count < object.spec.goal) {
          const after = await updateStatus((st) => ({
            ...st,
            count: count + 1,
          }));
          lastWritten = after.status?.count ?? -1;
          // at once: the watch has not delivered the write yet
          return { requeueAfterMs: 0 };
        }
        idle++;
        return idle < IDLE ? { requeueAfterMs: 5 } : undefined;
      });
      op.finalize(Tallies, () => {});
      const before = await apiRequests(env, "tallies");
      await op.start();
      await waitFor("the idle passes", () => idle >= IDLE, 30_000, 20);
      // anything late (a retry, a stray GET) would show up now
      await new Promise((r) => setTimeout(r, 500));
      const spent = requestsBetween(
        before,
        await apiRequests(env, "tallies"),
      );
      const d = spent.byVerb;
      const statusWrites = d["PUT status"] ?? 0;
      const others = Object.entries(d).filter(([k]) =>
        k !== "PUT status" && k !== "LIST" && k !== "PATCH"
      );
      console.log(
        `${passes} passes (${idle} idle) and ${K} status changes cost ${
          JSON.stringify(d)
        } API requests (the LIST is the informer's, the PATCH the finalizer)`,
      );
      assert.deepEqual(stale, [], "a pass saw an older object than it wrote");
      assert.equal(statusWrites, K, "one status write per change");
      assert.equal(d["LIST"], 1, "the informer's one list");
      assert.equal(d["PATCH"], 1, "the one finalizer patch");
      assert.deepEqual(others, [], "no GET, no other request");
      assert.equal(spent.conflicts, 0, "no conflict");
      assert.ok(passes >= K + IDLE);
      const raw = await client.get<Tally>(Tallies, `${ns}/t`);
      assert.deepEqual(raw.status, { foreign: "keep me", count: K });
      await op.stop();
      await client.patch(Tallies, `${ns}/t`, {
        metadata: { finalizers: null },
      });
    } finally {
      await deleteNamespace(client, ns);
      client.close();
    }
  },
});
