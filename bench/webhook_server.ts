/**
 * The process bench:webhook measures: an operator with only the webhooks
 * registered (their informers included), serving TLS on loopback. Its own
 * file so that it loads only what `evictor` loads, and runs with the
 * binary's permissions and V8 flags (app/permissions.ts). Prints
 * `{"port":N,"metricsPort":M}` once listening; stops when stdin closes.
 *
 * Usage: deno run <permissions> bench/webhook_server.ts KUBECONFIG CERT KEY
 *
 * @module
 */
import { silentLogger } from "../framework/logger.ts";
import { Operator } from "../framework/operator.ts";
import { parseConcurrencyFlags } from "../limits/flags.ts";
import { registerWebhooks } from "../webhooks/register.ts";

const [kubeconfigPath, certFile, keyFile] = Deno.args;
if (
  kubeconfigPath === undefined || certFile === undefined ||
  keyFile === undefined
) {
  throw new TypeError(
    `usage: webhook_server.ts KUBECONFIG CERT KEY, got ${Deno.args.length} arguments`,
  );
}
const flags = parseConcurrencyFlags("1", []);
if (!flags.ok) throw flags.error;
const operator = new Operator({
  name: "evictor-bench",
  kubeconfigPath,
  // /metrics (plain, the bench reads it): connections and requests by status
  healthAddress: false,
  metrics: { address: "127.0.0.1:0", insecure: true },
  handleSignals: false,
  logger: silentLogger(),
  webhook: { address: "127.0.0.1:0", certFile, keyFile },
});
registerWebhooks(operator, { flagSettings: flags.settings });
await operator.start();
console.log(JSON.stringify({
  port: operator.webhookPort,
  metricsPort: operator.metricsPort,
}));
// stop when the parent closes our stdin (also when it dies)
for await (const _ of Deno.stdin.readable) { /* wait for EOF */ }
await operator.stop();
Deno.exit(0);
