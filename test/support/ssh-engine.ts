/**
 * An ssh:// engine on loopback: Debian's sshd (scripts/ensure-sshd.sh installs it), started by the
 * test on 127.0.0.1:PORT with its own config, host key and a client key made at start, letting the
 * current user in by that key only. The "remote" side runs `docker system dial-stdio` against the
 * local engine. The client's options (key, known host) come from an `ssh` wrapper first in PATH that
 * adds `-F`: ssh reads ~/.ssh from the passwd entry, not from HOME, and the user's own is never touched.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { commandLine, processTree } from "./process-tree.js";

export const SSHD_PATH = "/usr/sbin/sshd";

export interface SshEngine {
  /** ssh://USER@127.0.0.1:PORT */
  host: string;
  /** DOCKER_HOST and a PATH whose `ssh` uses the test's key and known host. */
  env: { DOCKER_HOST: string; PATH: string };
  /** The ssh client config the wrapper passes with -F (for a docker context test, or by hand). */
  sshConfig: string;
  /** Kills sshd and every session it serves, as when the remote machine goes away. */
  drop(): Promise<void>;
  /** Starts sshd again on the same port. */
  restore(): Promise<void>;
  /** Kills this process's ssh clients for this engine (SIGKILL), as when ssh dies mid-call. */
  killClients(): number;
  /** Stops (SIGSTOP) sshd and its sessions: TCP stays up, nothing answers, as with a cut link. */
  freeze(): void;
  /** Lets a frozen sshd go on (SIGCONT). */
  thaw(): void;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no free port");
  return address.port;
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (let tries = 0; tries < 100; tries++) {
    if (child.exitCode !== null) throw new Error(`sshd exited (${child.exitCode}): ${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`sshd did not listen on ${port}: ${log()}`);
}

/** The local engine's socket, which the "remote" `docker system dial-stdio` connects to. */
function localEngineHost(): string {
  const host = process.env["DOCKER_HOST"];
  return host?.startsWith("unix://") ? host : "unix:///var/run/docker.sock";
}

function writeConfigs(dir: string, port: number, user: string): void {
  const keygen = (file: string) =>
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, file)], { stdio: "ignore" });
  keygen("host_key");
  keygen("client_key");
  writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "client_key.pub")), { mode: 0o600 });
  // The session's HOME is a directory of the test's: the user's shell start-up files (a .bashrc that
  // runs `pyenv init`, say) must not slow down or break every connection.
  mkdirSync(join(dir, "home"));
  writeFileSync(
    join(dir, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      `AllowUsers ${user}`,
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      "StrictModes no",
      "UsePAM no",
      `SetEnv HOME=${join(dir, "home")} DOCKER_HOST=${localEngineHost()}`,
      "",
    ].join("\n"),
  );
  const hostKey = readFileSync(join(dir, "host_key.pub"), "utf8").trim();
  writeFileSync(join(dir, "known_hosts"), `[127.0.0.1]:${port} ${hostKey}\n`);
  writeFileSync(
    join(dir, "ssh_config"),
    [
      "Host 127.0.0.1",
      `  IdentityFile ${join(dir, "client_key")}`,
      "  IdentitiesOnly yes",
      `  UserKnownHostsFile ${join(dir, "known_hosts")}`,
      "  StrictHostKeyChecking yes",
      "",
    ].join("\n"),
  );
  mkdirSync(join(dir, "bin"));
  writeFileSync(
    join(dir, "bin", "ssh"),
    `#!/bin/sh\nexec /usr/bin/ssh -F ${join(dir, "ssh_config")} "$@"\n`,
    { mode: 0o755 },
  );
  chmodSync(join(dir, "bin", "ssh"), 0o755);
}

export async function startSshEngine(): Promise<SshEngine> {
  const dir = mkdtempSync(join(tmpdir(), "harness-ssh-engine-"));
  const port = await freePort();
  const user = userInfo().username;
  writeConfigs(dir, port, user);
  // sshd's privilege separation directory, needed when it runs as root; Debian's init script makes
  // it, and no init runs here.
  if (process.getuid?.() === 0) mkdirSync("/run/sshd", { recursive: true });
  let sshd: ChildProcess | undefined;
  let log = "";
  const start = async () => {
    const child = spawn(SSHD_PATH, ["-D", "-e", "-f", join(dir, "sshd_config")], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
    });
    sshd = child;
    await waitForPort(port, child, () => log);
  };
  // Each session is a child of the listener in a session of its own: killing the listener alone
  // would leave every open connection working.
  const stop = async () => {
    const child = sshd;
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    signal(processTree(child.pid), "SIGKILL");
    await exited;
  };
  let frozen: number[] = [];
  const signal = (pids: number[], name: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // Already gone.
      }
    }
  };
  await start();
  const host = `ssh://${user}@127.0.0.1:${port}`;
  return {
    host,
    env: { DOCKER_HOST: host, PATH: `${join(dir, "bin")}:${process.env["PATH"] ?? "/usr/bin:/bin"}` },
    sshConfig: join(dir, "ssh_config"),
    drop: stop,
    restore: start,
    killClients: () => {
      const config = join(dir, "ssh_config");
      const clients = processTree(process.pid).filter((pid) => commandLine(pid).includes(config));
      signal(clients, "SIGKILL");
      return clients.length;
    },
    freeze: () => {
      frozen = sshd?.pid === undefined ? [] : processTree(sshd.pid);
      signal(frozen, "SIGSTOP");
    },
    thaw: () => signal(frozen, "SIGCONT"),
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
