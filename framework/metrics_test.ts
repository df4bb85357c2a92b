import assert from "node:assert/strict";
import { FrameworkMetrics } from "./metrics.ts";

const config = new URL("../deno.json", import.meta.url);
const metricsModule = new URL("./metrics.ts", import.meta.url);

Deno.test("process_resident_memory_bytes is the process's RSS without --allow-all", async () => {
  // the binary reads only a few folders; prom-client's own gauge read 0 there
  const script = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      script,
      `import { FrameworkMetrics } from ${JSON.stringify(metricsModule.href)};
const m = new FrameworkMetrics({ prefix: "evictor_" });
console.log(await m.registry.metrics());`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--frozen",
        `--config=${config.pathname}`,
        "--allow-read=/proc/self",
        "--allow-env",
        "--allow-sys=hostname,osRelease,loadavg,uid,gid",
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const line = text.split("\n").find((l) =>
      l.startsWith("process_resident_memory_bytes ")
    );
    assert.ok(line !== undefined, text);
    const rss = Number(line.split(" ")[1]);
    // a Deno process holds at least 10 MB; a broken reading says 0
    assert.ok(rss > 10 * 1024 * 1024, line);
  } finally {
    await Deno.remove(script);
  }
});

Deno.test("process metrics carry their standard names, the framework's its prefix", async () => {
  const m = new FrameworkMetrics({ prefix: "x_" });
  const text = await m.registry.metrics();
  const lines = text.split("\n").filter((l) =>
    l.startsWith("process_resident_memory_bytes ")
  );
  assert.equal(lines.length, 1);
  assert.ok(Number(lines[0]?.split(" ")[1]) > 0);
  const names = new Set(
    text.split("\n").filter((l) => l.startsWith("# TYPE ")).map((l) =>
      l.split(" ")[2] ?? ""
    ),
  );
  for (
    const standard of [
      "process_cpu_seconds_total",
      "process_start_time_seconds",
    ]
  ) {
    assert.ok(names.has(standard), `${standard} missing: ${[...names]}`);
  }
  // nothing of prom-client's defaults is prefixed any more
  assert.deepEqual(
    [...names].filter((n) =>
      n.startsWith("x_process_") || n.startsWith("x_nodejs_")
    ),
    [],
  );
  assert.ok(names.has("x_reconcile_total"));
});
