/**
 * The clouds.yaml keys and OS_* variables in common use besides the basic
 * ones: default_domain, the domain shorthands and variants, token auth,
 * system scope, client certificates. Each resolves as openstacksdk /
 * gophercloud resolve it; each mistake names the key and what is expected.
 */
import assert from "node:assert/strict";
import { createTestCa } from "../tests/harness/pki.ts";
import { ConfigError, loadCloudConfig } from "./config.ts";

const AUTH_URL = "https://keystone.example:5000/v3";

function load(
  env: Record<string, string>,
  files: Record<string, string> = {},
) {
  return loadCloudConfig({
    sources: {
      env: { OS_AUTH_URL: AUTH_URL, ...env },
      homeDir: "/home/op",
      cwd: "/work",
      readTextFile: (p: string) => files[p],
    },
  });
}

const USER = { OS_USERNAME: "admin", OS_PASSWORD: "pw" };

Deno.test("config keys: domains of user and project, by variant and fallback", () => {
  const rows: [string, Record<string, string>, Record<string, string>][] = [
    [
      "OS_DEFAULT_DOMAIN fills both, as an id",
      { ...USER, OS_PROJECT_NAME: "p", OS_DEFAULT_DOMAIN: "default" },
      { userDomainId: "default", projectDomainId: "default" },
    ],
    [
      "an explicit domain wins over default_domain",
      {
        ...USER,
        OS_PROJECT_NAME: "p",
        OS_DEFAULT_DOMAIN: "default",
        OS_USER_DOMAIN_NAME: "Users",
      },
      { userDomainName: "Users", projectDomainId: "default" },
    ],
    [
      "OS_PROJECT_DOMAIN_ID and OS_USER_DOMAIN_ID",
      {
        ...USER,
        OS_PROJECT_NAME: "p",
        OS_PROJECT_DOMAIN_ID: "d-p",
        OS_USER_DOMAIN_ID: "d-u",
      },
      { userDomainId: "d-u", projectDomainId: "d-p" },
    ],
    [
      "an id wins over a name of the same domain (keystoneauth)",
      {
        ...USER,
        OS_PROJECT_NAME: "p",
        OS_PROJECT_DOMAIN_ID: "d-p",
        OS_PROJECT_DOMAIN_NAME: "ignored",
        OS_USER_DOMAIN_ID: "d-u",
        OS_USER_DOMAIN_NAME: "ignored",
      },
      { userDomainId: "d-u", projectDomainId: "d-p" },
    ],
    [
      "OS_DOMAIN_NAME fills both (the shorthand)",
      { ...USER, OS_PROJECT_NAME: "p", OS_DOMAIN_NAME: "Ops" },
      { userDomainName: "Ops", projectDomainName: "Ops" },
    ],
    [
      "OS_DOMAIN_ID fills what the specific keys leave",
      {
        ...USER,
        OS_PROJECT_NAME: "p",
        OS_DOMAIN_ID: "d-1",
        OS_USER_DOMAIN_NAME: "Users",
      },
      { userDomainName: "Users", projectDomainId: "d-1" },
    ],
  ];
  for (const [name, env, want] of rows) {
    const auth = load(env).auth as unknown as Record<string, unknown>;
    const got = Object.fromEntries(
      Object.entries(auth).filter(([k]) => /DomainId|DomainName/.test(k)),
    );
    assert.deepEqual(got, want, name);
  }
});

Deno.test("config keys: the same from clouds.yaml (default_domain, *_domain_id)", () => {
  const files = {
    "/work/clouds.yaml": `
clouds:
  dd:
    auth:
      auth_url: ${AUTH_URL}
      username: admin
      password: pw
      project_name: admin
      default_domain: default
  ids:
    auth:
      auth_url: ${AUTH_URL}
      user_id: u-1
      password: pw
      project_name: admin
      project_domain_id: default
`,
  };
  const dd = load({ OS_CLOUD: "dd" }, files).auth;
  assert.deepEqual(dd, {
    type: "password",
    username: "admin",
    userDomainId: "default",
    password: "pw",
    projectName: "admin",
    projectDomainId: "default",
  });
  const ids = load({ OS_CLOUD: "ids" }, files).auth;
  assert.deepEqual(ids, {
    type: "password",
    userId: "u-1",
    password: "pw",
    projectName: "admin",
    projectDomainId: "default",
  });
});

Deno.test("config keys: token auth (auth_type token/v3token, OS_TOKEN, inferred)", () => {
  for (const type of ["token", "v3token"]) {
    assert.deepEqual(
      load({ OS_AUTH_TYPE: type, OS_TOKEN: "gAAA", OS_PROJECT_ID: "p-1" })
        .auth,
      { type: "token", token: "gAAA", projectId: "p-1" },
    );
  }
  // a token and no password: token auth, as openstacksdk infers
  assert.deepEqual(
    load({ OS_TOKEN: "gAAA", OS_PROJECT_NAME: "p", OS_DEFAULT_DOMAIN: "d" })
      .auth,
    { type: "token", token: "gAAA", projectName: "p", projectDomainId: "d" },
  );
  assert.deepEqual(
    load({
      OS_AUTH_TYPE: "v3token",
      OS_AUTH_TOKEN: "gB",
      OS_SYSTEM_SCOPE: "all",
    })
      .auth,
    { type: "token", token: "gB", systemScope: "all" },
  );
  const file = load({ OS_CLOUD: "t" }, {
    "/work/clouds.yaml": `
clouds:
  t:
    auth_type: v3token
    auth:
      auth_url: ${AUTH_URL}
      token: from-file
      system_scope: all
`,
  });
  assert.deepEqual(file.auth, {
    type: "token",
    token: "from-file",
    systemScope: "all",
  });
});

Deno.test("config keys: system scope with a password", () => {
  assert.deepEqual(
    load({ ...USER, OS_USER_DOMAIN_ID: "default", OS_SYSTEM_SCOPE: "all" })
      .auth,
    {
      type: "password",
      username: "admin",
      userDomainId: "default",
      password: "pw",
      systemScope: "all",
    },
  );
});

const pair = await (await createTestCa("config-keys")).issue({
  commonName: "evictor",
  usage: "client",
});
const CERT = pair.certPem.trim();
const KEY = pair.keyPem.trim();
/** PEM headers around no key: TLS cannot load it. */
const BROKEN_KEY =
  "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----";

Deno.test("config keys: client certificate from cert/key and OS_CERT/OS_KEY", () => {
  const files = {
    "/pki/c.pem": CERT,
    "/pki/k.pem": KEY,
    "/pki/both.pem": `${CERT}\n${KEY}\n`,
    "/work/clouds.yaml": `
clouds:
  mtls:
    cert: /pki/c.pem
    key: /pki/k.pem
    auth:
      auth_url: ${AUTH_URL}
      application_credential_id: ac
      application_credential_secret: s
`,
  };
  const appCred = {
    OS_APPLICATION_CREDENTIAL_ID: "ac",
    OS_APPLICATION_CREDENTIAL_SECRET: "s",
  };
  assert.deepEqual(
    load({ ...appCred, OS_CERT: "/pki/c.pem", OS_KEY: "/pki/k.pem" }, files)
      .clientCert,
    {
      certPath: "/pki/c.pem",
      keyPath: "/pki/k.pem",
      certPem: CERT,
      keyPem: KEY,
    },
  );
  assert.equal(
    load({ OS_CLOUD: "mtls" }, files).clientCert?.keyPath,
    "/pki/k.pem",
  );
  // one file with both, as requests and keystoneauth accept it
  const both = load({ ...appCred, OS_CERT: "/pki/both.pem" }, files).clientCert;
  assert.deepEqual(both, {
    certPath: "/pki/both.pem",
    keyPath: "/pki/both.pem",
    certPem: CERT,
    keyPem: KEY,
  });
  assert.equal(load(appCred, files).clientCert, undefined);
});

Deno.test("config keys: each mistake names the key and what is expected", () => {
  const appCred = {
    OS_APPLICATION_CREDENTIAL_ID: "ac",
    OS_APPLICATION_CREDENTIAL_SECRET: "s",
  };
  const files = {
    "/pki/c.pem": CERT,
    "/pki/k.pem": KEY,
    "/pki/x": "junk",
    "/pki/broken": BROKEN_KEY,
  };
  const rows: [string, Record<string, string>, string, RegExp][] = [
    [
      "a token type without a token",
      { OS_AUTH_TYPE: "v3token", OS_PROJECT_ID: "p" },
      "OS_TOKEN",
      /OS_TOKEN: not set; expected the Keystone token to authenticate with/,
    ],
    [
      "a token without a scope",
      { OS_AUTH_TYPE: "token", OS_TOKEN: "t" },
      "OS_PROJECT_NAME",
      /OS_PROJECT_NAME: not set; expected a project \(or OS_PROJECT_ID, or system_scope: all\)/,
    ],
    [
      "a system scope other than all",
      { ...USER, OS_USER_DOMAIN_ID: "d", OS_SYSTEM_SCOPE: "some" },
      "OS_SYSTEM_SCOPE",
      /OS_SYSTEM_SCOPE: "some" is not a system scope; expected all/,
    ],
    [
      "system and project scope together",
      {
        ...USER,
        OS_USER_DOMAIN_ID: "d",
        OS_SYSTEM_SCOPE: "all",
        OS_PROJECT_ID: "p",
      },
      "OS_SYSTEM_SCOPE",
      /OS_SYSTEM_SCOPE: set together with OS_PROJECT_ID; expected one scope/,
    ],
    [
      "system scope with an application credential",
      { ...appCred, OS_SYSTEM_SCOPE: "all" },
      "OS_SYSTEM_SCOPE",
      /application credential, which carries its own scope/,
    ],
    [
      "a user with no domain at all",
      { ...USER, OS_PROJECT_ID: "p" },
      "OS_USER_DOMAIN_NAME",
      /OS_USER_DOMAIN_NAME: not set; expected the domain of user "admin" \(or OS_USER_DOMAIN_ID, or default_domain\)/,
    ],
    [
      "a project with no domain at all",
      { ...USER, OS_USER_DOMAIN_ID: "d", OS_PROJECT_NAME: "p" },
      "OS_PROJECT_DOMAIN_NAME",
      /expected the domain of project "p" \(or OS_PROJECT_DOMAIN_ID, or default_domain\)/,
    ],
    [
      "a key without a certificate",
      { ...appCred, OS_KEY: "/pki/k.pem" },
      "OS_CERT",
      /OS_CERT: not set, but OS_KEY is; expected the client certificate/,
    ],
    [
      "a certificate without a key",
      { ...appCred, OS_CERT: "/pki/c.pem" },
      "OS_KEY",
      /OS_KEY: not set; expected the private key \(PEM\) of client certificate "\/pki\/c.pem"/,
    ],
    [
      "a missing certificate file",
      { ...appCred, OS_CERT: "/pki/none", OS_KEY: "/pki/k.pem" },
      "OS_CERT",
      /OS_CERT: file "\/pki\/none" does not exist; expected a PEM client certificate/,
    ],
    [
      "a key file holding no key",
      { ...appCred, OS_CERT: "/pki/c.pem", OS_KEY: "/pki/x" },
      "OS_KEY",
      /OS_KEY: file "\/pki\/x" holds no PEM private key/,
    ],
    [
      "a key TLS cannot load",
      { ...appCred, OS_CERT: "/pki/c.pem", OS_KEY: "/pki/broken" },
      "OS_KEY",
      /OS_KEY: the certificate "\/pki\/c.pem" and key "\/pki\/broken" cannot be used for TLS \(.*\); expected a PEM certificate and its matching private key/,
    ],
    [
      "an unknown auth type",
      { OS_AUTH_TYPE: "v3oidcpassword" },
      "OS_AUTH_TYPE",
      /expected password, v3password, token, v3token or v3applicationcredential/,
    ],
  ];
  for (const [name, env, where, message] of rows) {
    assert.throws(
      () => load(env, files),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, name);
        assert.equal(e.where, where, `${name}: ${e.message}`);
        assert.match(e.message, message, name);
        return true;
      },
    );
  }
});

Deno.test("config keys: in clouds.yaml the message names the file and the key", () => {
  const files = {
    "/work/clouds.yaml": `
clouds:
  c:
    cert: /pki/none
    auth:
      auth_url: ${AUTH_URL}
      token: t
      system_scope: everything
`,
  };
  assert.throws(
    () => load({ OS_CLOUD: "c" }, files),
    /\/work\/clouds.yaml: clouds.c.auth.system_scope \(or OS_SYSTEM_SCOPE\): "everything" is not a system scope; expected all/,
  );
});
