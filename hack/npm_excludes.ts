/**
 * Which files of the npm packages that `deno compile` embeds are left out of
 * the binaries. `deno compile` embeds every file of every package an entry
 * point reaches; most of them are never loaded at run time. The decisions
 * are pure ({@linkcode excludedFiles}, {@linkcode compactExcludes}); the
 * adapter {@linkcode npmExcludeFlags} reads the packages from the npm cache
 * through `deno info` and turns them into `--exclude=PATH` flags (exact paths:
 * Deno 2.9's `--exclude` has no globs).
 *
 * Measured on the plugin (`kubectl-evictor`): 81 MB of embedded files before,
 * of which 31 MB were client-node's declarations and source maps, 14 MB
 * client-node's generated API code that nothing imports, and 6 MB native
 * addons of the Bare runtime; tests/compile_test.ts prints and bounds the
 * payload of both binaries.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/** One kind of file the binaries never read. */
export interface NpmExcludeRule {
  /** The package's name, or `"*"` for every package. */
  pkg: string;
  /** Matched against the file's path inside the package folder. */
  pattern: RegExp;
  /** Why no binary reads such a file. */
  why: string;
}

/**
 * The files left out by kind. A rule for one package that matches none of
 * its files fails the build (the package changed: drop or correct the rule).
 *
 * @example
 * ```ts
 * import { NPM_EXCLUDE_RULES } from "./npm_excludes.ts";
 * console.assert(NPM_EXCLUDE_RULES.every((r) => r.why.length > 0));
 * ```
 */
export const NPM_EXCLUDE_RULES: readonly NpmExcludeRule[] = [
  {
    pkg: "*",
    pattern: /\.d\.[cm]?ts$/,
    why:
      "type declarations: deno compile type-checks against the npm cache, the binary runs JavaScript only",
  },
  {
    pkg: "*",
    pattern: /\.[cm]?[jt]s\.map$/,
    why:
      "source maps: they point at sources the packages do not ship; stack traces show the JavaScript's lines",
  },
  {
    pkg: "*",
    pattern: /\.bare$/,
    why:
      "native addons of the Bare runtime (bare-fs, bare-url, ... through tar-fs); Deno loads only .node addons",
  },
  {
    pkg: "zod",
    pattern: /^src\//,
    why:
      "zod's TypeScript sources and tests, exported only under the @zod/source condition, which Deno does not set",
  },
  {
    pkg: "bintrees",
    pattern: /^test\/perf\/100k$/,
    why:
      "a 2 MB test fixture (prom-client -> tdigest -> bintrees) on which Deno 2.9 overflows its stack while embedding it (denoland/deno#36746)",
  },
];

/**
 * Pure-ESM packages pruned to what is loaded: every file outside the static
 * import closure of the modules imported from them is left out.
 * client-node's `dist/gen` holds a Promise API layer (7 MB) and API groups
 * that its index no longer imports; its `config.js` imports `gen/index.js`,
 * which reaches the rest, so importing client-node's submodules instead of
 * its index would save 22 small files only.
 *
 * @example
 * ```ts
 * import { ESM_PRUNED_PACKAGES } from "./npm_excludes.ts";
 * console.assert(ESM_PRUNED_PACKAGES.includes("@kubernetes/client-node"));
 * ```
 */
export const ESM_PRUNED_PACKAGES: readonly string[] = [
  "@kubernetes/client-node",
];

/** Never left out: Node's resolution reads package.json; licenses travel with the code. */
const ALWAYS_KEPT = /(^|\/)(package\.json|(LICEN[CS]E|COPYING|NOTICE)[^/]*)$/i;

/**
 * The files of package `pkg` (paths inside its folder) that the binaries
 * leave out: those a rule matches, and, when `reached` is given, every file
 * not in it. package.json and license files are always kept.
 *
 * @throws {RangeError} when a rule for `pkg` by name matches none of `files`.
 *
 * @example
 * ```ts
 * import { excludedFiles } from "./npm_excludes.ts";
 * const out = excludedFiles("x", ["index.js", "index.d.ts", "LICENSE"]);
 * console.assert(out.length === 1 && out[0] === "index.d.ts");
 * ```
 */
export function excludedFiles(
  pkg: string,
  files: readonly string[],
  reached?: ReadonlySet<string>,
  rules: readonly NpmExcludeRule[] = NPM_EXCLUDE_RULES,
): string[] {
  const applying = rules.filter((r) => r.pkg === "*" || r.pkg === pkg);
  for (const rule of applying) {
    if (rule.pkg !== "*" && !files.some((f) => rule.pattern.test(f))) {
      throw new RangeError(
        `npm package ${pkg} has no file matching ${rule.pattern} (${rule.why}): drop or correct the rule in hack/npm_excludes.ts`,
      );
    }
  }
  return files.filter((file) =>
    !ALWAYS_KEPT.test(file) &&
    (applying.some((r) => r.pattern.test(file)) ||
      (reached !== undefined && !reached.has(file)))
  ).sort();
}

/**
 * `excluded` (a subset of `files`) with every folder whose files are all
 * excluded named once instead of file by file: fewer `--exclude` flags.
 *
 * @example
 * ```ts
 * import { compactExcludes } from "./npm_excludes.ts";
 * const files = ["a.js", "pre/x.bare", "pre/y/z.bare"];
 * const out = compactExcludes(files, ["pre/x.bare", "pre/y/z.bare"]);
 * console.assert(out.length === 1 && out[0] === "pre");
 * ```
 */
export function compactExcludes(
  files: readonly string[],
  excluded: readonly string[],
): string[] {
  const out = new Set(excluded);
  // A folder is dropped whole when none of the files under it is kept.
  const keptFolders = new Set<string>();
  for (const file of files) {
    if (out.has(file)) continue;
    for (const folder of folders(file)) keptFolders.add(folder);
  }
  const result = new Set<string>();
  for (const file of excluded) {
    const whole = folders(file).find((f) => !keptFolders.has(f));
    result.add(whole ?? file);
  }
  return [...result].sort();
}

/** The folders of a relative path, outermost first: `a/b/c.js` -> `a`, `a/b`. */
function folders(file: string): string[] {
  const parts = file.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** The part of `deno info --json` read here. */
export interface DenoInfo {
  roots: string[];
  redirects: Record<string, string>;
  modules: {
    specifier: string;
    kind?: string;
    npmPackage?: string;
    dependencies?: { code?: { specifier?: string; error?: string } }[];
  }[];
  npmPackages: Record<
    string,
    {
      name: string;
      version: string;
      localPath?: string;
      dependencies: string[];
    }
  >;
}

/**
 * `deno info --frozen --json` of `entry` (a path), run from the repository
 * root (its import map and lockfile; a module inside the npm cache resolves
 * its imports as npm code).
 *
 * @example
 * ```ts ignore
 * const info = await denoInfo("cli/kubectl_evictor.ts");
 * ```
 */
export async function denoInfo(entry: string): Promise<DenoInfo> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--frozen", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `deno info ${entry} failed with exit code ${out.code}: ${
        new TextDecoder().decode(out.stderr).trim()
      }`,
    );
  }
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/**
 * The specifiers `info`'s roots reach through code imports only (a
 * type-only import loads nothing), redirects followed.
 *
 * @example
 * ```ts
 * import { codeClosure } from "./npm_excludes.ts";
 * const reached = codeClosure({
 *   roots: ["file:///a.js"],
 *   redirects: {},
 *   npmPackages: {},
 *   modules: [{ specifier: "file:///a.js", dependencies: [{}] }],
 * });
 * console.assert(reached.size === 1);
 * ```
 */
export function codeClosure(info: DenoInfo): Set<string> {
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const queue = [...info.roots];
  while (queue.length > 0) {
    const s = queue.pop()!;
    const specifier = info.redirects[s] ?? s;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      // An import Deno could not resolve has `code: { error }`, no specifier.
      if (dep.code?.specifier !== undefined) queue.push(dep.code.specifier);
    }
  }
  return seen;
}

/**
 * The npm packages (ids as `deno info` names them, `name@version`) that the
 * code of `info`'s roots imports, with their dependencies: what
 * `deno compile --exclude-unused-npm` embeds.
 *
 * @example
 * ```ts ignore
 * console.log(npmPackagesOf(await denoInfo("main.ts")));
 * ```
 */
export function npmPackagesOf(info: DenoInfo): string[] {
  const packages = new Set<string>();
  const add = (id: string) => {
    if (packages.has(id)) return;
    packages.add(id);
    const pkg = info.npmPackages[id];
    if (!pkg) throw new Error(`deno info lists no npm package ${id}`);
    for (const dep of pkg.dependencies) add(dep);
  };
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  for (const specifier of codeClosure(info)) {
    const id = modules.get(specifier)?.npmPackage;
    if (id !== undefined) add(id);
  }
  return [...packages].sort();
}

/** Every file under `dir`, as paths relative to it, through symlinked folders too. */
async function filesUnder(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    const stat = entry.isSymlink
      ? await Deno.stat(`${dir}/${rel}`)
      : { isDirectory: entry.isDirectory };
    if (stat.isDirectory) out.push(...await filesUnder(dir, rel));
    else out.push(rel);
  }
  return out;
}

/**
 * The modules of an ESM package that importers load first: its main export
 * (`exports` `.` for `import`/`default`, else `main`, else index.js) and
 * every subpath `info` imports from it.
 */
function entryModules(
  id: string,
  folder: string,
  manifest: { exports?: unknown; main?: string },
  info: DenoInfo,
): string[] {
  const main = (() => {
    const dot = typeof manifest.exports === "string" ||
        manifest.exports === undefined
      ? manifest.exports
      : (manifest.exports as Record<string, unknown>)["."];
    if (typeof dot === "string") return dot;
    if (dot && typeof dot === "object") {
      const target = (dot as Record<string, unknown>)["import"] ??
        (dot as Record<string, unknown>)["default"];
      if (typeof target === "string") return target;
      throw new TypeError(
        `npm package ${id}: exports["."] has neither an "import" nor a "default" path; ESM_PRUNED_PACKAGES in hack/npm_excludes.ts expects one`,
      );
    }
    return manifest.main ?? "index.js";
  })();
  const roots = [`${folder}/${main.replace(/^\.\//, "")}`];
  // `npm:/name@version/sub/path.js`: a module imported by its path
  const prefix = `npm:/${id}/`;
  for (const { specifier } of info.modules) {
    if (specifier.startsWith(prefix)) {
      roots.push(`${folder}/${specifier.slice(prefix.length)}`);
    }
  }
  return roots;
}

/**
 * The `--exclude=PATH` flags for the npm packages of `entry`'s graph: the
 * files of {@linkcode NPM_EXCLUDE_RULES} and, for
 * {@linkcode ESM_PRUNED_PACKAGES}, those outside the import closure. Paths
 * are resolved through symlinks, as Deno's embedding walk resolves them
 * (the exclusion matches paths exactly).
 *
 * @example
 * ```ts ignore
 * const { flags, files } = await npmExcludeFlags("cli/kubectl_evictor.ts");
 * ```
 */
export async function npmExcludeFlags(
  entry: string,
): Promise<{ flags: string[]; files: number }> {
  const info = await denoInfo(new URL(entry, ROOT).pathname);
  const flags: string[] = [];
  let count = 0;
  for (const id of npmPackagesOf(info)) {
    const pkg = info.npmPackages[id]!;
    if (pkg.localPath === undefined) {
      throw new Error(`deno info names no folder for npm package ${id}`);
    }
    const folder = await Deno.realPath(pkg.localPath);
    const files = await filesUnder(folder);
    let reached: Set<string> | undefined;
    if (ESM_PRUNED_PACKAGES.includes(pkg.name)) {
      const manifest = JSON.parse(
        await Deno.readTextFile(`${folder}/package.json`),
      );
      reached = new Set();
      for (const root of entryModules(id, folder, manifest, info)) {
        const closure = codeClosure(await denoInfo(root));
        for (const specifier of closure) {
          if (!specifier.startsWith("file://")) continue;
          const path = await Deno.realPath(new URL(specifier).pathname);
          if (path.startsWith(`${folder}/`)) {
            reached.add(path.slice(folder.length + 1));
          }
        }
      }
    }
    const excluded = excludedFiles(pkg.name, files, reached);
    count += excluded.length;
    for (const path of compactExcludes(files, excluded)) {
      flags.push(`--exclude=${folder}/${path}`);
    }
  }
  return { flags, files: count };
}
