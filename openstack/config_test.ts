import assert from "node:assert/strict";
import { ConfigError, loadCloudConfig } from "./config.ts";

const HOME = "/home/op";
const CWD = "/work";

function sources(
  env: Record<string, string>,
  files: Record<string, string> = {},
) {
  return {
    env,
    homeDir: HOME,
    cwd: CWD,
    readTextFile: (p: string) => files[p],
  };
}

const PASSWORD_ENV = {
  OS_AUTH_URL: "https://keystone.example:5000",
  OS_USERNAME: "admin",
  OS_PASSWORD: "pw",
  OS_USER_DOMAIN_NAME: "Default",
  OS_PROJECT_NAME: "admin",
  OS_PROJECT_DOMAIN_NAME: "Default",
};

const CLOUDS = `
clouds:
  prod:
    region_name: RegionTwo
    interface: internal
    auth:
      auth_url: https://keystone.prod/v3/
      username: evictor
      user_domain_name: Default
      project_id: p-123
  appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: http://ks/identity
      application_credential_id: ac-1
      application_credential_secret: from-file
`;
const SECURE = `
clouds:
  prod:
    auth:
      password: from-secure
`;

Deno.test("config: OS_* variables alone give a password config", () => {
  const c = loadCloudConfig({ sources: sources(PASSWORD_ENV) });
  assert.equal(c.authUrl, "https://keystone.example:5000/v3");
  assert.deepEqual(c.auth, {
    type: "password",
    username: "admin",
    password: "pw",
    userDomainName: "Default",
    projectName: "admin",
    projectDomainName: "Default",
  });
  assert.equal(c.interface, "public");
  assert.equal(c.insecure, false);
  assert.equal(c.computeApiVersion, "2.90");
  assert.equal(c.computeApiVersionSet, false, "negotiated, not pinned");
  assert.equal(c.placementApiVersion, "1.39");
  assert.ok(Object.isFrozen(c));
});

Deno.test("config: application credential from OS_* variables, region, interface, version", () => {
  const c = loadCloudConfig({
    sources: sources({
      OS_AUTH_URL: "http://ks:5000/v3",
      OS_APPLICATION_CREDENTIAL_ID: "id1",
      OS_APPLICATION_CREDENTIAL_SECRET: "s",
      OS_REGION_NAME: "R1",
      OS_INTERFACE: "internal",
      OS_INSECURE: "true",
      OS_COMPUTE_API_VERSION: "2.95",
    }),
  });
  assert.deepEqual(c.auth, {
    type: "v3applicationcredential",
    applicationCredentialId: "id1",
    applicationCredentialSecret: "s",
  });
  assert.equal(c.regionName, "R1");
  assert.equal(c.interface, "internal");
  assert.equal(c.insecure, true);
  assert.equal(c.computeApiVersion, "2.95");
  assert.equal(c.computeApiVersionSet, true);
});

Deno.test("config: OS_CLOUD picks a cloud in ~/.config/openstack, merged with secure.yaml", () => {
  const c = loadCloudConfig({
    sources: sources({ OS_CLOUD: "prod" }, {
      [`${HOME}/.config/openstack/clouds.yaml`]: CLOUDS,
      [`/etc/openstack/secure.yaml`]: SECURE,
    }),
  });
  assert.equal(c.cloud, "prod");
  assert.equal(c.authUrl, "https://keystone.prod/v3");
  assert.equal(c.regionName, "RegionTwo");
  assert.equal(c.interface, "internal");
  assert.deepEqual(c.auth, {
    type: "password",
    username: "evictor",
    userDomainName: "Default",
    password: "from-secure",
    projectId: "p-123",
  });
});

Deno.test("config: ./clouds.yaml wins over ~/.config and /etc; a flag wins over OS_CLOUD", () => {
  const c = loadCloudConfig({
    cloud: "appcred",
    sources: sources({ OS_CLOUD: "prod" }, {
      [`${CWD}/clouds.yaml`]: CLOUDS,
      [`${HOME}/.config/openstack/clouds.yaml`]: "clouds: {}",
    }),
  });
  assert.equal(c.cloud, "appcred");
  assert.equal(c.authUrl, "http://ks/identity/v3");
  assert.equal(c.auth.type, "v3applicationcredential");
});

Deno.test("config: OS_CLIENT_CONFIG_FILE names the file; OS_* fill what it leaves out", () => {
  const c = loadCloudConfig({
    sources: sources({
      OS_CLOUD: "prod",
      OS_CLIENT_CONFIG_FILE: "/etc/evictor/clouds.yaml",
      OS_PASSWORD: "from-env",
    }, { "/etc/evictor/clouds.yaml": CLOUDS }),
  });
  assert.equal(c.auth.type === "password" && c.auth.password, "from-env");
});

Deno.test("config: CA bundle is read from OS_CACERT", () => {
  const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const c = loadCloudConfig({
    sources: sources({ ...PASSWORD_ENV, OS_CACERT: "/ca.pem" }, {
      "/ca.pem": pem,
    }),
  });
  assert.deepEqual(c.caCert, { path: "/ca.pem", pem });
});

const noUser = { ...PASSWORD_ENV, OS_USERNAME: "" };
const ERRORS: [
  string,
  Record<string, string>,
  Record<string, string>,
  RegExp,
][] = [
  [
    "nothing set",
    {},
    {},
    /^OS_AUTH_URL: not set; expected OS_CLOUD naming a cloud/,
  ],
  [
    "cloud without clouds.yaml",
    { OS_CLOUD: "prod" },
    {},
    /^OS_CLOUD: cloud "prod" requested but no clouds\.yaml found; looked in \/work\/clouds\.yaml, \/home\/op\/\.config\/openstack\/clouds\.yaml, \/etc\/openstack\/clouds\.yaml$/,
  ],
  [
    "unknown cloud",
    { OS_CLOUD: "dev" },
    { "/etc/openstack/clouds.yaml": CLOUDS },
    /^OS_CLOUD: cloud "dev" is not in \/etc\/openstack\/clouds\.yaml; expected one of: prod, appcred$/,
  ],
  [
    "OS_CLIENT_CONFIG_FILE missing",
    { OS_CLOUD: "prod", OS_CLIENT_CONFIG_FILE: "/nope.yaml" },
    {},
    /^OS_CLIENT_CONFIG_FILE: file "\/nope\.yaml" does not exist; expected a clouds\.yaml$/,
  ],
  [
    "invalid YAML",
    { OS_CLOUD: "prod" },
    { "/work/clouds.yaml": "clouds: [\n  : :" },
    /^\/work\/clouds\.yaml: not valid YAML: /,
  ],
  [
    "wrong shape",
    { OS_CLOUD: "prod" },
    {
      "/work/clouds.yaml":
        "clouds:\n  prod:\n    auth:\n      auth_url: 5000\n",
    },
    /^\/work\/clouds\.yaml: clouds\.prod\.auth\.auth_url: .*expected a mapping "clouds"/,
  ],
  [
    "invalid secure.yaml",
    { OS_CLOUD: "prod" },
    { "/work/clouds.yaml": CLOUDS, "/work/secure.yaml": "clouds: 3" },
    /^\/work\/secure\.yaml: clouds: /,
  ],
  [
    "auth_url not a URL",
    { ...PASSWORD_ENV, OS_AUTH_URL: "keystone" },
    {},
    /^OS_AUTH_URL: "keystone" is not a URL; expected http\(s\):\/\//,
  ],
  [
    "auth_url not http",
    { ...PASSWORD_ENV, OS_AUTH_URL: "ftp://keystone" },
    {},
    /^OS_AUTH_URL: "ftp:\/\/keystone" is not an http\(s\) URL/,
  ],
  [
    "auth_url missing in clouds.yaml",
    { OS_CLOUD: "x" },
    { "/work/clouds.yaml": "clouds:\n  x:\n    auth: {}\n" },
    /^\/work\/clouds\.yaml: clouds\.x\.auth\.auth_url \(or OS_AUTH_URL\): not set; expected the Keystone URL$/,
  ],
  [
    "unsupported auth type",
    { ...PASSWORD_ENV, OS_AUTH_TYPE: "v3oidcpassword" },
    {},
    /^OS_AUTH_TYPE: "v3oidcpassword" is not supported; expected password, v3password, token, v3token or v3applicationcredential$/,
  ],
  [
    "no user",
    noUser,
    {},
    /^OS_USERNAME: not set; expected a user name \(or OS_USER_ID\) for password authentication$/,
  ],
  [
    "no password",
    { ...PASSWORD_ENV, OS_PASSWORD: "" },
    {},
    /^OS_PASSWORD: not set; expected the password of user "admin"$/,
  ],
  [
    "no password, clouds.yaml",
    { OS_CLOUD: "prod" },
    { "/work/clouds.yaml": CLOUDS },
    /^\/work\/clouds\.yaml: clouds\.prod\.auth\.password \(or OS_PASSWORD\): not set; expected the password of user "evictor"$/,
  ],
  [
    "no user domain",
    { ...PASSWORD_ENV, OS_USER_DOMAIN_NAME: "" },
    {},
    /^OS_USER_DOMAIN_NAME: not set; expected the domain of user "admin" \(or OS_USER_DOMAIN_ID, or default_domain\)$/,
  ],
  [
    "no project",
    { ...PASSWORD_ENV, OS_PROJECT_NAME: "" },
    {},
    /^OS_PROJECT_NAME: not set; expected a project \(or OS_PROJECT_ID, or system_scope: all\) to scope the token to$/,
  ],
  [
    "no project domain",
    { ...PASSWORD_ENV, OS_PROJECT_DOMAIN_NAME: "" },
    {},
    /^OS_PROJECT_DOMAIN_NAME: not set; expected the domain of project "admin" \(or OS_PROJECT_DOMAIN_ID, or default_domain\)$/,
  ],
  [
    "app cred without secret",
    { OS_AUTH_URL: "http://ks", OS_APPLICATION_CREDENTIAL_ID: "x" },
    {},
    /^OS_APPLICATION_CREDENTIAL_SECRET: not set; expected the application credential's secret$/,
  ],
  [
    "app cred without id or name",
    { OS_AUTH_URL: "http://ks", OS_APPLICATION_CREDENTIAL_SECRET: "s" },
    {},
    /^OS_APPLICATION_CREDENTIAL_ID: not set; expected an application credential id \(or OS_APPLICATION_CREDENTIAL_NAME with the user\)$/,
  ],
  [
    "app cred by name without user",
    {
      OS_AUTH_URL: "http://ks",
      OS_APPLICATION_CREDENTIAL_NAME: "n",
      OS_APPLICATION_CREDENTIAL_SECRET: "s",
    },
    {},
    /^OS_USERNAME: not set; expected the owner \(or OS_USER_ID\) of application credential "n"$/,
  ],
  [
    "bad interface",
    { ...PASSWORD_ENV, OS_INTERFACE: "private" },
    {},
    /^OS_INTERFACE: "private" is not an endpoint interface; expected public, internal or admin$/,
  ],
  [
    "bad OS_INSECURE",
    { ...PASSWORD_ENV, OS_INSECURE: "maybe" },
    {},
    /^OS_INSECURE: "maybe" is not a boolean; expected true or false$/,
  ],
  [
    "missing CA file",
    { ...PASSWORD_ENV, OS_CACERT: "/ca.pem" },
    {},
    /^OS_CACERT: file "\/ca\.pem" does not exist; expected a PEM CA bundle$/,
  ],
  [
    "CA file without PEM",
    { ...PASSWORD_ENV, OS_CACERT: "/ca.pem" },
    { "/ca.pem": "hello" },
    /^OS_CACERT: file "\/ca\.pem" holds no PEM certificate; expected a PEM CA bundle$/,
  ],
  [
    "compute version too old",
    { ...PASSWORD_ENV, OS_COMPUTE_API_VERSION: "2.1" },
    {},
    /^OS_COMPUTE_API_VERSION: "2\.1" is not usable; expected a Nova microversion 2\.N >= 2\.59 \(default 2\.90\)$/,
  ],
  [
    "placement version malformed",
    { ...PASSWORD_ENV, OS_PLACEMENT_API_VERSION: "latest" },
    {},
    /^OS_PLACEMENT_API_VERSION: "latest" is not usable; expected a Placement microversion 1\.N >= 1\.6/,
  ],
];

for (const [name, env, files, expected] of ERRORS) {
  Deno.test(`config error: ${name}`, () => {
    assert.throws(
      () => loadCloudConfig({ sources: sources(env, files) }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, String(e));
        assert.match(e.message, expected);
        assert.ok(!e.message.includes("\n"), `one line: ${e.message}`);
        // where: the file, variable or flag the message starts with
        assert.match(e.where, /^(\/\S+|OS_[A-Z_]+|--[a-z-]+)$/, e.message);
        assert.ok(e.message.startsWith(`${e.where}: `), e.message);
        return true;
      },
    );
  });
}

Deno.test("config error: the flag name is used when the cloud comes from a flag", () => {
  assert.throws(
    () =>
      loadCloudConfig({
        cloud: "x",
        cloudFlagName: "--cloud",
        sources: sources({}, { "/work/clouds.yaml": CLOUDS }),
      }),
    /^ConfigError: --cloud: cloud "x" is not in \/work\/clouds\.yaml/,
  );
});
