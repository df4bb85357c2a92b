/**
 * evictor's entry point: `evictor run | version | help` (the kubectl plugin
 * is its own executable, `kubectl-evictor`, from cli/).
 * Compiled by `deno task compile` with the permissions in
 * app/permissions.ts; tests run it with exactly those permissions.
 *
 * @module
 */
import { mainCommand } from "./app/main_command.ts";

if (import.meta.main) {
  Deno.exit(await mainCommand(Deno.args));
}
