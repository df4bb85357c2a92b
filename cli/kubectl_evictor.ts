/**
 * `kubectl-evictor`: the kubectl plugin's entry point. kubectl runs it for
 * `kubectl evictor ...` when it is on PATH (compiled by `deno task compile`,
 * or `bin/kubectl-evictor` from a checkout).
 *
 * @module
 */
import { runPlugin } from "./kubectl_plugin.ts";
import { loadPluginKubeConfig } from "./kube_config.ts";
import { errorLine } from "./error_line.ts";

if (import.meta.main) {
  const encoder = new TextEncoder();
  // Whatever escapes (a rejected promise nobody awaited): one line, no stack.
  const fail = (e: unknown) => {
    Deno.stderr.writeSync(encoder.encode(`${errorLine(e).line}\n`));
    Deno.exit(1);
  };
  globalThis.addEventListener("unhandledrejection", (ev) => {
    ev.preventDefault();
    fail(ev.reason);
  });
  globalThis.addEventListener("error", (ev) => {
    ev.preventDefault();
    fail(ev.error);
  });
  const code = await runPlugin(Deno.args, {
    kubeConfig: (target) => loadPluginKubeConfig(target, Deno.env.toObject()),
    out: (line) => console.log(line),
    // Progress rewrites its line on a terminal (it starts with "\r").
    err: (line) =>
      Deno.stderr.writeSync(
        encoder.encode(line.startsWith("\r") ? line : `${line}\n`),
      ),
    interactive: Deno.stderr.isTerminal(),
  });
  Deno.exit(code);
}
