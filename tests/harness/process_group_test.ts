/**
 * startProcessGroup's promise: a server that forks (as uwsgi, oslo.service
 * and Erlang do) leaves nothing behind when the test process is killed with
 * SIGKILL, the case no clean-up code can handle.
 */
import assert from "node:assert/strict";

const HERE = new URL("./processes.ts", import.meta.url).href;

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // A zombie (state Z) has ended; only its exit status is left.
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

Deno.test("startProcessGroup: a forking server is gone after its owner is SIGKILLed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "evictor-pgroup-" });
  try {
    const pids = `${dir}/pids`;
    // The owner starts a "server" that forks two workers and writes their
    // pids, then waits to be killed.
    const owner = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { startProcessGroup } from "${HERE}";
         startProcessGroup("srv", "bash", ["-c", "sleep 600 & echo $! >> ${pids}; sleep 600 & echo $! >> ${pids}; wait"], "${dir}/srv.log");
         setInterval(() => {}, 1000);`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    const deadline = Date.now() + 30_000;
    let workers: number[] = [];
    while (Date.now() < deadline) {
      workers = (await Deno.readTextFile(pids).catch(() => "")).trim()
        .split("\n").filter((x) => x !== "").map(Number);
      if (workers.length === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(workers.length, 2, "the server did not start its workers");
    assert.ok(workers.every(alive));
    owner.kill("SIGKILL");
    await owner.status;
    const gone = Date.now() + 10_000;
    while (Date.now() < gone && workers.some(alive)) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(workers.filter(alive), [], "workers outlived the owner");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startProcess: a stop that gives up kills the process inside the watchdog, not only the watchdog", async () => {
  const { startProcess } = await import("./processes.ts");
  const dir = await Deno.makeTempDir({ prefix: "evictor-stop-" });
  try {
    const pidPath = `${dir}/pid`;
    // a process that ignores SIGTERM, as an operator stuck in its stop
    const p = startProcess(
      "stubborn",
      "bash",
      ["-c", `trap '' TERM; echo $$ > ${pidPath}; while :; do sleep 0.1; done`],
      `${dir}/log`,
    );
    let pid = 0;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && pid === 0) {
      pid = Number((await Deno.readTextFile(pidPath).catch(() => "")).trim());
      if (pid === 0) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(pid > 0 && alive(pid), "the process did not start");
    // the child is unref'd: something must keep this test's loop alive
    const keepAlive = setInterval(() => {}, 100);
    try {
      await p.stop(300);
    } finally {
      clearInterval(keepAlive);
    }
    const gone = Date.now() + 10_000;
    while (Date.now() < gone && alive(pid)) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(!alive(pid), `process ${pid} outlived the stop`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
