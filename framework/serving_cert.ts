/**
 * A TLS serving certificate read from files (or given as PEM) and reloaded
 * in place when the files change: every server it is attached to gets the
 * new pair by `setSecureContext`, so new connections see it and open ones
 * keep theirs. A pair that does not fit (the certificate written, not yet
 * its key) leaves the old one in place until the next check.
 *
 * @module
 */

import { errText } from "./errors.ts";
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";

/** Where a serving certificate comes from. */
export type ServingTls =
  | { certFile: string; keyFile: string }
  | { certPem: string; keyPem: string };

/** A certificate and its key, PEM. */
export interface PemPair {
  /** The certificate chain. */
  readonly cert: string;
  /** Its private key. */
  readonly key: string;
}

/** What a certificate is attached to: a `node:https` or `node:tls` server. */
export interface SecureContextTarget {
  /** Replaces the certificate for connections accepted from now on. */
  setSecureContext(options: { cert: string; key: string }): void;
}

/**
 * Throws unless `cert` is a PEM certificate and `key` its private key.
 * Deno's `tls.createSecureContext` accepts anything, so a bad file would
 * only show at the first handshake.
 *
 * @example
 * ```ts ignore
 * assertUsablePair(await Deno.readTextFile("tls.crt"), await Deno.readTextFile("tls.key"));
 * ```
 */
export function assertUsablePair(cert: string, key: string): void {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`not a PEM certificate: ${errText(err)}`, { cause: err });
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Error(`not a PEM private key: ${errText(err)}`, { cause: err });
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new Error("the private key does not belong to the certificate");
  }
}

/**
 * A serving certificate that follows its files.
 *
 * @example
 * ```ts ignore
 * const cert = new ServingCertificate({ certFile: "/tls/tls.crt", keyFile: "/tls/tls.key" });
 * const server = https.createServer({ ...(await cert.load()) });
 * cert.attach(server);
 * // ... later
 * cert.stop();
 * ```
 */
export class ServingCertificate {
  readonly #source: ServingTls;
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #targets: SecureContextTarget[] = [];
  #fingerprint = "";
  #timer: ReturnType<typeof setInterval> | undefined;
  #reloading = false;
  /** Times the certificate was (re)loaded, the first load included. */
  loads = 0;

  /** Reads `source`; checks files every `intervalMs` once attached (default 2000). */
  constructor(
    source: ServingTls,
    options: { logger?: Logger; intervalMs?: number } = {},
  ) {
    this.#source = source;
    this.#log = options.logger ?? silentLogger();
    this.#intervalMs = options.intervalMs ?? 2000;
    if (!(Number.isSafeInteger(this.#intervalMs) && this.#intervalMs > 0)) {
      throw new RangeError(
        `certificate reload interval must be an integer > 0 ms, got ${this.#intervalMs}`,
      );
    }
  }

  async #read(): Promise<PemPair> {
    const t = this.#source;
    if ("certPem" in t) return { cert: t.certPem, key: t.keyPem };
    const [cert, key] = await Promise.all([
      Deno.readTextFile(t.certFile),
      Deno.readTextFile(t.keyFile),
    ]);
    return { cert, key };
  }

  /** The first load: the pair, checked; throws when it is missing or does not fit. */
  async load(): Promise<PemPair> {
    const pair = await this.#read();
    assertUsablePair(pair.cert, pair.key);
    this.#fingerprint = pair.cert + "\u0000" + pair.key;
    this.loads++;
    return pair;
  }

  /** Gives `target` every new pair from now on (files are checked while one is attached). */
  attach(target: SecureContextTarget): void {
    this.#targets.push(target);
    if (this.#timer === undefined && "certFile" in this.#source) {
      this.#timer = setInterval(() => void this.reload(), this.#intervalMs);
    }
  }

  /**
   * Re-reads the files; if they changed and form a valid pair, the attached
   * servers use them. Returns true when a new certificate was loaded.
   */
  async reload(): Promise<boolean> {
    if (this.#reloading || this.#targets.length === 0) return false;
    this.#reloading = true;
    try {
      const { cert, key } = await this.#read();
      if (cert + "\u0000" + key === this.#fingerprint) return false;
      try {
        // a bad or mismatched pair throws here and leaves the old one in place
        assertUsablePair(cert, key);
        for (const target of this.#targets) {
          target.setSecureContext({ cert, key });
        }
      } catch (err) {
        // e.g. the cert was written but not yet the key: keep serving the old pair
        this.#log.warn({ err: errText(err) }, "new certificate not usable yet");
        return false;
      }
      this.#fingerprint = cert + "\u0000" + key;
      this.loads++;
      this.#log.info("serving certificate reloaded");
      return true;
    } catch (err) {
      this.#log.warn({ err: errText(err) }, "reading the certificate failed");
      return false;
    } finally {
      this.#reloading = false;
    }
  }

  /** Stops checking the files. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#targets.length = 0;
  }
}
