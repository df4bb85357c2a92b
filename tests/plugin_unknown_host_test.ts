/**
 * `kubectl evictor drain` of a name that matches no Hypervisor, on a
 * dedicated real API server (the ValidatingWebhookConfiguration affects the
 * whole server) with the real webhook and the eviction controller against
 * the Nova simulator: refused with the closest name and nothing created;
 * with `--allow-unknown` created, the webhook's warning on the plugin's
 * stderr (create and patch), and `--wait` ends with "nothing drained"
 * (exit 1), never as a drained host; `status` says so too.
 */
import assert from "node:assert/strict";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import { startEnvtest } from "./harness/envtest.ts";
import { startDrainEnv, waitFor } from "./harness/eviction_env.ts";
import {
  policy,
  startWebhookOperator,
  webhookConfigurationYaml,
} from "./_webhook_fixture.ts";
import { assertOneLine, kubectlEvictor } from "./_plugin_cli.ts";

const HOST = "node042";
const TYPO = "nod042";
const NO_HV_WARNING =
  `Warning: spec.hypervisor: no Hypervisor named "${TYPO}" exists, so its traits and trait limits are unknown; check the name`;

Deno.test({
  name:
    "kubectl evictor drain: an unknown name is refused with the closest one; --allow-unknown shows the webhook's warning and --wait says nothing drained",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await startEnvtest();
    const flags = parseConcurrencyFlags("2", []);
    if (!flags.ok) throw new Error(flags.error.message);
    const hook = await startWebhookOperator(env, flags.settings);
    const e = await startDrainEnv({
      env,
      scenario: {
        hosts: [{ name: HOST }, { name: "node043" }],
        servers: [{ name: "vm", host: HOST, ramMb: 2048 }],
      },
    });
    const kube = { KUBECONFIG: env.kubeconfigPath };
    const evictionNames = async () =>
      (await env.kubectl(["get", "evictions", "-o", "name"])).stdout.trim();
    try {
      await e.hypervisor(HOST);
      await e.hypervisor("node043");
      const installed = await env.kubectl(["apply", "-f", "-"], {
        stdin: await webhookConfigurationYaml(hook.baseUrl, env.caCertPem),
      });
      assert.equal(installed.code, 0, installed.stderr);
      // the API server picks the configuration up asynchronously
      await waitFor("the API server calls the webhook", async () => {
        const r = await env.kubectl(["apply", "--dry-run=server", "-f", "-"], {
          // a trait name the webhook refuses (the schema lets it through)
          stdin: JSON.stringify(policy({
            maxConcurrentMigrations: 4,
            traitLimits: [{
              trait: "custom_probe",
              maxConcurrentMigrations: 1,
            }],
          })),
        });
        return r.code !== 0 && r.stderr.includes("denied the request")
          ? true
          : undefined;
      });

      await t.step(
        "refused: one line with the closest name, exit 1, nothing created",
        async () => {
          const alone = await kubectlEvictor(
            env,
            ["drain", TYPO, "--reason", "kernel 6.12", "--wait"],
            kube,
          );
          assertOneLine(
            alone,
            1,
            new RegExp(
              `^error: no Hypervisor named "${TYPO}" \\(did you mean ${HOST}\\?\\): nothing created; .*--allow-unknown`,
            ),
          );
          assert.equal(alone.stdout, "");
          // a wave with one bad name is not created in part
          const wave = await kubectlEvictor(
            env,
            ["drain", HOST, TYPO, "gpu-host-17", "--reason", "rack 7"],
            kube,
          );
          assertOneLine(
            wave,
            1,
            new RegExp(
              `"${TYPO}" \\(did you mean ${HOST}\\?\\), "gpu-host-17" \\(no Hypervisor has a similar name\\)`,
            ),
          );
          assert.equal(await evictionNames(), "");
        },
      );

      await t.step(
        "--allow-unknown: created, the webhook's warning on stderr, --wait says nothing drained",
        async () => {
          const run = kubectlEvictor(
            env,
            [
              "drain",
              TYPO,
              "--reason",
              "kernel 6.12",
              "--allow-unknown",
              "--wait",
            ],
            kube,
          );
          // The plugin's Eviction joins the controller's partition (label).
          await waitFor(
            "the plugin's Eviction",
            async () => {
              await e.client.patch(EvictionKind, TYPO, {
                metadata: { labels: e.label },
              });
              return true;
            },
            20_000,
            20,
          );
          const r = await run;
          assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
          assert.match(
            r.stdout,
            new RegExp(`eviction.kvm.cloud.sap/${TYPO} created`),
          );
          assert.match(
            r.stdout,
            new RegExp(
              `\\n${TYPO}: nothing drained: Nova has no compute service named ${TYPO}; no VM was moved`,
            ),
          );
          assert.doesNotMatch(r.stdout, /drained, \d+ VMs migrated/);
          // kubectl's form, once, before the progress lines
          const lines = r.stderr.split("\n");
          assert.deepEqual(lines.filter((l) => l.startsWith("Warning:")), [
            NO_HV_WARNING,
          ]);
          assert.match(r.stderr, /\(NotInNova\)$/m);
          assert.doesNotMatch(r.stderr, /^error:/m);
          const ev = await e.eviction(TYPO);
          const evicting = ev.status?.conditions?.find((c) =>
            c.type === "Evicting"
          );
          assert.deepEqual(
            [evicting?.status, evicting?.reason, evicting?.message],
            [
              "False",
              "NotInNova",
              `nothing drained: Nova has no compute service named ${TYPO}`,
            ],
          );
          // nothing of Nova's was touched: no service disabled, no migration
          assert.ok(
            e.sim.state().hosts.every((h) => h.enabled),
            "a compute service was disabled",
          );
          assert.equal(e.sim.state().migrations.length, 0);
        },
      );

      await t.step(
        "status says it plainly; retry's patch shows the warning too",
        async () => {
          const table = await kubectlEvictor(env, ["status", TYPO], kube);
          assert.equal(table.code, 0, table.stderr);
          assert.match(
            table.stdout,
            new RegExp(`^${TYPO}\\s+${TYPO}\\s+.*\\sNotInNova\\s`, "m"),
          );
          assert.equal(
            table.stderr,
            `note: ${TYPO}: nothing drained: Nova has no compute service named ${TYPO}\n`,
          );
          const wide = await kubectlEvictor(
            env,
            ["status", "-o", "wide"],
            kube,
          );
          assert.equal(wide.code, 0, wide.stderr);
          assert.match(
            wide.stdout,
            new RegExp(
              `^${TYPO} .*NotInNova .*nothing drained: Nova has no compute service named ${TYPO}$`,
              "m",
            ),
          );
          const names = await kubectlEvictor(
            env,
            ["status", "-o", "name"],
            kube,
          );
          assert.equal(names.stdout, `eviction.kvm.cloud.sap/${TYPO}\n`);
          const json = await kubectlEvictor(
            env,
            ["status", TYPO, "-o", "summary-json"],
            kube,
          );
          assert.deepEqual(
            (JSON.parse(json.stdout).evictions as {
              state: string;
              message: string;
            }[])
              .map((x) => [x.state, x.message]),
            [[
              "NotInNova",
              `nothing drained: Nova has no compute service named ${TYPO}`,
            ]],
          );
          const retry = await kubectlEvictor(env, ["retry", TYPO], kube);
          assert.equal(retry.code, 0, retry.stderr);
          assert.deepEqual(
            retry.stderr.split("\n").filter((l) => l.startsWith("Warning:")),
            [NO_HV_WARNING],
          );
        },
      );
    } finally {
      await e.stop();
      await hook.stop();
      await env.stop();
    }
  },
});
