/**
 * The image's two translating files, run by the host's sh: /etc/mavenrc (sandbox/toolchains/
 * mavenrc.sh), sourced as Maven's launcher sources it, and /usr/local/bin/cargo
 * (sandbox/toolchains/cargo-wrapper.sh), with a fake cargo in place of Debian's.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const scripts = fileURLToPath(new URL("../../../sandbox/toolchains/", import.meta.url));

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-toolchain-scripts-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Sources mavenrc.sh with `args` as the launcher's, and prints MAVEN_OPTS and the arguments after. */
function mavenrc(env: Record<string, string>, args: string[] = ["test"]): { opts: string; args: string[] } {
  const out = execFileSync(
    "sh",
    [
      "-c",
      `. "$0"; printf '%s\\n' "$MAVEN_OPTS"; for a in "$@"; do printf '[%s]' "$a"; done`,
      join(scripts, "mavenrc.sh"),
      ...args,
    ],
    { env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir, ...env }, encoding: "utf8" },
  );
  const [opts = "", rest = ""] = out.split("\n");
  return { opts: opts.trim(), args: [...rest.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1] ?? "") };
}

describe("mavenrc.sh", () => {
  it("changes nothing when no proxy and no preset is set", () => {
    expect(mavenrc({ MAVEN_OPTS: "-Dmaven.repo.local=/cache/maven" }, ["-B", "test"])).toEqual({
      opts: "-Dmaven.repo.local=/cache/maven",
      args: ["-B", "test"],
    });
  });

  it("gives Java the proxy variables allowlist mode sets, keeping MAVEN_OPTS", () => {
    const { opts, args } = mavenrc({
      MAVEN_OPTS: "-Dmaven.repo.local=/cache/maven",
      https_proxy: "http://127.0.0.1:41234",
      http_proxy: "http://127.0.0.1:41234/",
      no_proxy: "localhost,127.0.0.1,::1,.corp.example",
    });
    expect(opts).toBe(
      "-Dmaven.repo.local=/cache/maven -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=41234 -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=41234 -Dhttp.nonProxyHosts=localhost|127.0.0.1|::1|*.corp.example",
    );
    expect(args).toEqual(["test"]);
    expect(mavenrc({ HTTPS_PROXY: "http://user:pw@proxy.example:3128" }).opts).toBe(
      "-Dhttps.proxyHost=proxy.example -Dhttps.proxyPort=3128",
    );
  });

  it("hands a preset's mirrors to Maven as its global settings, written in the home", () => {
    const settings =
      "<settings><mirrors><mirror><id>m</id><url>https://m.example/</url></mirror></mirrors></settings>";
    const { args } = mavenrc({ HARNESS_MAVEN_SETTINGS: settings }, ["-B", "test"]);
    const file = join(dir, ".m2", "harness-settings.xml");
    expect(args).toEqual(["-gs", file, "-B", "test"]);
    expect(readFileSync(file, "utf8")).toBe(`${settings}\n`);
  });
});

describe("cargo-wrapper.sh", () => {
  /** The wrapper with a fake cargo that prints its arguments one per line. */
  function cargo(env: Record<string, string>, args: string[]): string[] {
    const fake = join(dir, "cargo-real");
    writeFileSync(fake, '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n');
    chmodSync(fake, 0o755);
    const wrapper = join(dir, "cargo");
    writeFileSync(
      wrapper,
      readFileSync(join(scripts, "cargo-wrapper.sh"), "utf8").replace("exec /usr/bin/cargo", `exec ${fake}`),
    );
    chmodSync(wrapper, 0o755);
    const out = execFileSync(wrapper, args, {
      env: { PATH: process.env["PATH"] ?? "", ...env },
      encoding: "utf8",
    });
    return out.split("\n").slice(0, -1);
  }

  it("runs cargo as it is when no preset set anything", () => {
    expect(cargo({}, ["test", "--", "--nocapture"])).toEqual(["test", "--", "--nocapture"]);
  });

  it("passes each line of HARNESS_CARGO_CONFIG as one --config before the command, globs untouched", () => {
    const lines = [
      'source.crates-io.replace-with = "m"',
      'source.m.registry = "sparse+https://m.example/*/"',
    ];
    // Each line is put in front of the arguments in turn, so the last line comes first.
    expect(cargo({ HARNESS_CARGO_CONFIG: lines.join("\n") }, ["test", "-q"])).toEqual([
      "--config",
      lines[1],
      "--config",
      lines[0],
      "test",
      "-q",
    ]);
  });
});
