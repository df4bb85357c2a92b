/**
 * The `evictor` command line: `run`, `version` and `help`. (The kubectl
 * plugin is its own executable, `kubectl-evictor`: see cli/.)
 *
 * @module
 */
import meta from "../deno.json" with { type: "json" };
import { runHelp } from "./config.ts";

/** evictor's version, from deno.json. */
export const VERSION: string = meta.version;

const USAGE = `evictor ${VERSION}: drains OpenStack hypervisors from Kubernetes

Usage:
  evictor run [flags]       run the operator and its validating webhook
  evictor version           print the version
  evictor help [run]        this text, or the flags of run

The kubectl plugin is a separate executable: put kubectl-evictor on PATH and
run \`kubectl evictor help\`.
`;

/**
 * Runs the command line `args`; resolves with the exit code.
 *
 * @example
 * ```ts
 * import { mainCommand } from "./main_command.ts";
 * console.assert(await mainCommand(["version"]) === 0);
 * ```
 */
export async function mainCommand(args: readonly string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "run": {
      if (rest.includes("--help") || rest.includes("-h")) {
        console.log(runHelp());
        return 0;
      }
      const { runCommand } = await import("./run.ts");
      return await runCommand(rest);
    }
    case "version":
    case "--version":
      console.log(`evictor ${VERSION}`);
      return 0;
    case "help":
    case "--help":
    case "-h":
      console.log(rest[0] === "run" ? runHelp() : USAGE);
      return 0;
    case undefined:
      console.error(USAGE);
      return 2;
    default:
      console.error(
        `evictor: unknown command "${command}": expected run, version or help`,
      );
      return 2;
  }
}
