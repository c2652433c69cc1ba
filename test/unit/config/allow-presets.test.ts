/**
 * Presets ask the host's own npm and pip. Here those are fake scripts on a temporary PATH (only shell
 * builtins inside, so nothing else on the machine is found or run); nothing touches the network.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  allowPresetHosts,
  hostToolRunner,
  parseAllowPreset,
  toolEnv,
  urlEntry,
} from "../../../src/allow-presets/allow-presets.js";
import { ConfigError } from "../../../src/errors.js";

let bin: string;

beforeEach(() => {
  bin = mkdtempSync(join(tmpdir(), "harness-presets-"));
});
afterEach(() => rmSync(bin, { recursive: true, force: true }));

/** A fake tool named `name`: a POSIX shell script body, builtins only. */
function tool(name: string, body: string): void {
  const path = join(bin, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ PATH: bin, HOME: bin, ...extra });

/** npm that answers `config get registry` with $1 and `config list --json` with $2. */
function fakeNpm(registry: string, list = "{}"): void {
  tool(
    "npm",
    `if [ "$2" = get ]; then echo '${registry}'; elif [ "$2" = list ]; then echo '${list}'; else exit 9; fi`,
  );
}

/** python3 with pip: `-I -m pip config list` prints `config`; `-I -c …` prints pip's default index. */
function fakePython(
  config: string,
  defaults = "https://index.example.org/simple\nhttps://files.example.org/",
): void {
  tool(
    "python3",
    [
      `if [ "$1" != -I ]; then echo 'not isolated' >&2; exit 7; fi`,
      `if [ "$2" = -m ]; then echo "${config}"; exit 0; fi`,
      `echo "${defaults}"`,
    ].join("\n"),
  );
}

describe("parseAllowPreset", () => {
  it("knows npm, pypi, pip, go, cargo, maven and git=HOST, and nothing else", () => {
    expect(parseAllowPreset("npm")).toEqual({ kind: "npm" });
    expect(parseAllowPreset(" pypi ")).toEqual({ kind: "pypi" });
    expect(parseAllowPreset("pip")).toEqual({ kind: "pypi" });
    expect(parseAllowPreset("go")).toEqual({ kind: "go" });
    expect(parseAllowPreset("cargo")).toEqual({ kind: "cargo" });
    expect(parseAllowPreset("maven")).toEqual({ kind: "maven" });
    expect(parseAllowPreset("git=git.example.com")).toEqual({ kind: "git", host: "git.example.com" });
    expect(parseAllowPreset("git")).toBeUndefined();
    expect(parseAllowPreset("gradle")).toBeUndefined();
    expect(parseAllowPreset("crates")).toBeUndefined();
  });
});

describe("urlEntry", () => {
  it("turns a URL into host:port, the port from the URL or the scheme", () => {
    expect(urlEntry("https://registry.example.com/", "--allow npm")).toBe("registry.example.com:443");
    expect(urlEntry("http://mirror.example.org/npm/", "--allow npm")).toBe("mirror.example.org:80");
    expect(urlEntry("https://mirror.example.org:8443/x", "--allow npm")).toBe("mirror.example.org:8443");
    expect(urlEntry("http://[::1]:4873/", "--allow npm")).toBe("[::1]:4873");
    expect(() => urlEntry("ftp://example.com/", "--allow npm")).toThrow(/not an http\(s\) URL/);
    expect(() => urlEntry("not a url", "--allow npm")).toThrow(/--allow npm: 'not a url' is not a URL/);
  });
});

describe("allowPresetHosts: npm", () => {
  it("allows the registry the host's npm is configured with, and scoped registries", () => {
    fakeNpm(
      "https://npm.mirror.example.com/",
      '{"registry":"https://npm.mirror.example.com/","@corp:registry":"https://npm.corp.example.org:8443/","@x:registry":"file:///srv"}',
    );
    expect(allowPresetHosts({ kind: "npm" }, env())).toEqual([
      "npm.mirror.example.com:443",
      "npm.corp.example.org:8443",
    ]);
  });

  it("still allows the registry when `npm config list` fails", () => {
    fakeNpm("http://127.0.0.1:4873/", "not json");
    expect(allowPresetHosts({ kind: "npm" }, env())).toEqual(["127.0.0.1:4873"]);
  });

  it("reads npm_config_* settings from the environment it is given", () => {
    tool("npm", 'echo "$npm_config_registry"');
    const hosts = allowPresetHosts({ kind: "npm" }, env({ npm_config_registry: "https://r.example.net/" }));
    expect(hosts).toEqual(["r.example.net:443"]);
  });

  it("refuses with the flag to use instead when npm is missing, fails or names no URL", () => {
    expect(() => allowPresetHosts({ kind: "npm" }, env())).toThrow(ConfigError);
    expect(() => allowPresetHosts({ kind: "npm" }, env())).toThrow(
      /--allow npm reads the host's configuration, but npm is not installed .*--allow-host/,
    );
    tool("npm", "echo 'npm ERR! broken config' >&2; exit 1");
    expect(() => allowPresetHosts({ kind: "npm" }, env())).toThrow(
      /failed: npm ERR! broken config.*--allow-host/,
    );
    fakeNpm("undefined");
    expect(() => allowPresetHosts({ kind: "npm" }, env())).toThrow(
      /not an http\(s\) URL; give the host with --allow-host/,
    );
  });

  it("runs the tool from /, not the current directory, with only the variables it needs", () => {
    tool("npm", 'echo "http://$(pwd | tr / x)$NODE_OPTIONS$LD_PRELOAD.example.com/"');
    // pwd and tr: the script's PATH must find tr, so give it the system's too.
    const hosts = allowPresetHosts(
      { kind: "npm" },
      env({ PATH: `${bin}:/usr/bin:/bin`, NODE_OPTIONS: "--require=/w/evil.js", LD_PRELOAD: "/w/evil.so" }),
    );
    expect(hosts).toEqual(["x.example.com:80"]);
  });

  it("gives up on a tool that does not answer in time", () => {
    tool("npm", "while :; do :; done");
    expect(() => allowPresetHosts({ kind: "npm" }, env(), hostToolRunner(300))).toThrow(
      /`npm config get registry` did not answer in time/,
    );
  });
});

describe("allowPresetHosts: pypi", () => {
  it("takes PIP_INDEX_URL and PIP_EXTRA_INDEX_URL first, ignoring file:// indexes", () => {
    const hosts = allowPresetHosts(
      { kind: "pypi" },
      env({
        PIP_INDEX_URL: "https://pypi.mirror.example.com/simple",
        PIP_EXTRA_INDEX_URL: "file:///opt/wheels https://extra.example.org:8443/simple",
      }),
    );
    expect(hosts).toEqual(["pypi.mirror.example.com:443", "extra.example.org:8443"]);
  });

  it("reads index-url and extra-index-url from pip's configuration, install section first", () => {
    fakePython(
      [
        "global.index-url='https://global.example.com/simple'",
        "install.index-url='https://install.example.com/simple'",
        "global.extra-index-url='file:///opt/pypi/simple https://more.example.org/simple'",
      ].join("\n"),
    );
    expect(allowPresetHosts({ kind: "pypi" }, env())).toEqual([
      "install.example.com:443",
      "more.example.org:443",
    ]);
  });

  it("falls back to pip's own default index and its file storage host", () => {
    fakePython("global.extra-index-url='file:///opt/pypi/simple'");
    expect(allowPresetHosts({ kind: "pypi" }, env())).toEqual([
      "index.example.org:443",
      "files.example.org:443",
    ]);
  });

  it("keeps PIP_INDEX_URL when pip itself is missing", () => {
    const hosts = allowPresetHosts({ kind: "pypi" }, env({ PIP_INDEX_URL: "http://127.0.0.1:3141/simple" }));
    expect(hosts).toEqual(["127.0.0.1:3141"]);
  });

  it("refuses when python3 is missing or only file:// indexes are configured", () => {
    expect(() => allowPresetHosts({ kind: "pypi" }, env())).toThrow(
      /--allow pypi reads the host's configuration, but python3 is not installed.*--allow-host/,
    );
    fakePython("global.index-url='file:///opt/pypi/simple'");
    expect(() => allowPresetHosts({ kind: "pypi" }, env())).toThrow(
      /pip's configuration names no http\(s\) index \(file:\/\/\/opt\/pypi\/simple\); give the host with --allow-host/,
    );
  });
});

describe("allowPresetHosts: git", () => {
  it("allows the host named, or the host and port of a URL", () => {
    expect(allowPresetHosts({ kind: "git", host: "git.example.com" }, env())).toEqual(["git.example.com"]);
    expect(
      allowPresetHosts({ kind: "git", host: "https://git.example.com:8443/org/repo.git" }, env()),
    ).toEqual(["git.example.com:8443"]);
  });
});

describe("toolEnv", () => {
  it("keeps what npm, pip and go read for configuration, and drops what could run code", () => {
    const kept = toolEnv({
      PATH: "/bin",
      HOME: "/home/me",
      npm_config_registry: "r",
      NPM_CONFIG_USERCONFIG: "u",
      PIP_INDEX_URL: "i",
      GOPROXY: "https://proxy.example.org",
      GOSUMDB: "off",
      NODE_OPTIONS: "--require x",
      LD_PRELOAD: "x.so",
      PYTHONPATH: "/w",
      GOFLAGS: "-toolexec=/w/x",
      GOROOT: "/w/go",
      ANTHROPIC_API_KEY: "sk-ant-x",
      GOTOOLCHAIN: "go1.99.0",
    });
    expect(Object.keys(kept).sort()).toEqual([
      "GOPROXY",
      "GOSUMDB",
      "GOTOOLCHAIN",
      "HOME",
      "NPM_CONFIG_USERCONFIG",
      "PATH",
      "PIP_INDEX_URL",
      "npm_config_registry",
    ]);
    // go never switches to (downloads and runs) another toolchain on the host.
    expect(kept["GOTOOLCHAIN"]).toBe("local");
  });
});
