/**
 * The Nova simulator: the one fake of the system. Keystone, Nova and
 * Placement on loopback, with a virtual clock, faults and counters.
 *
 * @example
 * ```ts ignore
 * import { startNovaSim } from "./mod.ts";
 * const sim = await startNovaSim({ hosts: [{ name: "a" }, { name: "b" }] });
 * console.log(sim.authUrl, sim.credentials.password.username);
 * await sim.close();
 * ```
 *
 * @module
 */

export * from "./scenario.ts";
export * from "./sim_clock.ts";
export * from "./counters.ts";
export * from "./world.ts";
export * from "./notifier.ts";
export * from "./server.ts";
