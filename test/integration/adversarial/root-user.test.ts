/**
 * Issue 8, finding 2: `--user 00`, `000:000` or `00:1234` ran every process as root, because the
 * check was a pattern on the text. `DockerSandbox.open` must refuse uid 0 (and the root group) in any
 * spelling before a container exists, and a sandbox's processes must never be uid or gid 0, as the
 * host's /proc sees them.
 */
import { chownSync, readFileSync } from "node:fs";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { listHarnessContainers } from "../../../src/sandbox/docker/container/container-registry.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace, TEST_UID } from "../../support/workspace.js";

const ROOT_SPELLINGS = ["0", "00", "000:000", "00:1234", "0:1000", "4294967296", "4294967296:1000", "root"];
const OTHER_REFUSED = [
  "1000:0",
  "1000:00",
  "root:1000",
  "+1000",
  " 1000",
  "0x3e8",
  "4294967295",
  "2147483648",
];

/** A docker client that fails the test if open() talks to the engine at all. */
const untouchableDocker = new Proxy({} as Docker, {
  get(_target, property) {
    if (property === "then") return undefined;
    throw new Error(`the engine was used (docker.${String(property)}) before the user was checked`);
  },
});

/** uid, gid and supplementary groups of a host process, from the host's /proc. */
function hostIds(pid: string): {
  uids: number[];
  gids: number[];
  groups: number[];
  capEff: bigint;
  args: string;
} {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) =>
    (new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1] ?? "")
      .split(/\s+/)
      .filter((x) => x !== "")
      .map(Number);
  const capEff = BigInt(`0x${(/^CapEff:\s*(\S+)$/m.exec(status)?.[1] ?? "0").trim()}`);
  const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
  return { uids: field("Uid"), gids: field("Gid"), groups: field("Groups"), capEff, args };
}

/** harness's machinery in the container (container-spec.ts MACHINERY_USER): PID 1, its sleep, the executor. */
const MACHINERY =
  /^(\/bin\/sh -c .* harness-init 2147483647|sleep 2147483647|python3 -I -S -c .* harness-executor 1000:1000 HARNESS_EXEC)$/s;
/** CAP_SETUID and CAP_SETGID: all the machinery holds. */
const MACHINERY_CAPS = 0xc0n;

describe.skipIf(skipDocker)("adversarial: uid 0 through --user", () => {
  it.each([...ROOT_SPELLINGS, ...OTHER_REFUSED])(
    "refuses user %j before any container exists",
    async (user) => {
      using ws = makeWorkspace();
      await expect(
        DockerSandbox.open({ workspace: ws.path, user, removeOnStop: true, docker: untouchableDocker }),
      ).rejects.toThrow(/uid 0 is root|gid 0 is the root group|UID or UID:GID in decimal digits|at most/);
      // The same through the real engine: still refused, and nothing was created for the workspace.
      await expect(DockerSandbox.open({ workspace: ws.path, user, removeOnStop: true })).rejects.toThrow();
      expect(await listHarnessContainers(new Docker(), ws.path)).toEqual([]);
    },
  );

  it("refuses a workspace owned by the root group unless --user gives another group", async () => {
    using ws = makeWorkspace();
    if (process.getuid?.() !== 0) return; // only root can give a directory to group 0
    chownSync(ws.path, TEST_UID, 0);
    await expect(DockerSandbox.open({ workspace: ws.path, removeOnStop: true })).rejects.toThrow(
      /root group.*--user 1000:1000/,
    );
    expect(await listHarnessContainers(new Docker(), ws.path)).toEqual([]);
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      user: `${TEST_UID}:${TEST_UID}`,
      removeOnStop: true,
    });
    expect((await sandbox.exec("id -u; id -g")).stdout).toBe(`${TEST_UID}\n${TEST_UID}\n`);
  });

  it("carries the canonical uid:gid to the engine, and no command's process is ever root", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, user: "01000", removeOnStop: true });
    expect(sandbox.resolvedSettings.user).toBe("1000:1000");
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    // The container's own user is the machinery's (root with SETUID and SETGID only).
    expect(info.Config.User).toBe("0:0");
    // A background process outlives the exec, so the listing sees the init, it, and the next exec.
    await sandbox.exec("(sleep 60 >/dev/null 2>&1 &)");
    const running = sandbox.exec("sleep 3");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const top = (await new Docker().getContainer(sandbox.containerId).top({ ps_args: "-eo pid,args" })) as {
      Processes: string[][];
    };
    // Read while they run; a process that ended between the listing and the read is skipped.
    const seen = top.Processes.map((row) => row[0] ?? "").flatMap((pid) => {
      try {
        return [{ pid, ...hostIds(pid) }];
      } catch {
        return [];
      }
    });
    await running;
    const machinery = seen.filter((p) => p.uids[0] === 0);
    const commands = seen.filter((p) => p.uids[0] !== 0);
    expect(commands.length).toBeGreaterThanOrEqual(3);
    for (const { pid, uids, gids, groups, capEff } of commands) {
      expect(uids, `pid ${pid}`).toEqual([1000, 1000, 1000, 1000]);
      expect(gids, `pid ${pid}`).toEqual([1000, 1000, 1000, 1000]);
      expect(groups, `pid ${pid}`).not.toContain(0);
      expect(capEff, `pid ${pid}`).toBe(0n);
    }
    // Root only as harness's own processes, which keep no capability but the two to drop with.
    expect(machinery.length).toBeGreaterThanOrEqual(3);
    for (const { pid, args, capEff } of machinery) {
      expect(args, `pid ${pid}`).toMatch(MACHINERY);
      expect(capEff & ~MACHINERY_CAPS, `pid ${pid}`).toBe(0n);
    }
  });
});
