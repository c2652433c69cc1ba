/**
 * The two in-pod programs of the Kubernetes engine, run under the host's python3 and sh. Both act as
 * root in the pod (setresuid, chown), so these tests run as root, as CI does.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { programText } from "../../../../src/sandbox/exec/program-text.js";
import { asUser } from "../../../../src/sandbox/kubernetes/api/pod-command.js";

const setupScript = programText(
  new URL("../../../../src/sandbox/kubernetes/pod/pod-setup.sh", import.meta.url),
);

describe("run-as.py (needs root, as in the pod)", () => {
  it("drops every uid, gid and group to the sandbox user before exec", () => {
    const [cmd, ...args] = asUser("1000:1001", [
      "/bin/sh",
      "-c",
      "id -u; id -g; id -G; grep CapEff /proc/self/status",
    ]);
    const out = execFileSync(cmd ?? "", args, { encoding: "utf8" });
    expect(out).toMatch(/^1000\n1001\n1001\nCapEff:\s+0+\n$/);
  });

  it("refuses uid 0 and gid 0", () => {
    for (const user of ["0:1000", "1000:0"]) {
      const [cmd, ...args] = asUser(user, ["id", "-u"]);
      const run = spawnSync(cmd ?? "", args, { encoding: "utf8" });
      expect(run.status).not.toBe(0);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(/never runs as uid or gid 0/);
    }
  });
});

describe("pod-setup.sh (needs root for chown, as in the pod)", () => {
  let root = "";
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const layout = (interfaces: string[]) => {
    root = mkdtempSync(join(tmpdir(), "harness-pod-setup-"));
    for (const dir of ["net", "home", "state", "ws", "tmp"]) mkdirSync(join(root, dir), { mode: 0o777 });
    for (const name of interfaces) mkdirSync(join(root, "net", name));
    const run = (loOnly: string) =>
      spawnSync(
        "/bin/sh",
        [
          "-c",
          setupScript,
          "harness-pod-setup",
          "1000",
          "1000",
          loOnly,
          ...["home", "state", "ws", "net", "reason", "tmp"].map((d) => join(root, d)),
        ],
        { encoding: "utf8" },
      );
    return run;
  };

  it("with only lo: the user owns home, state and workspace; /tmp gets its sticky bit", () => {
    const run = layout(["lo"])("1");
    expect(run.status).toBe(0);
    for (const [dir, mode] of [
      ["home", 0o700],
      ["state", 0o700],
      ["ws", 0o755],
    ] as const) {
      const info = statSync(join(root, dir));
      expect([info.uid, info.gid, info.mode & 0o7777]).toEqual([1000, 1000, mode]);
    }
    expect(statSync(join(root, "tmp")).mode & 0o7777).toBe(0o1777);
  });

  it("refuses a pod with any other interface, naming it, before touching anything", () => {
    const run = layout(["lo", "eth0"])("1");
    expect(run.status).toBe(3);
    expect(readFileSync(join(root, "reason"), "utf8")).toMatch(/interfaces besides lo: eth0/);
    expect(statSync(join(root, "home")).uid).toBe(0);
  });

  it("--network pod: no check", () => {
    expect(layout(["lo", "eth0"])("0").status).toBe(0);
  });
});
