/**
 * evictor's version (deno.json's `version`, embedded at build time as a JSON
 * module) and the User-Agent every request of ours carries, so that the API
 * server's audit log, Keystone's and Nova's logs tell our calls apart.
 *
 * @module
 */
import denoJson from "../deno.json" with { type: "json" };

/**
 * The version in deno.json.
 *
 * @example
 * ```ts
 * import { VERSION } from "./version.ts";
 * console.assert(/^\d+\.\d+\.\d+/.test(VERSION));
 * ```
 */
export const VERSION: string = denoJson.version;

/**
 * The operator's User-Agent: `evictor/<version>`.
 *
 * @example
 * ```ts
 * import { USER_AGENT, VERSION } from "./version.ts";
 * console.assert(USER_AGENT === `evictor/${VERSION}`);
 * ```
 */
export const USER_AGENT = `evictor/${VERSION}`;

/**
 * The kubectl plugin's User-Agent: `kubectl-evictor/<version>`, named after
 * its executable as the operator's is.
 *
 * @example
 * ```ts
 * import { PLUGIN_USER_AGENT, VERSION } from "./version.ts";
 * console.assert(PLUGIN_USER_AGENT === `kubectl-evictor/${VERSION}`);
 * ```
 */
export const PLUGIN_USER_AGENT = `kubectl-evictor/${VERSION}`;
