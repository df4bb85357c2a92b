/**
 * hack/build_progress.sh's elapsed lines, and a build script's output
 * through a pipe: an elapsed line while a build runs and while a second run
 * waits for its lock, the path on stdout, no escape sequences. Nothing here
 * measures wall time: the commands end only once the lines they wait for
 * have been printed, so a loaded machine only makes the test slower.
 */
import assert from "node:assert/strict";

const HACK = new URL("./", import.meta.url).pathname;
const ESC = String.fromCharCode(27);

/**
 * Waits until `file` holds `count` lines matching `pattern`; gives up after
 * 1,200 looks (two minutes at least; lines are due every second).
 */
async function linesIn(file: string, pattern: RegExp, count: number) {
  for (let look = 0; look < 1200; look++) {
    const text = await Deno.readTextFile(file).catch(() => "");
    if (text.split("\n").filter((l) => pattern.test(l)).length >= count) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `${file}: fewer than ${count} lines matching ${pattern}: ${await Deno
      .readTextFile(file).catch(() => "")}`,
  );
}

/** Bash with build_progress.sh sourced, its stderr into `errFile`. */
function bash(script: string, errFile: string, env: Record<string, string>) {
  return new Deno.Command("bash", {
    args: [
      "-c",
      `set -euo pipefail; source ${HACK}build_progress.sh; ${script} 2>>${errFile}`,
    ],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test("with_elapsed: a line while the command runs, its exit status, its output on stderr", async () => {
  const dir = await Deno.makeTempDir({ prefix: "build-progress-" });
  try {
    const err = `${dir}/err`;
    // The command ends (7) once two elapsed lines came: they are printed
    // while it runs, not after; without them it gives up (9) after 600
    // looks.
    const out = await bash(
      `with_elapsed "tool: building x" bash -c 'for _ in $(seq 600); do [ "$(grep -c "elapsed" ${err})" -ge 2 ] && { echo built; exit 7; }; sleep 0.1; done; exit 9'`,
      err,
      { EVICTOR_PROGRESS_SECONDS: "1" },
    );
    assert.equal(out.code, 7);
    assert.equal(new TextDecoder().decode(out.stdout), "");
    const text = await Deno.readTextFile(err);
    assert.ok(!text.includes(ESC), JSON.stringify(text));
    const lines = text.trimEnd().split("\n");
    const ticks = lines.filter((l) => l !== "built");
    assert.ok(ticks.length >= 2, text);
    const seconds = ticks.map((l) => {
      const m = l.match(/^tool: building x: (\d+) s elapsed$/);
      assert.ok(m, `unexpected line ${JSON.stringify(l)}`);
      return Number(m[1]);
    });
    for (let i = 1; i < seconds.length; i++) {
      assert.ok((seconds[i] ?? 0) > (seconds[i - 1] ?? 0), text);
    }
    assert.deepEqual(lines.filter((l) => l === "built"), ["built"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with_elapsed refuses an interval that is not a whole number of seconds", async () => {
  const dir = await Deno.makeTempDir({ prefix: "build-progress-" });
  try {
    for (const bad of ["0", "1.5", "soon"]) {
      const out = await bash(`with_elapsed t true`, `${dir}/err`, {
        EVICTOR_PROGRESS_SECONDS: bad,
      });
      assert.equal(out.code, 2, bad);
    }
    assert.deepEqual(
      (await Deno.readTextFile(`${dir}/err`)).trimEnd().split("\n"),
      ["0", "1.5", "soon"].map((v) =>
        `EVICTOR_PROGRESS_SECONDS=${v}: expected a whole number of seconds >= 1`
      ),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hack/promtool/build.sh through a pipe: elapsed lines while building and while a second run waits, plain text, the path on stdout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "build-progress-" });
  try {
    // A stand-in for `go` (the real build takes minutes; demo and README
    // show it): it writes the `-o` binary once the test releases it.
    await Deno.mkdir(`${dir}/bin`);
    await Deno.writeTextFile(
      `${dir}/bin/go`,
      `#!/usr/bin/env bash
while [[ "$1" != "-o" ]]; do shift; done
until [[ -e ${dir}/release ]]; do sleep 0.1; done
printf '#!/bin/sh\\n' > "$2" && chmod +x "$2"
`,
    );
    await Deno.chmod(`${dir}/bin/go`, 0o755);
    const env = {
      PATH: `${dir}/bin:/usr/bin:/bin`,
      EVICTOR_CACHE_DIR: `${dir}/cache`,
      EVICTOR_PROGRESS_SECONDS: "1",
    };
    // Both through pipes (no terminal), stderr to a file like `2>log`.
    const run = (name: string) =>
      new Deno.Command("bash", {
        args: ["-c", `bash ${HACK}promtool/build.sh 2>${dir}/${name} | cat`],
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
    const first = run("first");
    await linesIn(`${dir}/first`, /^promtool: building ./, 1);
    const second = run("second");
    await linesIn(`${dir}/first`, /^promtool: building: \d+ s elapsed$/, 2);
    await linesIn(
      `${dir}/second`,
      /^promtool: waiting for another build into .* \(lock .*\.lock\): \d+ s elapsed$/,
      2,
    );
    await Deno.writeTextFile(`${dir}/release`, "");
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.code, 0);
    assert.equal(b.code, 0);
    const path = new TextDecoder().decode(a.stdout).trim();
    assert.match(path, new RegExp(`^${dir}/cache/promtool/v[^/]+/promtool$`));
    assert.equal(new TextDecoder().decode(b.stdout).trim(), path);
    for (const name of ["first", "second"]) {
      const text = await Deno.readTextFile(`${dir}/${name}`);
      assert.ok(!text.includes(ESC), `${name}: ${JSON.stringify(text)}`);
    }
    assert.match(
      await Deno.readTextFile(`${dir}/first`),
      /\npromtool: built in \d+ s\n$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
