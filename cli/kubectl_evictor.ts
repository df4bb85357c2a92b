/**
 * `kubectl-evictor`: the kubectl plugin's entry point. kubectl runs it for
 * `kubectl evictor ...` when it is on PATH (compiled by `deno task compile`,
 * or `bin/kubectl-evictor` from a checkout).
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { runPlugin } from "./kubectl_plugin.ts";

if (import.meta.main) {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromDefault();
  const encoder = new TextEncoder();
  const code = await runPlugin(Deno.args, {
    kubeConfig,
    out: (line) => console.log(line),
    // Progress rewrites its line on a terminal (it starts with "\r").
    err: (line) =>
      Deno.stderr.writeSync(
        encoder.encode(line.startsWith("\r") ? line : `${line}\n`),
      ),
    interactive: Deno.stderr.isTerminal(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  });
  Deno.exit(code);
}
