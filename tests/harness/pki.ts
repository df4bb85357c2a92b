/**
 * A throw-away certificate authority for tests: it signs the API server's
 * serving certificate, client certificates (the API server trusts them for
 * authentication) and webhook serving certificates.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

const ALGORITHM: EcKeyGenParams & EcdsaParams = {
  name: "ECDSA",
  namedCurve: "P-256",
  hash: "SHA-256",
};
const DAY_MS = 24 * 60 * 60 * 1000;

/** A PEM certificate with its PEM (PKCS#8) private key. */
export interface CertificatePair {
  certPem: string;
  keyPem: string;
}

/** What a leaf certificate is for. */
export interface LeafOptions {
  commonName: string;
  /** Becomes the subject's O entries: Kubernetes reads them as groups. */
  organizations?: string[];
  /** DNS names and IP addresses for a serving certificate. */
  hosts?: string[];
  usage: "server" | "client";
}

/** A CA that signs leaf certificates. */
export interface TestCa extends CertificatePair {
  issue(options: LeafOptions): Promise<CertificatePair>;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

function escapeRdn(value: string): string {
  return value.replace(/([,+"\\<>;=])/g, "\\$1");
}

function isIp(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(":");
}

/**
 * Creates a new CA valid for a day (tests never outlive it).
 *
 * @example
 * ```ts
 * import { createTestCa } from "./pki.ts";
 * const ca = await createTestCa("evictor-test");
 * const leaf = await ca.issue({ commonName: "admin", usage: "client" });
 * console.log(leaf.certPem.startsWith("-----BEGIN CERTIFICATE-----"));
 * ```
 */
export async function createTestCa(name: string): Promise<TestCa> {
  const keys = await crypto.subtle.generateKey(ALGORITHM, true, [
    "sign",
    "verify",
  ]);
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + DAY_MS);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${escapeRdn(name)}`,
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return caFrom(caCert, keys.privateKey, await keyPem(keys.privateKey));
}

/**
 * Loads a CA made by {@linkcode createTestCa} from its PEM files, so that
 * another process can issue certificates that the same API server trusts.
 */
export async function loadTestCa(
  certPem: string,
  keyPem: string,
): Promise<TestCa> {
  const cert = new x509.X509Certificate(certPem);
  const key = await crypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(keyPem),
    ALGORITHM,
    true,
    ["sign"],
  );
  return caFrom(cert, key, keyPem);
}

function caFrom(
  caCert: x509.X509Certificate,
  caKey: CryptoKey,
  caKeyPem: string,
): TestCa {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + DAY_MS);

  async function issue(options: LeafOptions): Promise<CertificatePair> {
    const leafKeys = await crypto.subtle.generateKey(ALGORITHM, true, [
      "sign",
      "verify",
    ]);
    const subject = [
      `CN=${escapeRdn(options.commonName)}`,
      ...(options.organizations ?? []).map((o) => `O=${escapeRdn(o)}`),
    ].join(", ");
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature |
          x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        options.usage === "server"
          ? x509.ExtendedKeyUsage.serverAuth
          : x509.ExtendedKeyUsage.clientAuth,
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ];
    const hosts = options.hosts ?? [];
    if (hosts.length > 0) {
      extensions.push(
        new x509.SubjectAlternativeNameExtension(
          hosts.map((h): x509.JsonGeneralName => ({
            type: isIp(h) ? "ip" : "dns",
            value: h,
          })),
        ),
      );
    }
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject,
      issuer: caCert.subject,
      notBefore,
      notAfter,
      signingKey: caKey,
      publicKey: leafKeys.publicKey,
      signingAlgorithm: ALGORITHM,
      extensions,
    });
    return {
      certPem: cert.toString("pem"),
      keyPem: await keyPem(leafKeys.privateKey),
    };
  }

  return { certPem: caCert.toString("pem"), keyPem: caKeyPem, issue };
}

/** A key pair for signing service-account tokens, both halves as PEM. */
export async function createSigningKey(): Promise<
  { privateKeyPem: string; publicKeyPem: string }
> {
  const keys = await crypto.subtle.generateKey(ALGORITHM, true, [
    "sign",
    "verify",
  ]);
  const spki = await crypto.subtle.exportKey("spki", keys.publicKey);
  return {
    privateKeyPem: await keyPem(keys.privateKey),
    publicKeyPem: x509.PemConverter.encode(spki, "PUBLIC KEY"),
  };
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // positive
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
