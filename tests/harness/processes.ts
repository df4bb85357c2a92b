/**
 * Child processes that never outlive the test run: each one is started under
 * a small bash watchdog that kills it as soon as this Deno process is gone,
 * even when Deno was killed with SIGKILL and could run no clean-up.
 *
 * @module
 */

/** A running server process. */
export interface ManagedProcess {
  readonly name: string;
  readonly logPath: string;
  /** Resolves with the exit code once the process has ended. */
  readonly exited: Promise<number>;
  /**
   * Sends SIGTERM, then after `graceMs` SIGKILL to the process and its
   * process group (not only to the watchdog around it), and waits for the
   * end.
   */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL to the process (no clean-up at all), and waits for the end. */
  kill(): Promise<void>;
}

// Runs "$@" in the background and polls: when the parent (the Deno test
// process) disappears, the child is killed. A TERM to the watchdog is passed
// on to the child; a USR1 makes it SIGKILL the child (SIGKILL itself cannot
// be passed on).
const WATCHDOG = `
parent=$1; log=$2; pidfile=$3; shift 3
"$@" >>"$log" 2>&1 &
child=$!
echo $child >"$pidfile"
trap 'kill -TERM $child 2>/dev/null; wait $child; exit $?' TERM INT
trap 'kill -KILL $child 2>/dev/null; wait $child; exit 137' USR1
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do
  sleep 0.3
done
kill -KILL $child 2>/dev/null
wait $child
`;

// The same for a server that forks workers (uwsgi, oslo.service, Erlang):
// job control puts the child in a process group of its own, and every signal
// goes to that whole group, so no worker outlives its parent or the test.
const GROUP_WATCHDOG = `
set -m
parent=$1; log=$2; pidfile=$3; shift 3
"$@" >>"$log" 2>&1 </dev/null &
child=$!
echo $child >"$pidfile"
trap 'kill -TERM -- -$child 2>/dev/null; wait $child; code=$?; kill -KILL -- -$child 2>/dev/null; exit $code' TERM INT
trap 'kill -KILL -- -$child 2>/dev/null; wait $child; exit 137' USR1
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do
  sleep 0.3
done
kill -KILL -- -$child 2>/dev/null
wait $child
`;

/**
 * Starts `command` with `args`, its output appended to `logPath`; with
 * `env`, in exactly that environment.
 *
 * @example
 * ```ts ignore
 * const p = startProcess("etcd", "/bin/etcd", ["--data-dir", "/tmp/x"], "/tmp/etcd.log");
 * await p.stop();
 * ```
 */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logPath: string,
  env?: Record<string, string>,
): ManagedProcess {
  return spawnWatched(WATCHDOG, name, command, args, logPath, env);
}

/**
 * Like {@linkcode startProcess}, for servers that fork workers: the process
 * and everything it forks form one process group, and stop, kill and the
 * watchdog (when this Deno process is gone) signal the whole group.
 *
 * @example
 * ```ts ignore
 * const p = startProcessGroup("nova-api", "nova-api", ["--config-file", "/x/nova.conf"], "/x/nova-api.log");
 * await p.stop();
 * ```
 */
export function startProcessGroup(
  name: string,
  command: string,
  args: string[],
  logPath: string,
  env?: Record<string, string>,
): ManagedProcess {
  return spawnWatched(GROUP_WATCHDOG, name, command, args, logPath, env);
}

function spawnWatched(
  watchdog: string,
  name: string,
  command: string,
  args: string[],
  logPath: string,
  env?: Record<string, string>,
): ManagedProcess {
  // The watchdog writes the child's pid here: a stop that gives up kills
  // the child itself (a SIGKILL of the watchdog alone left it running).
  const pidFile = `${logPath}.${crypto.randomUUID().slice(0, 8)}.pid`;
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      watchdog,
      "watchdog",
      String(Deno.pid),
      logPath,
      pidFile,
      command,
      ...args,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
    // With `env`, the child sees only that (and PATH, for the watchdog).
    ...(env === undefined ? {} : {
      clearEnv: true,
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...env },
    }),
  }).spawn();
  const exited = child.status.then((s) => s.code);
  void exited.then(() => Deno.remove(pidFile).catch(() => {}));
  // Do not keep the test's event loop alive just for this child.
  child.unref();
  let stopping: Promise<void> | undefined;
  return {
    name,
    logPath,
    exited,
    async kill() {
      try {
        child.kill("SIGUSR1");
      } catch {
        return; // already gone
      }
      await exited;
    },
    stop(graceMs = 5000) {
      stopping ??= (async () => {
        try {
          child.kill("SIGTERM");
        } catch {
          return; // already gone
        }
        const timer = setTimeout(() => {
          killInner(pidFile);
          try {
            child.kill("SIGKILL");
          } catch { /* gone */ }
        }, graceMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

/**
 * SIGKILL to the watched child named in `pidFile` and to its process group
 * (a server with workers, or the child of a group watchdog); nothing when
 * it is gone or never started.
 */
function killInner(pidFile: string): void {
  let pid: number;
  try {
    pid = Number(Deno.readTextFileSync(pidFile).trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  for (const target of [-pid, pid]) {
    try {
      Deno.kill(target, "SIGKILL");
    } catch { /* no such group or process */ }
  }
}

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** The last `lines` lines of a log file, for error messages. */
export async function tail(path: string, lines = 30): Promise<string> {
  try {
    const text = await Deno.readTextFile(path);
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/**
 * Makes a temporary folder under `root` owned by this process (its pid is
 * written into it), first removing folders with the same `prefix` whose
 * owner is gone: a test process killed before its clean-up leaves no folder
 * for long (the watchdogs already ended its servers).
 */
export async function makeOwnedTempDir(
  root: string,
  prefix: string,
): Promise<string> {
  await Deno.mkdir(root, { recursive: true });
  for await (const entry of Deno.readDir(root)) {
    if (!entry.isDirectory || !entry.name.startsWith(prefix)) continue;
    const dir = `${root}/${entry.name}`;
    const owner = await Deno.readTextFile(`${dir}/owner.pid`).catch(() => "");
    const alive = /^\d+$/.test(owner) &&
      await Deno.stat(`/proc/${owner}`).then(() => true, () => false);
    if (!alive) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const dir = await Deno.makeTempDir({ dir: root, prefix });
  await Deno.writeTextFile(`${dir}/owner.pid`, String(Deno.pid));
  return dir;
}

/** Whether something listens on 127.0.0.1:`port`. */
export async function tcpOpen(port: number): Promise<boolean> {
  try {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    c.close();
    return true;
  } catch {
    return false;
  }
}

/** Polls `check` every 500 ms until it is true; throws at the deadline. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  deadline: number,
  died: string[] = [],
): Promise<void> {
  let last = "";
  while (Date.now() < deadline) {
    if (died.length > 0) throw new Error(died.join("; "));
    try {
      if (await check()) return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (${last})` : ""}`);
}

/**
 * The project's cache folder for tools and state the tests build or start
 * (`EVICTOR_CACHE_DIR`, else `$XDG_CACHE_HOME/evictor`, else
 * `~/.cache/evictor`).
 */
export function cacheRoot(): string {
  const env = Deno.env.toObject();
  return env["EVICTOR_CACHE_DIR"] ??
    `${env["XDG_CACHE_HOME"] ?? `${env["HOME"] ?? "/root"}/.cache`}/evictor`;
}

/**
 * Runs an idempotent install script of `hack/` with bash, its output on
 * ours; throws naming the script and its exit code when it fails.
 */
export async function runInstallScript(path: string): Promise<void> {
  const out = await new Deno.Command("bash", {
    args: [path],
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    const name = path.slice(path.indexOf("hack/"));
    throw new Error(`${name} failed with exit code ${out.code}`);
  }
}
