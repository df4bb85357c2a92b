import assert from "node:assert/strict";
import { allow, deny } from "./admission.ts";
import { createLogger } from "./logger.ts";
import { Operator } from "./operator.ts";
import {
  adminClient,
  createNamespace,
  deleteNamespace,
  installWidgetCrd,
  INTEGRATION,
  sharedEnvtest,
  uniq,
  waitFor,
  type Widget,
  Widgets,
} from "../tests/harness/framework_util.ts";
import { ApiError } from "./errors.ts";

Deno.test({
  name:
    "webhook: the real API server calls it (caBundle = test CA), honours denials and warnings, survives cert rotation under load",
  ...INTEGRATION,
  fn: async () => {
    const env = await sharedEnvtest();
    const client = await adminClient(env);
    await installWidgetCrd(client);
    const ns = await createNamespace(client, "fw-wh");
    const label = uniq("t");
    const dir = await Deno.makeTempDir();
    const writePair = async () => {
      const pair = await env.servingCert(["127.0.0.1"]);
      await Deno.writeTextFile(`${dir}/tls.key.tmp`, pair.keyPem);
      await Deno.writeTextFile(`${dir}/tls.crt.tmp`, pair.certPem);
      await Deno.rename(`${dir}/tls.key.tmp`, `${dir}/tls.key`);
      await Deno.rename(`${dir}/tls.crt.tmp`, `${dir}/tls.crt`);
    };
    await writePair();
    const vwcName = uniq("fwtest-vwc");
    const op = new Operator({
      name: "fwtest-webhook",
      kubeConfig: env.kubeConfig(),
      healthAddress: false,
      handleSignals: false,
      processMetrics: false,
      logger: createLogger({ level: "silent" }),
      webhook: {
        address: "127.0.0.1:0",
        certFile: `${dir}/tls.crt`,
        keyFile: `${dir}/tls.key`,
        reloadIntervalMs: 60_000,
      },
    });
    const path = op.validate(Widgets, ({ object, operation }) => {
      const size = object?.spec?.size;
      if (typeof size !== "number") return deny("spec.size must be a number");
      if (size > 10) return deny(`spec.size must be <= 10, got ${size}`);
      return allow(
        size === 10
          ? [`spec.size ${size} is at the limit (${operation})`]
          : undefined,
      );
    });
    assert.equal(path, "/validate-fwtest-example-com-v1-widget");
    try {
      await op.start();
      await client.request(
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        {
          body: {
            apiVersion: "admissionregistration.k8s.io/v1",
            kind: "ValidatingWebhookConfiguration",
            metadata: { name: vwcName },
            webhooks: [{
              name: "widgets.fwtest.example.com",
              clientConfig: {
                url: `https://127.0.0.1:${op.webhookPort}${path}`,
                caBundle: btoa(env.caCertPem),
              },
              rules: [{
                apiGroups: ["fwtest.example.com"],
                apiVersions: ["v1"],
                operations: ["CREATE", "UPDATE"],
                resources: ["widgets"],
              }],
              objectSelector: { matchLabels: { t: label } },
              admissionReviewVersions: ["v1"],
              sideEffects: "None",
              failurePolicy: "Fail",
              timeoutSeconds: 5,
            }],
          },
        },
      );
      const widget = (name: string, size: unknown): Widget => ({
        metadata: { name, namespace: ns, labels: { t: label } },
        spec: { size },
      });
      // the API server picks the configuration up asynchronously
      const denial = await waitFor(
        "a denial from the webhook",
        async () => {
          try {
            await client.create(Widgets, widget(uniq("probe"), 99));
            return undefined;
          } catch (err) {
            return err instanceof ApiError ? err : undefined;
          }
        },
        20_000,
        200,
      );
      assert.match(
        denial.message,
        /admission webhook "widgets.fwtest.example.com" denied the request: spec.size must be <= 10, got 99/,
      );

      const applied = await env.kubectl(["apply", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "fwtest.example.com/v1",
          kind: "Widget",
          ...widget("at-limit", 10),
        }),
      });
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(
        applied.stderr,
        /Warning: spec.size 10 is at the limit \(CREATE\)/,
      );
      const refused = await env.kubectl(["apply", "-f", "-"], {
        stdin: JSON.stringify({
          apiVersion: "fwtest.example.com/v1",
          kind: "Widget",
          ...widget("too-big", 11),
        }),
      });
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /spec.size must be <= 10, got 11/);

      // rotation under load: requests through the API server keep succeeding
      let ok = 0;
      const failures: string[] = [];
      let running = true;
      const load = async (w: number) => {
        for (let i = 0; running; i++) {
          try {
            await client.create(Widgets, widget(`load-${w}-${i}`, 1));
            ok++;
          } catch (err) {
            failures.push(String(err));
          }
        }
      };
      const loaders = [0, 1, 2].map(load);
      const server = op.webhookServer;
      assert.ok(server !== undefined);
      for (let round = 0; round < 4; round++) {
        await new Promise((r) => setTimeout(r, 300));
        await writePair();
        assert.equal(await server.reload(), true);
      }
      await new Promise((r) => setTimeout(r, 300));
      running = false;
      await Promise.all(loaders);
      assert.deepEqual(failures, []);
      assert.ok(ok >= 10, `only ${ok} creates went through`);
      assert.equal(server.loads, 5);
    } finally {
      await client.request(
        "DELETE",
        `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${vwcName}`,
      ).catch(() => {});
      await op.stop();
      await deleteNamespace(client, ns);
      client.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
