import assert from "node:assert/strict";
import fc from "fast-check";
import {
  codeClosure,
  compactExcludes,
  type DenoInfo,
  excludedFiles,
  npmPackagesOf,
} from "./npm_excludes.ts";

Deno.test("excludedFiles: what each rule leaves out of a package, and what it always keeps", () => {
  const cases: {
    pkg: string;
    files: string[];
    reached?: string[];
    out: string[];
  }[] = [
    {
      pkg: "@kubernetes/client-node",
      files: [
        "dist/index.js",
        "dist/index.d.ts",
        "dist/index.js.map",
        "dist/index.d.ts.map",
        "package.json",
        "LICENSE",
      ],
      out: ["dist/index.d.ts", "dist/index.d.ts.map", "dist/index.js.map"],
    },
    {
      pkg: "zod",
      files: ["index.js", "index.d.cts", "v4/core/a.d.mts", "src/index.ts"],
      out: ["index.d.cts", "src/index.ts", "v4/core/a.d.mts"],
    },
    {
      // a .ts module that is not a declaration stays (outside zod's src)
      pkg: "other",
      files: ["mod.ts", "data.map.json", "roadmap"],
      out: [],
    },
    {
      pkg: "bare-url",
      files: ["index.js", "prebuilds/linux-x64/bare-url.bare", "binding.js"],
      out: ["prebuilds/linux-x64/bare-url.bare"],
    },
    {
      pkg: "bintrees",
      files: ["index.js", "test/perf/100k", "test/perf/100k.js"],
      out: ["test/perf/100k"],
    },
    {
      // pruned to its import closure; package.json and licenses stay
      pkg: "pruned",
      files: [
        "dist/index.js",
        "dist/used.js",
        "dist/unused.js",
        "package.json",
        "LICENSE.md",
        "sub/package.json",
        "COPYING",
        "NOTICE",
      ],
      reached: ["dist/index.js", "dist/used.js"],
      out: ["dist/unused.js"],
    },
  ];
  for (const c of cases) {
    assert.deepEqual(
      excludedFiles(
        c.pkg,
        c.files,
        c.reached === undefined ? undefined : new Set(c.reached),
      ),
      c.out,
      c.pkg,
    );
  }
});

Deno.test("excludedFiles: a rule for one package that matches none of its files names the package, the pattern and what to do", () => {
  assert.throws(
    () => excludedFiles("bintrees", ["index.js", "test/perf/10k"]),
    (e: unknown) =>
      e instanceof RangeError &&
      /npm package bintrees has no file matching \/\^test\\\/perf\\\/100k\$\/ .*drop or correct the rule in hack\/npm_excludes\.ts/
        .test(e.message),
  );
});

Deno.test("compactExcludes: a folder whose files are all excluded is named once", () => {
  const cases: { files: string[]; excluded: string[]; out: string[] }[] = [
    { files: ["a.js"], excluded: [], out: [] },
    {
      files: ["a.js", "p/x/1.bare", "p/y/2.bare", "p/z.bare"],
      excluded: ["p/x/1.bare", "p/y/2.bare", "p/z.bare"],
      out: ["p"],
    },
    {
      files: ["d/a.js", "d/a.d.ts", "d/g/b.d.ts", "d/g/c.d.ts"],
      excluded: ["d/a.d.ts", "d/g/b.d.ts", "d/g/c.d.ts"],
      out: ["d/a.d.ts", "d/g"],
    },
    { files: ["x.d.ts"], excluded: ["x.d.ts"], out: ["x.d.ts"] },
  ];
  for (const c of cases) {
    assert.deepEqual(
      compactExcludes(c.files, c.excluded),
      c.out,
      JSON.stringify(c),
    );
  }
});

Deno.test("compactExcludes: the paths it names cover exactly the excluded files (property)", () => {
  const path = fc.array(fc.constantFrom("a", "b", "c"), {
    minLength: 1,
    maxLength: 4,
  }).map((p) => p.join("/") + ".f");
  fc.assert(
    fc.property(
      fc.uniqueArray(path, { maxLength: 30 }),
      fc.infiniteStream(fc.boolean()),
      (files, picks) => {
        const excluded = files.filter(() => picks.next().value);
        const named = compactExcludes(files, excluded);
        const covered = files.filter((f) =>
          named.some((n) => f === n || f.startsWith(`${n}/`))
        );
        assert.deepEqual(covered.sort(), [...excluded].sort());
      },
    ),
  );
});

/** A module graph: `edges` maps a specifier to its code and type imports. */
function info(
  roots: string[],
  edges: Record<string, { code?: string[]; types?: string[]; npm?: string }>,
  npmPackages: DenoInfo["npmPackages"] = {},
): DenoInfo {
  return {
    roots,
    redirects: { "file:///r.js": "file:///real.js" },
    npmPackages,
    modules: Object.entries(edges).map(([specifier, e]) => ({
      specifier,
      ...(e.npm ? { npmPackage: e.npm } : {}),
      dependencies: [
        ...(e.code ?? []).map((s) => ({ code: { specifier: s } })),
        ...(e.types ?? []).map(() => ({})),
        // an import Deno could not resolve: the walk goes on past it
        { code: { error: "Relative import path not prefixed" } },
      ],
    })),
  };
}

Deno.test("codeClosure and npmPackagesOf follow code imports and redirects, not type-only imports", () => {
  const pkg = (name: string, dependencies: string[] = []) => ({
    name,
    version: "1.0.0",
    dependencies,
  });
  const graph = info(["file:///main.ts"], {
    "file:///main.ts": {
      code: ["file:///a.ts", "file:///r.js", "npm:/x@1.0.0"],
      types: ["npm:/t@1.0.0"],
    },
    "file:///a.ts": { code: ["file:///main.ts"] },
    "file:///real.js": {},
    "npm:/x@1.0.0": { npm: "x@1.0.0" },
    "npm:/t@1.0.0": { npm: "t@1.0.0" },
  }, {
    "x@1.0.0": pkg("x", ["y@1.0.0"]),
    "y@1.0.0": pkg("y"),
    "t@1.0.0": pkg("t"),
  });
  assert.deepEqual([...codeClosure(graph)].sort(), [
    "file:///a.ts",
    "file:///main.ts",
    "file:///real.js",
    "npm:/x@1.0.0",
  ]);
  assert.deepEqual(npmPackagesOf(graph), ["x@1.0.0", "y@1.0.0"]);
});
