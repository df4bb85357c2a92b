import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { VERSION } from "../app/version.ts";
import {
  archiveChecksums,
  archiveName,
  krewManifest,
  PLATFORMS,
  renderManifest,
} from "./krew.ts";

const MANIFEST = new URL("../plugins/krew/evictor.yaml", import.meta.url);

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    version: string;
    platforms: {
      selector: { matchLabels: { os: string; arch: string } };
      uri: string;
      sha256?: string;
      bin: string;
      files: { from: string; to: string }[];
    }[];
  };
}

Deno.test("plugins/krew/evictor.yaml: a krew Plugin of this version for linux and darwin, amd64 and arm64", async () => {
  const text = await Deno.readTextFile(MANIFEST);
  const m = parseYaml(text) as Manifest;
  assert.equal(m.apiVersion, "krew.googlecontainertools.github.com/v1alpha2");
  assert.equal(m.kind, "Plugin");
  assert.equal(m.metadata.name, "evictor");
  assert.equal(m.spec.version, `v${VERSION}`);
  assert.deepEqual(
    m.spec.platforms.map((p) => p.selector.matchLabels).map((l) =>
      `${l.os}/${l.arch}`
    ).sort(),
    ["darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"],
  );
  for (const p of m.spec.platforms) {
    const { os, arch } = p.selector.matchLabels;
    assert.equal(p.bin, "kubectl-evictor");
    assert.deepEqual(p.files, [{ from: "kubectl-evictor", to: "." }]);
    assert.ok(
      p.uri.endsWith(`/v${VERSION}/${archiveName(os, arch)}`),
      p.uri,
    );
  }
  // what hack/krew.ts writes (deno fmt may lay it out otherwise)
  assert.deepEqual(m, parseYaml(renderManifest(krewManifest(VERSION))));
});

Deno.test("hack/krew.ts --archives: each platform's sha256, a missing archive named", async () => {
  const dir = await Deno.makeTempDir({ prefix: "evictor-krew-" });
  try {
    for (const { os, arch } of PLATFORMS.slice(0, 3)) {
      await Deno.writeTextFile(
        `${dir}/${archiveName(os, arch)}`,
        `${os}-${arch}`,
      );
    }
    await assert.rejects(
      () => archiveChecksums(dir),
      /--archives: .*kubectl-evictor_darwin_arm64\.tar\.gz: no such file/,
    );
    await Deno.writeTextFile(`${dir}/${archiveName("darwin", "arm64")}`, "");
    const sums = await archiveChecksums(dir);
    // sha256 of the empty file
    assert.equal(
      sums.get(archiveName("darwin", "arm64")),
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    );
    const m = krewManifest(VERSION, sums);
    assert.ok(
      m.spec.platforms.every((p) => /^[0-9a-f]{64}$/.test(p.sha256 ?? "")),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
