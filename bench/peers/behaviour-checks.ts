/**
 * The behaviour list: the same commands, timeouts and deadlines for every system, and one judgement
 * of what came back, made here on the bytes each caller got (never on a count, never on what a
 * system says about itself). Rows that go against harness are in the list like the others.
 */
import type { DriverReply, Output } from "./driver-protocol.js";

export interface CheckContext {
  /** One call through the system's driver; `deadline` seconds before it counts as never returned. */
  run(command: string, timeout: number, deadline?: number): Promise<DriverReply>;
  /** Command lines of the processes running now in the containers the system made. */
  processes(): Promise<string[]>;
  sleep(ms: number): Promise<void>;
}

export interface Verdict {
  /** What the table shows. */
  cell: string;
  /** yes / no where the row has one; undefined for a row that reports a figure (seconds). */
  ok?: boolean;
}

export interface Check {
  name: string;
  /** The check may leave the system's driver stuck on a call: the bench starts a fresh one after. */
  mayHang?: boolean;
  judge(ctx: CheckContext): Promise<Verdict>;
}

export function bytesOf(output: Output | null | undefined): Buffer | undefined {
  return output?.b64 === undefined ? undefined : Buffer.from(output.b64, "base64");
}

const textOf = (reply: DriverReply) => bytesOf(reply.stdout)?.toString("utf8") ?? "";
const seconds = (ms: number | undefined) => `${((ms ?? 0) / 1000).toFixed(1)} s`;

/** A call that never came back: "hung", with how long it was waited for and its own timeout. */
function never(reply: DriverReply, timeout: number): Verdict {
  return { cell: `hung (waited ${reply.waited} s; its timeout ${timeout} s)`, ok: false };
}

function failed(reply: DriverReply): Verdict | undefined {
  if (reply.returned && reply.error && reply.stdout == null)
    return { cell: `error: ${reply.error.slice(0, 60)}`, ok: false };
  return undefined;
}

/** Bytes as the table shows them: printable ASCII as is (a backslash doubled), the rest as \xNN. */
export function shown(data: Buffer): string {
  const byte = (b: number) =>
    b === 0x5c
      ? "\\\\"
      : b >= 0x20 && b < 0x7f
        ? String.fromCharCode(b)
        : `\\x${b.toString(16).padStart(2, "0")}`;
  return [...data].map(byte).join("");
}

const BINARY = Buffer.from([0x61, 0x00, 0x62, 0xff, 0x63]);

export const CHECKS: readonly Check[] = [
  {
    name: "stdout and stderr apart, with the exit code",
    async judge(ctx) {
      const r = await ctx.run("echo out; echo err >&2; sh -c 'exit 3'", 20);
      if (!r.returned) return never(r, 20);
      if (r.merged) return { cell: `no: merged (exit ${r.exit})`, ok: false };
      const apart = textOf(r) === "out\n" && bytesOf(r.stderr)?.toString("utf8") === "err\n";
      return apart && r.exit === 3 ? { cell: "yes", ok: true } : { cell: `no (exit ${r.exit})`, ok: false };
    },
  },
  {
    name: "working directory kept between calls",
    async judge(ctx) {
      await ctx.run("cd /tmp", 20);
      const r = await ctx.run("pwd", 20);
      if (!r.returned) return never(r, 20);
      const pwd = textOf(r).trim();
      return pwd === "/tmp" ? { cell: "yes", ok: true } : { cell: `no (${pwd})`, ok: false };
    },
  },
  {
    name: "environment kept between calls (`export`)",
    async judge(ctx) {
      await ctx.run("export BENCH_KEPT=yes", 20);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, sent as is
      const r = await ctx.run('echo "${BENCH_KEPT:-unset}"', 20);
      if (!r.returned) return never(r, 20);
      return textOf(r).trim() === "yes" ? { cell: "yes", ok: true } : { cell: "no", ok: false };
    },
  },
  {
    name: "commands run as non-root",
    async judge(ctx) {
      const r = await ctx.run("id -u", 20);
      if (!r.returned) return never(r, 20);
      const uid = textOf(r).trim();
      return uid !== "0" && /^\d+$/.test(uid)
        ? { cell: `yes (uid ${uid})`, ok: true }
        : { cell: `no (uid ${uid})`, ok: false };
    },
  },
  {
    name: "network interfaces besides lo",
    async judge(ctx) {
      const r = await ctx.run(
        "grep -v -e '^ *lo:' -e '|' /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' '",
        20,
      );
      if (!r.returned) return never(r, 20);
      const names = textOf(r).trim();
      return names === "" ? { cell: "none", ok: true } : { cell: names, ok: false };
    },
  },
  {
    name: "non-UTF-8 bytes come back intact (`a\\0b\\377c`, bytes compared)",
    async judge(ctx) {
      const r = await ctx.run("printf 'a\\000b\\377c'", 20);
      if (!r.returned) return never(r, 20);
      const error = failed(r);
      if (error) return error;
      const got = bytesOf(r.stdout) ?? Buffer.alloc(0);
      if (got.equals(BINARY)) return { cell: "yes", ok: true };
      // Judged on the bytes alone, for every system; whether the caller is told is said beside.
      const counted = r.stated ? /\(((?:stdout|stderr): [^)]*)\)/.exec(r.stated)?.[1] : undefined;
      const told = r.stated
        ? `, the result says so (${counted ?? "not byte-exact"}) and how to get them (od -c)`
        : ", nothing said";
      return { cell: `no: ${shown(got)}${told}`, ok: false };
    },
  },
  {
    name: "background job, output redirected: the call returns",
    async judge(ctx) {
      const r = await ctx.run("sleep 304 >/dev/null 2>&1 & echo started", 10, 20);
      if (!r.returned) return never(r, 10);
      const back = textOf(r).includes("started");
      return (r.ms ?? 0) < 2000 && back
        ? { cell: `yes, ${seconds(r.ms)}`, ok: true }
        : { cell: `after ${seconds(r.ms)}${back ? "" : ", output lost"}`, ok: false };
    },
  },
  {
    name: "background job holding the output pipe: the call returns",
    mayHang: true,
    async judge(ctx) {
      const r = await ctx.run("sleep 305 & echo started", 5, 15);
      if (!r.returned) return never(r, 5);
      const back = textOf(r).includes("started");
      return (r.ms ?? 0) < 2000 && back
        ? { cell: `yes, ${seconds(r.ms)}`, ok: true }
        : {
            cell: `after ${seconds(r.ms)}${r.timedOut ? " (timed out)" : ""}${back ? "" : ", output lost"}`,
            ok: false,
          };
    },
  },
  {
    name: "timed-out call's `setsid` child is gone (3 s timeout)",
    mayHang: true,
    async judge(ctx) {
      const r = await ctx.run("setsid sleep 301 & sleep 60", 3, 15);
      if (!r.returned) return never(r, 3);
      await ctx.sleep(1000);
      const left = (await ctx.processes()).some((p) => p.includes("sleep 301"));
      return left ? { cell: `no (returned after ${seconds(r.ms)})`, ok: false } : { cell: "yes", ok: true };
    },
  },
  {
    name: "TERM-ignoring command, 2 s timeout: the call returns after",
    mayHang: true,
    async judge(ctx) {
      const r = await ctx.run(`sh -c "trap '' TERM; sleep 302"`, 2, 15);
      if (!r.returned) return never(r, 2);
      await ctx.sleep(1000);
      const left = (await ctx.processes()).some((p) => p.includes("sleep 302"));
      return { cell: `${seconds(r.ms)}, ${left ? "left running" : "killed"}` };
    },
  },
];
