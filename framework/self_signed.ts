/**
 * A self-signed serving certificate for LOCAL RUNS ONLY.
 *
 * NOT FOR PRODUCTION: nothing rotates it, nobody can revoke it, and the
 * API server only trusts it if you copy it into the webhook's caBundle by
 * hand. In a cluster use cert-manager (manifests/webhook) and point the
 * webhook server at the mounted files.
 *
 * @module
 */

// loaded on first use, so that importing this module (e.g. through mod.ts)
// costs no memory in production runs, which never call it
const loadX509 = () => import("@peculiar/x509");
type X509 = Awaited<ReturnType<typeof loadX509>>;

/** A PEM certificate and its PKCS#8 PEM private key. */
export interface CertificatePair {
  /** The certificate, PEM. */
  certPem: string;
  /** The private key (PKCS#8), PEM. */
  keyPem: string;
}

/** Options of {@linkcode generateSelfSignedCertificate}. */
export interface SelfSignedOptions {
  /** DNS names and IP addresses the certificate is valid for. */
  hosts: string[];
  /** Validity in days (default 7). */
  days?: number;
}

const ALG: EcKeyGenParams & EcdsaParams = {
  name: "ECDSA",
  namedCurve: "P-256",
  hash: "SHA-256",
};

const IP = /^(\d{1,3}\.){3}\d{1,3}$|:/;

/** Subject alternative names for `hosts` (IPs as IP entries). */
export async function sanExtension(
  hosts: string[],
): Promise<InstanceType<X509["SubjectAlternativeNameExtension"]>> {
  const x509 = await loadX509();
  if (hosts.length === 0) {
    throw new TypeError("a certificate needs at least one host, got []");
  }
  return new x509.SubjectAlternativeNameExtension(
    hosts.map((h) =>
      IP.test(h)
        ? { type: "ip" as const, value: h }
        : { type: "dns" as const, value: h }
    ),
  );
}

/** Exports a private key as PKCS#8 PEM. */
export async function privateKeyPem(key: CryptoKey): Promise<string> {
  const x509 = await loadX509();
  const der = await crypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

/**
 * Generates a self-signed ECDSA P-256 serving certificate.
 * **Not for production** (see the module documentation).
 *
 * @example
 * ```ts
 * import { generateSelfSignedCertificate } from "./self_signed.ts";
 * const { certPem, keyPem } = await generateSelfSignedCertificate({ hosts: ["localhost", "127.0.0.1"] });
 * console.assert(certPem.startsWith("-----BEGIN CERTIFICATE-----"));
 * console.assert(keyPem.includes("PRIVATE KEY"));
 * ```
 */
export async function generateSelfSignedCertificate(
  options: SelfSignedOptions,
): Promise<CertificatePair> {
  const days = options.days ?? 7;
  if (!Number.isInteger(days) || days < 1) {
    throw new RangeError(`days must be an integer >= 1, got ${days}`);
  }
  const x509 = await loadX509();
  const san = await sanExtension(options.hosts);
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: crypto.randomUUID().replaceAll("-", "").slice(0, 16),
    name: `CN=${
      options.hosts[0] ?? "localhost"
    }, O=self-signed NOT FOR PRODUCTION`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + days * 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      san,
    ],
  }, crypto);
  return {
    certPem: cert.toString("pem"),
    keyPem: await privateKeyPem(keys.privateKey),
  };
}
