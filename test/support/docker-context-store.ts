/** Writes a Docker context the way `docker context create` stores it, into a config directory. */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ContextSpec {
  name: string;
  host: string;
  skipTlsVerify?: boolean;
  /** A directory with ca.pem, cert.pem, key.pem to copy into the context's TLS store. */
  certDir?: string;
}

/** `configDir` is the docker CLI's config directory (~/.docker). */
export function writeDockerContext(configDir: string, spec: ContextSpec): void {
  const digest = createHash("sha256").update(spec.name).digest("hex");
  const meta = join(configDir, "contexts", "meta", digest);
  mkdirSync(meta, { recursive: true });
  writeFileSync(
    join(meta, "meta.json"),
    JSON.stringify({
      Name: spec.name,
      Metadata: {},
      Endpoints: { docker: { Host: spec.host, SkipTLSVerify: spec.skipTlsVerify ?? false } },
    }),
  );
  if (spec.certDir === undefined) return;
  const tls = join(configDir, "contexts", "tls", digest, "docker");
  mkdirSync(tls, { recursive: true });
  for (const file of ["ca.pem", "cert.pem", "key.pem"])
    writeFileSync(join(tls, file), readFileSync(join(spec.certDir, file)));
}

/** Sets the docker CLI's current context (`docker context use NAME`). */
export function useDockerContext(configDir: string, name: string): void {
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, "config.json"), JSON.stringify({ currentContext: name }));
}
