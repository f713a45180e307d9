/**
 * Extra trust for registries served with a private certificate authority (a
 * registry on loopback with a CA made for a test, a company registry): a PEM
 * file of one or more CA certificates, added to Node's built-in roots for
 * cairn's https connections to registries (never replacing them).
 *
 * The file is read with a bound (limit `registryCaBytes`) and every PEM block
 * must parse as an X.509 certificate that may sign others; a file that holds
 * none, or anything else between the blocks, is refused naming the file, so a
 * mistyped path (a key, a config file) is never silently "trusted" as
 * nothing. Its contents are never echoed.
 */
import { X509Certificate } from "node:crypto";
import { rootCertificates } from "node:tls";
import { CairnError, readFileBounded } from "../../core/index.ts";

/** A CA file larger than this is refused (limit `registryCaBytes`). */
export const MAX_REGISTRY_CA_BYTES = 1024 * 1024;

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g;

function invalid(path: string, why: string): CairnError {
  return new CairnError("REMOTE_CA_INVALID", `${path}: ${why}`, {
    path,
    hint: "give a PEM file of CA certificates (-----BEGIN CERTIFICATE----- blocks), e.g. the ca.crt that signed the registry's certificate",
  });
}

/** The CA certificates (PEM) of `path`, checked; see the module comment. */
export function readRegistryCa(path: string): string {
  const bytes = readFileBounded(path, MAX_REGISTRY_CA_BYTES, "registryCaBytes", { missing: "IO_ERROR" });
  const text = bytes.toString("latin1");
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) throw invalid(path, "holds no PEM certificate");
  if (text.replace(PEM_BLOCK, "").trim() !== "") throw invalid(path, "holds something other than PEM certificates");
  for (const [i, pem] of blocks.entries()) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(pem);
    } catch {
      throw invalid(path, `certificate ${i + 1} does not parse as X.509`);
    }
    if (!cert.ca) throw invalid(path, `certificate ${i + 1} is not a CA certificate (basicConstraints CA:TRUE)`);
  }
  return blocks.join("\n");
}

/** Node's built-in roots plus `ca`: the trust of cairn's https connections when a CA file is given. */
export function trustWith(ca: string): string[] {
  return [...rootCertificates, ca];
}
