/**
 * evictor's entry point: `evictor run | kubectl | version | help`.
 * Compiled by `deno task compile` with the permissions in
 * app/permissions.ts; tests run it with exactly those permissions.
 *
 * @module
 */
import { mainCommand } from "./app/main_command.ts";

if (import.meta.main) {
  Deno.exit(await mainCommand(Deno.args));
}
