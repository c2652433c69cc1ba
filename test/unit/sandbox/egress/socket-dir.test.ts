/** The gateway's private directory: made private, checked before use, and cleaned of dead processes' sockets. */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandboxError } from "../../../../src/errors.js";
import { EgressGateway, type GatewayOptions } from "../../../../src/sandbox/egress/egress-gateway.js";

const isRoot = process.getuid?.() === 0;

describe("the gateway's socket directory", () => {
  let base = "";
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), "harness-egress-dir-"));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  const options = (socketDir: string, extra: Partial<GatewayOptions> = {}): GatewayOptions => ({
    socketDir,
    allowHosts: ["example.com"],
    allowPrivate: false,
    limitBytes: 1024,
    maxConnections: 2,
    idleMs: 1_000,
    maxConnectionMs: 1_000,
    ...extra,
  });

  it("creates the directory 0700 and the socket 0600, named after this process", async () => {
    const dir = join(base, "a", "gw");
    const gateway = await EgressGateway.start(options(dir));
    try {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(gateway.socketPath).isSocket()).toBe(true);
      expect(statSync(gateway.socketPath).mode & 0o777).toBe(0o600);
      expect(gateway.socketName).toMatch(new RegExp(`^${process.pid}-[0-9a-f]+\\.sock$`));
      expect(basename(gateway.socketPath)).toBe(gateway.socketName);
    } finally {
      await gateway.close();
    }
    expect(existsSync(gateway.socketPath)).toBe(false);
  });

  it("removes sockets of dead harness processes, and nothing else", async () => {
    const dir = join(base, "gw");
    mkdirSync(dir, { mode: 0o700 });
    const deadPid = spawnSync("true").pid;
    const stale = join(dir, `${deadPid}-0123abcd.sock`);
    // The run CA's certificate files a dead gateway left beside its socket go too.
    const staleTrust = [join(dir, `${deadPid}-0123abcd.ca.pem`), join(dir, `${deadPid}-0123abcd.bundle.pem`)];
    const alive = join(dir, `${process.ppid}-0123abcd.sock`);
    const other = join(dir, "notes.txt");
    for (const file of [stale, ...staleTrust, alive, other]) writeFileSync(file, "");
    const gateway = await EgressGateway.start(options(dir));
    await gateway.close();
    expect(existsSync(stale)).toBe(false);
    for (const file of staleTrust) expect(existsSync(file)).toBe(false);
    expect(existsSync(alive)).toBe(true);
    expect(existsSync(other)).toBe(true);
  });

  it("refuses a symlinked directory", async () => {
    const real = join(base, "real");
    mkdirSync(real, { mode: 0o700 });
    const link = join(base, "link");
    symlinkSync(real, link);
    await expect(EgressGateway.start(options(link))).rejects.toThrow(SandboxError);
    await expect(EgressGateway.start(options(link))).rejects.toThrow(/not a real directory/);
  });

  it("refuses a directory others can write", async () => {
    const dir = join(base, "open");
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    await expect(EgressGateway.start(options(dir))).rejects.toThrow(/writable by others \(mode 777\)/);
  });

  it("refuses a file where the directory should be", async () => {
    const file = join(base, "file");
    writeFileSync(file, "");
    await expect(EgressGateway.start(options(file))).rejects.toThrow(SandboxError);
  });

  it.skipIf(!isRoot)(
    "refuses a directory owned by someone else, and gives the socket to `owner`",
    async () => {
      const foreign = join(base, "foreign");
      mkdirSync(foreign, { mode: 0o700 });
      chownSync(foreign, 4242, 4242);
      await expect(EgressGateway.start(options(foreign))).rejects.toThrow(/owned by uid 4242/);

      const owned = join(base, "owned");
      const gateway = await EgressGateway.start(options(owned, { owner: { uid: 1000, gid: 1000 } }));
      try {
        expect(statSync(owned)).toMatchObject({ uid: 1000, gid: 1000 });
        expect(statSync(gateway.socketPath)).toMatchObject({ uid: 1000, gid: 1000 });
      } finally {
        await gateway.close();
      }
      // Owned by the sandbox user from the last run: still accepted when that is the owner asked for.
      const again = await EgressGateway.start(options(owned, { owner: { uid: 1000, gid: 1000 } }));
      await again.close();
    },
  );
});
