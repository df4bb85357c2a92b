// Run with app/permissions.ts's PERMISSION_FLAGS by tests/deploy_test.ts:
// prints what each forbidden operation did, one JSON line.
const results: Record<string, string> = {};
async function attempt(name: string, fn: () => Promise<unknown>) {
  try {
    await fn();
    results[name] = "allowed";
  } catch (e) {
    results[name] = e instanceof Error ? e.name : String(e);
  }
}
await attempt("read /etc/hostname", () => Deno.readTextFile("/etc/hostname"));
await attempt(
  "read /root",
  () => Deno.readDir("/root")[Symbol.asyncIterator]().next(),
);
await attempt("spawn true", () => new Deno.Command("true").output());
await attempt(
  "write /tmp/evictor/x",
  () => Deno.writeTextFile("/tmp/evictor/x", "x"),
);
await attempt(
  "read /etc/openstack",
  () =>
    Deno.stat("/etc/openstack").catch((e) => {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }),
);
console.log(JSON.stringify(results));
