/**
 * The operator's Keystone and Nova sessions on the real cloud, over a drain:
 * tokens that expire while it runs (a second Keystone of the cloud issuing
 * 60-second tokens), and a Nova whose maximum microversion is below
 * evictor's default (a proxy playing Wallaby's 2.88 in a Keystone region of
 * its own).
 *
 * @module
 */
import assert from "node:assert/strict";
import { startShortTokenKeystone } from "../harness/openstack.ts";
import { startNovaRegionProxy } from "../harness/nova_region_proxy.ts";
import { laneCloud, type ServerSpec } from "./contract_backends.ts";
import {
  available,
  evictingReason,
  evictionYaml,
  recordsByName,
  withLane,
} from "./lane.ts";

/**
 * Token lifetime. Nova's compute calls Neutron with the user's token after
 * the copy (without `[service_user] send_service_user_token`): a token that
 * expires during a migration leaves the server MIGRATING with its record
 * `completed` (seen with 20 s tokens). The operator re-authenticates half a
 * lifetime before expiry, so a migration must end within 30 s here; the
 * drain outlasts a token.
 */
const TOKEN_SECONDS = 60;

Deno.test({
  name:
    "lane: tokens of 60 s expire during a drain: the operator re-authenticates and the drain succeeds, while Nova refuses an expired token",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cloud = await laneCloud();
    const keystone = await startShortTokenKeystone(cloud, TOKEN_SECONDS);
    try {
      // The premise: Nova checks the expiry of this Keystone's tokens.
      const issued = await fetch(`${keystone.authUrl}/auth/tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          auth: {
            identity: {
              methods: ["password"],
              password: {
                user: {
                  name: cloud.admin.username,
                  domain: { name: "Default" },
                  password: cloud.admin.password,
                },
              },
            },
            scope: {
              project: {
                name: cloud.admin.projectName,
                domain: { name: "Default" },
              },
            },
          },
        }),
      });
      await issued.body?.cancel();
      const issuedAt = Date.now();
      const early = issued.headers.get("x-subject-token") ?? "";
      assert.equal(issued.status, 201);
      const host = "node002";
      // Seven 5 s copies one after the other: 50 s or more.
      const servers: ServerSpec[] = ["a", "b", "c", "d", "e", "f", "g"].map((
        x,
      ) => ({
        name: `t${x}`,
        host,
        size: "small" as const,
      }));
      const yaml = cloud.cloudsYaml().replaceAll(
        cloud.authUrl,
        keystone.authUrl,
      );
      await withLane(servers, [host], [
        "--eviction-concurrency=1",
      ], async (lane) => {
        const t0 = Date.now();
        await lane.kubectl(
          ["create", "-f", "-"],
          evictionYaml(host, lane.labels, "short-tokens"),
        );
        await evictingReason(lane, host, "Succeeded");
        const seconds = (Date.now() - t0) / 1000;
        const log = await lane.op.log();
        const reauths = log.split("\n").filter((l) =>
          l.includes("Keystone token about to expire")
        ).length;
        const refused = log.split("\n").filter((l) =>
          l.includes("token refused (401)")
        )
          .length;
        console.log(
          `lane short tokens: drain ${
            seconds.toFixed(1)
          } s with ${TOKEN_SECONDS} s tokens; ${reauths} re-authentications before expiry, ${refused} after a 401`,
        );
        // The operator renews half a lifetime before expiry.
        assert.ok(
          seconds > TOKEN_SECONDS / 2,
          `the drain (${seconds} s) outlived half a token`,
        );
        assert.ok(
          reauths + refused >= 1,
          "the operator never re-authenticated",
        );
        for (const [name, rs] of await recordsByName(lane, host)) {
          assert.deepEqual(rs.map((m) => m.status), ["completed"], name);
        }
        // Once the first token has expired, Nova says so.
        const expired = issuedAt + TOKEN_SECONDS * 1000 + 1_500 - Date.now();
        if (expired > 0) await new Promise((r) => setTimeout(r, expired));
        const late = await fetch(`${cloud.endpoints.compute}/servers`, {
          headers: { "x-auth-token": early },
        });
        await late.body?.cancel();
        assert.equal(late.status, 401, "Nova accepted an expired token");
      }, { cloudsYaml: yaml });
    } finally {
      await keystone.stop();
    }
  },
});

Deno.test({
  name:
    "lane: a Nova whose maximum microversion is 2.88 (below evictor's 2.90): negotiated from its version document, drained at 2.88 without a 406",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const cloud = await laneCloud();
    const proxy = await startNovaRegionProxy(cloud, {
      region: `Old${crypto.randomUUID().slice(0, 6)}`,
      maxMicroversion: "2.88",
    });
    try {
      const host = "node001";
      await withLane(
        [
          { name: "old-a", host, size: "small" },
          { name: "old-b", host, size: "small" },
        ],
        [host],
        ["--eviction-concurrency=2"],
        async (lane) => {
          await lane.kubectl(
            ["create", "-f", "-"],
            evictionYaml(host, lane.labels, "old-nova"),
          );
          await evictingReason(lane, host, "Succeeded");
          const asked = proxy.calls.filter((c) => c.microversion !== undefined);
          const versions = [...new Set(asked.map((c) => c.microversion))];
          console.log(
            `lane old Nova: ${proxy.calls.length} calls through the proxy at ${
              versions.join(", ")
            }`,
          );
          assert.ok(asked.length > 0, "no call went through the old Nova");
          assert.deepEqual(
            proxy.calls.filter((c) => c.status === 406).map((c) => c.path),
            [],
          );
          assert.deepEqual(versions, ["2.88"]);
          assert.ok(
            proxy.calls.some((c) => /^\/v2\.1\/?$/.test(c.path)),
            "the version document was never read",
          );
          for (const [name, rs] of await recordsByName(lane, host)) {
            assert.deepEqual(rs.map((m) => m.status), ["completed"], name);
          }
          const log = await lane.op.log();
          assert.match(log, /compute microversion negotiated/);
        },
        { cloudsYaml: proxy.cloudsYaml() },
      );
    } finally {
      await proxy.close();
    }
  },
});
