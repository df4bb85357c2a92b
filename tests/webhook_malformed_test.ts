/**
 * Malformed input straight to our registered webhook routes over TLS:
 * empty body, wrong content type, invalid JSON, a body that is not an
 * AdmissionReview v1, a missing uid, a 10 MiB body (declared and
 * streamed): each is answered 400 or 413, and the server keeps answering
 * well-formed reviews. The operator only reads, so the shared API server
 * is enough.
 */
import { DEFAULT_WEBHOOK_LIMITS } from "../framework/webhook_server.ts";
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import {
  EVICTION_WEBHOOK_PATH,
  POLICY_WEBHOOK_PATH,
} from "../webhooks/register.ts";
import { validateEvictionPolicy } from "../webhooks/eviction_policy.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import { policy, startWebhookOperator } from "./_webhook_fixture.ts";

const TEN_MIB = 10 * 1024 * 1024;

function review(request: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request,
  };
}

const BAD_POLICY = policy({
  maxConcurrentMigrations: 4,
  traitLimits: [{ trait: "CUSTOM_BIG", maxConcurrentMigrations: 16 }],
});

const GOOD_EVICTION = {
  apiVersion: "kvm.cloud.sap/v1",
  kind: "Eviction",
  metadata: { name: "malformed-test-node" },
  spec: { hypervisor: "malformed-test-node", reason: "kernel" },
};

Deno.test({
  name:
    "webhook routes: malformed input gets 400 or 413, the server keeps serving",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const env = await sharedEnvtest();
  const flags = parseConcurrencyFlags("2", []);
  assert.ok(flags.ok);
  const hook = await startWebhookOperator(env, flags.settings);
  const client = Deno.createHttpClient({ caCerts: [env.caCertPem] });
  try {
    const post = async (
      path: string,
      body: BodyInit | null,
      contentType = "application/json",
    ) => {
      const res = await fetch(`${hook.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": contentType },
        body,
        client,
      });
      const text = await res.text();
      return { status: res.status, text };
    };

    // a well-formed review still gets its verdict: asked after every bad one
    const stillServing = async () => {
      const denied = await post(
        POLICY_WEBHOOK_PATH,
        JSON.stringify(review({
          uid: "u-policy",
          operation: "CREATE",
          name: "default",
          object: BAD_POLICY,
        })),
      );
      assert.equal(denied.status, 200, denied.text);
      const expected = validateEvictionPolicy(BAD_POLICY, undefined, {
        runningEvictions: [],
      });
      assert.ok(!expected.allowed);
      const out = JSON.parse(denied.text) as {
        apiVersion: string;
        response: {
          uid: string;
          allowed: boolean;
          status?: { code: number; message: string };
        };
      };
      assert.equal(out.apiVersion, "admission.k8s.io/v1");
      assert.equal(out.response.uid, "u-policy");
      assert.equal(out.response.allowed, false);
      assert.equal(out.response.status?.code, 403);
      assert.equal(out.response.status?.message, expected.message);
      const ok = await post(
        EVICTION_WEBHOOK_PATH,
        JSON.stringify(review({
          uid: "u-eviction",
          operation: "CREATE",
          name: GOOD_EVICTION.metadata.name,
          object: GOOD_EVICTION,
          dryRun: true,
        })),
      );
      assert.equal(ok.status, 200, ok.text);
      const r = JSON.parse(ok.text) as {
        response: { uid: string; allowed: boolean; warnings?: string[] };
      };
      assert.equal(r.response.uid, "u-eviction");
      assert.equal(r.response.allowed, true);
      assert.deepEqual(r.response.warnings, [
        'spec.hypervisor: no Hypervisor named "malformed-test-node" exists, so its traits and trait limits are unknown; check the name',
      ]);
    };

    await stillServing();
    const cases: Array<{
      name: string;
      body: () => BodyInit | null;
      contentType?: string;
      status: number;
      says: RegExp;
    }> = [
      {
        name: "empty body",
        body: () => "",
        status: 400,
        says: /malformed JSON/,
      },
      {
        name: "no body at all",
        body: () => null,
        status: 400,
        says: /malformed JSON/,
      },
      {
        name: "wrong content type",
        body: () =>
          JSON.stringify(review({ uid: "x", operation: "CREATE", object: {} })),
        contentType: "text/plain",
        status: 400,
        says: /content-type must be application\/json, got "text\/plain"/,
      },
      {
        name: "invalid JSON",
        body: () => '{"apiVersion": "admission.k8s.io/v1", "kind": ',
        status: 400,
        says: /malformed JSON/,
      },
      {
        name: "JSON that is not an object",
        body: () => "[1, 2, 3]",
        status: 400,
        says: /AdmissionReview|request\.uid/,
      },
      {
        name: "missing uid",
        body: () => JSON.stringify(review({ operation: "CREATE", object: {} })),
        status: 400,
        says: /request\.uid is missing/,
      },
      {
        name: "an AdmissionReview of another version",
        body: () =>
          JSON.stringify({
            ...review({ uid: "x", operation: "CREATE", object: {} }),
            apiVersion: "admission.k8s.io/v1beta1",
          }),
        status: 400,
        says: /not an admission\.k8s\.io\/v1 AdmissionReview/,
      },
      {
        name: "an unknown operation",
        body: () => JSON.stringify(review({ uid: "x", operation: "PATCH" })),
        status: 400,
        says: /request\.operation/,
      },
      {
        name: "10 MiB body with a content-length",
        body: () => new Uint8Array(TEN_MIB).fill(0x20),
        status: 413,
        says: new RegExp(
          `request body exceeds ${DEFAULT_WEBHOOK_LIMITS.maxBodyBytes} bytes`,
        ),
      },
      {
        name: "10 MiB body streamed without a content-length",
        body: () => {
          let sent = 0;
          const chunk = new Uint8Array(64 * 1024).fill(0x20);
          return new ReadableStream<Uint8Array>({
            pull(controller) {
              if (sent >= TEN_MIB) {
                controller.close();
                return;
              }
              sent += chunk.byteLength;
              controller.enqueue(chunk);
            },
          });
        },
        status: 413,
        says: new RegExp(
          `request body exceeds ${DEFAULT_WEBHOOK_LIMITS.maxBodyBytes} bytes`,
        ),
      },
    ];
    for (const path of [POLICY_WEBHOOK_PATH, EVICTION_WEBHOOK_PATH]) {
      for (const c of cases) {
        await t.step(`${path}: ${c.name}`, async () => {
          const res = await post(path, c.body(), c.contentType);
          assert.equal(res.status, c.status, res.text);
          const status = JSON.parse(res.text) as {
            kind: string;
            code: number;
            message: string;
          };
          assert.equal(status.kind, "Status");
          assert.equal(status.code, c.status);
          assert.match(status.message, c.says);
          await stillServing();
        });
      }
    }
  } finally {
    client.close();
    await hook.stop();
  }
});
