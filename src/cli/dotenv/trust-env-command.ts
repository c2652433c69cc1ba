/**
 * `harness trust-env [FILE]`: the user read a `.env` harness doubts (a sandbox wrote it, or it
 * changed while one could) and vouches for this content; harness loads it again until it changes.
 */
import { resolve } from "node:path";
import { parse } from "dotenv";
import { ConfigError } from "../../errors.js";
import { EXIT } from "../exit-codes.js";
import { isGuardedKey } from "./dotenv-keys.js";
import { readEnvFile } from "./dotenv-load.js";
import { addHash, unmarkSandboxWritten, updateEnvFileRecord } from "./dotenv-records.js";

export function trustEnvCommand(file: string | undefined): number {
  const path = resolve(file ?? ".env");
  const read = readEnvFile(path);
  if (read.kind === "absent") throw new ConfigError(`${path} does not exist`);
  if (read.kind === "not-a-file")
    throw new ConfigError(`${path} is ${read.what}: harness loads only a regular file`);
  updateEnvFileRecord(path, (record) => addHash(record.trusted, read.hash, record.sandbox));
  unmarkSandboxWritten(read.hash);
  const guarded = Object.keys(parse(read.content)).filter(isGuardedKey);
  process.stderr.write(
    `harness: trusting this content of ${path} (sha256 ${read.hash.slice(0, 12)}); it sets ${guarded.length > 0 ? guarded.join(", ") : "no guarded key"}\n`,
  );
  return EXIT.ok;
}
