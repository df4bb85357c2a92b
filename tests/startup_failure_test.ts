/**
 * Start-up failures of the real program: `main.ts run` as a process with
 * the compiled binary's permissions. A missing or invalid certificate, an
 * unreadable kubeconfig, an unreachable API server, a bad clouds.yaml
 * and a listening address in use each end in exactly one JSON log line
 * (level fatal) that names what failed and where, exit code 1, and no stack
 * trace.
 */
import assert from "node:assert/strict";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  operatorLogTail,
  STAGING_ROOT,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import { freePort, makeOwnedTempDir } from "./harness/processes.ts";
import { rabbitMqMissing, sharedRabbitMq } from "./harness/rabbitmq.ts";

/** A valid clouds.yaml whose Keystone is never called at start-up. */
const CLOUDS_YAML = `clouds:
  evictor:
    auth_type: v3applicationcredential
    auth:
      auth_url: http://127.0.0.1:${freePort()}/v3
      application_credential_id: startup-test
      application_credential_secret: never-used
`;

/** A kubeconfig for an API server at `server` (nothing is read but it). */
function kubeconfig(server: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    "current-context": "test",
    contexts: [{ name: "test", context: { cluster: "test", user: "test" } }],
    clusters: [{ name: "test", cluster: { server } }],
    users: [{ name: "test", user: { token: "startup-test" } }],
  });
}

interface Failure {
  code: number;
  line: Record<string, unknown>;
}

/** Runs `main.ts run` until it exits; its exit code and its only log line. */
async function runUntilExit(options: {
  kubeconfigPath: string;
  cloudsYaml?: string;
  args?: string[];
}): Promise<Failure> {
  const op = await startOperatorProcess({
    kubeconfigPath: options.kubeconfigPath,
    cloudsYaml: options.cloudsYaml ?? CLOUDS_YAML,
    args: [
      `--metrics-bind-address=127.0.0.1:${freePort()}`,
      `--webhook-bind-address=127.0.0.1:${freePort()}`,
      ...(options.args ?? []),
    ],
  });
  const timeout = setTimeout(() => void op.kill(), 60_000);
  const code = await op.exited;
  clearTimeout(timeout);
  const log = await op.log();
  const lines = log.split("\n").filter((l) => l.trim() !== "");
  assert.equal(
    lines.length,
    1,
    `expected exactly one log line, got:\n${await operatorLogTail(op)}`,
  );
  const line = JSON.parse(lines[0] ?? "") as Record<string, unknown>;
  assert.equal(line["level"], "fatal", `not a fatal line: ${lines[0]}`);
  assert.equal(line["stack"], undefined);
  assert.doesNotMatch(lines[0] ?? "", /\sat \S+ \(\S+:\d+:\d+\)/);
  return { code, line };
}

/** A folder under the binary's readable staging root, gone when we are. */
async function stagedDir(prefix: string): Promise<string> {
  return await makeOwnedTempDir(STAGING_ROOT, prefix);
}

Deno.test({
  name: "start-up: a kubeconfig that does not exist is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await stagedDir("startup-");
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      kubeconfig(`https://127.0.0.1:${freePort()}`),
    );
    const missing = `${dir}/no-such-kubeconfig`;
    const { code, line } = await runUntilExit({
      kubeconfigPath: `${dir}/kubeconfig`,
      args: [`--kubeconfig=${missing}`],
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "kubeconfig");
    assert.equal(line["where"], missing);
    assert.match(String(line["msg"]), /no such file/i);
  },
});

Deno.test({
  name:
    "start-up: a kubeconfig the binary may not read names the readable folders",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const outside = await Deno.makeTempFile({ suffix: ".kubeconfig" });
    try {
      const dir = await stagedDir("startup-");
      await Deno.writeTextFile(
        outside,
        kubeconfig(`https://127.0.0.1:${freePort()}`),
      );
      const { code, line } = await runUntilExit({
        kubeconfigPath: outside,
        args: [`--kubeconfig=${outside}`, `--webhook-cert-dir=${dir}`],
      });
      assert.equal(code, 1);
      assert.equal(line["what"], "kubeconfig");
      assert.equal(line["where"], outside);
      assert.ok(
        Array.isArray(line["readablePaths"]) &&
          line["readablePaths"].includes("/etc/evictor"),
        JSON.stringify(line),
      );
      assert.match(String(line["msg"]), /has no read access to it/);
    } finally {
      await Deno.remove(outside);
    }
  },
});

Deno.test({
  name: "start-up: an unreachable API server is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await stagedDir("startup-");
    const server = `https://127.0.0.1:${freePort()}`;
    await Deno.writeTextFile(`${dir}/kubeconfig`, kubeconfig(server));
    const { code, line } = await runUntilExit({
      kubeconfigPath: `${dir}/kubeconfig`,
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "API server");
    assert.equal(line["where"], server);
    assert.match(String(line["reason"]), /refused|connect/i);
  },
});

Deno.test({
  name: "start-up: a clouds.yaml that is not YAML is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await stagedDir("startup-");
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      kubeconfig(`https://127.0.0.1:${freePort()}`),
    );
    const { code, line } = await runUntilExit({
      kubeconfigPath: `${dir}/kubeconfig`,
      cloudsYaml: "clouds:\n  evictor: [unclosed\n",
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "OpenStack configuration");
    assert.match(
      String(line["where"]),
      /^\/tmp\/evictor\/op-[^/]+\/clouds\.yaml$/,
    );
    assert.match(String(line["msg"]), /clouds\.yaml: not valid YAML/);
  },
});

Deno.test({
  name: "start-up: a missing webhook certificate is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const env = await sharedEnvtest();
    const certDir = await stagedDir("startup-certs-");
    const { code, line } = await runUntilExit({
      kubeconfigPath: env.kubeconfigPath,
      args: [`--webhook-cert-dir=${certDir}`],
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "webhook certificate");
    assert.equal(line["where"], `${certDir}/tls.crt / ${certDir}/tls.key`);
    assert.match(String(line["reason"]), /no such file/i);
  },
});

Deno.test({
  name: "start-up: a missing metrics certificate is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const env = await sharedEnvtest();
    const certDir = await stagedDir("startup-certs-");
    const { code, line } = await runUntilExit({
      kubeconfigPath: env.kubeconfigPath,
      args: ["--webhook-bind-address=0", `--metrics-cert-dir=${certDir}`],
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "metrics certificate");
    assert.equal(line["where"], `${certDir}/tls.crt / ${certDir}/tls.key`);
    assert.match(String(line["reason"]), /no such file/i);
  },
});

Deno.test({
  name: "start-up: an invalid webhook certificate is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const env = await sharedEnvtest();
    const certDir = await stagedDir("startup-certs-");
    const pair = await env.servingCert(["localhost"]);
    // a certificate that is no PEM, with a real key beside it
    await Deno.writeTextFile(`${certDir}/tls.crt`, "not a certificate\n");
    await Deno.writeTextFile(`${certDir}/tls.key`, pair.keyPem);
    const { code, line } = await runUntilExit({
      kubeconfigPath: env.kubeconfigPath,
      args: [`--webhook-cert-dir=${certDir}`],
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "webhook certificate");
    assert.equal(line["where"], `${certDir}/tls.crt / ${certDir}/tls.key`);
  },
});

Deno.test({
  name: "start-up: a metrics address in use is one fatal line, exit 1",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const env = await sharedEnvtest();
    const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const address = `127.0.0.1:${(taken.addr as Deno.NetAddr).port}`;
    try {
      const { code, line } = await runUntilExit({
        kubeconfigPath: env.kubeconfigPath,
        args: [
          "--webhook-bind-address=0",
          `--metrics-bind-address=${address}`,
          "--insecure-metrics",
        ],
      });
      assert.equal(code, 1);
      assert.equal(line["what"], "metrics server");
      assert.equal(line["where"], address);
      assert.match(String(line["reason"]), /in use/i);
    } finally {
      taken.close();
    }
  },
});

const noBroker = await rabbitMqMissing();

Deno.test({
  name:
    "start-up: Nova's notification exchange missing on a real RabbitMQ is one fatal line naming it, the vhost and Nova's settings, exit 1",
  ignore: noBroker !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const mq = await sharedRabbitMq();
    const dir = await stagedDir("startup-");
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      kubeconfig(`https://127.0.0.1:${freePort()}`),
    );
    await Deno.writeTextFile(`${dir}/url`, `${mq.feedUrl}\n`);
    const exchange = `nova-missing-${crypto.randomUUID().slice(0, 8)}`;
    const { code, line } = await runUntilExit({
      kubeconfigPath: `${dir}/kubeconfig`,
      args: [
        `--nova-notifications-url-file=${dir}/url`,
        `--nova-notifications-exchange=${exchange}`,
      ],
    });
    assert.equal(code, 1);
    assert.equal(line["what"], "--nova-notifications-exchange");
    assert.equal(line["where"], exchange);
    const msg = String(line["msg"]);
    assert.match(msg, new RegExp(`'${exchange}' does not exist in vhost '/'`));
    for (
      const part of [
        "[DEFAULT] control_exchange",
        "[oslo_messaging_notifications] transport_url",
        "driver = messagingv2",
        "[notifications] notification_format",
      ]
    ) {
      assert.ok(msg.includes(part), `${part} in ${msg}`);
    }
    assert.ok(!msg.includes("evictor-pw"), "no credentials in the line");
  },
});
