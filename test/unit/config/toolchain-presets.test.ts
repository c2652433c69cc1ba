/**
 * What each `--allow` preset gives the sandbox besides its allow entries: the variables that point
 * the sandbox's tools at the same registries (allow-presets.test.ts covers the npm and pip entries).
 * go is a fake script on a temporary PATH; cargo's and Maven's configuration are files in a
 * temporary home. Nothing touches the network, and no real tool on the machine is run.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allowPresetGrant, isClientEnv } from "../../../src/allow-presets/allow-presets.js";
import { ConfigError } from "../../../src/errors.js";

let home: string;
let bin: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "harness-toolchain-presets-"));
  bin = join(home, "bin");
  mkdirSync(bin);
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

function tool(name: string, body: string): void {
  const path = join(bin, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

function put(path: string, text: string): void {
  mkdirSync(join(home, path, ".."), { recursive: true });
  writeFileSync(join(home, path), text);
}

const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ PATH: bin, HOME: home, ...extra });

describe("--allow npm and pypi: the sandbox's tools use the registries allowed", () => {
  it("npm, corepack and yarn get the host's registry, scoped registries too, credentials left out", () => {
    tool(
      "npm",
      `if [ "$2" = get ]; then echo 'https://me:s3cret@npm.example.com/r/'; else echo '{"@corp:registry":"https://npm.corp.example.org/"}'; fi`,
    );
    const grant = allowPresetGrant({ kind: "npm" }, env());
    expect(grant.hosts).toEqual(["npm.example.com:443", "npm.corp.example.org:443"]);
    expect(grant.env).toEqual([
      "npm_config_registry=https://npm.example.com/r/",
      "COREPACK_NPM_REGISTRY=https://npm.example.com/r",
      "YARN_NPM_REGISTRY_SERVER=https://npm.example.com/r",
      "npm_config_@corp:registry=https://npm.corp.example.org/",
    ]);
    expect(grant.env.join("\n")).not.toContain("s3cret");
  });

  it("pip gets the index and extra indexes; one over plain http is a trusted host", () => {
    const grant = allowPresetGrant(
      { kind: "pypi" },
      env({
        PIP_INDEX_URL: "http://u:p@127.0.0.2:8081/simple/",
        PIP_EXTRA_INDEX_URL: "https://extra.example.org/simple/ file:///wheels",
      }),
    );
    expect(grant.hosts).toEqual(["127.0.0.2:8081", "extra.example.org:443"]);
    expect(grant.env).toEqual([
      "PIP_INDEX_URL=http://127.0.0.2:8081/simple/",
      "PIP_EXTRA_INDEX_URL=https://extra.example.org/simple/",
      "PIP_TRUSTED_HOST=127.0.0.2:8081",
    ]);
  });
});

describe("--allow go", () => {
  /** go that answers `env -json …` with `json`, and checks it runs as a preset must run it. */
  const fakeGo = (json: string) =>
    tool("go", `[ "$GOTOOLCHAIN" = local ] || exit 8\n[ "$1 $2" = "env -json" ] || exit 9\necho '${json}'`);

  it("allows GOPROXY's proxies and GOSUMDB's server, and gives the sandbox the same settings", () => {
    fakeGo(
      '{"GOPROXY":"https://proxy.example.org,https://user:pw@mirror.example.net:8443/go|direct","GOSUMDB":"sum.example.org+key","GOPRIVATE":"corp.example/*","GONOPROXY":"","GONOSUMDB":""}',
    );
    const grant = allowPresetGrant({ kind: "go" }, env());
    expect(grant.hosts).toEqual(["proxy.example.org:443", "mirror.example.net:8443", "sum.example.org:443"]);
    expect(grant.env).toEqual([
      "GOPROXY=https://proxy.example.org,https://mirror.example.net:8443/go|direct",
      "GOSUMDB=sum.example.org+key",
      "GOPRIVATE=corp.example/*",
    ]);
  });

  it("takes a checksum database's URL when GOSUMDB names one, and none when it is off", () => {
    fakeGo('{"GOPROXY":"http://127.0.0.2:3000","GOSUMDB":"sum.golang.org+abc https://sum.mirror.example"}');
    expect(allowPresetGrant({ kind: "go" }, env()).hosts).toEqual([
      "127.0.0.2:3000",
      "sum.mirror.example:443",
    ]);
    fakeGo('{"GOPROXY":"https://p.example","GOSUMDB":"off"}');
    expect(allowPresetGrant({ kind: "go" }, env())).toEqual({
      hosts: ["p.example:443"],
      env: ["GOPROXY=https://p.example", "GOSUMDB=off"],
    });
  });

  it("without go on the host: harness's environment, then Go's own defaults", () => {
    expect(allowPresetGrant({ kind: "go" }, env()).hosts).toEqual([
      "proxy.golang.org:443",
      "sum.golang.org:443",
    ]);
    expect(allowPresetGrant({ kind: "go" }, env({ GOPROXY: "https://p.example/" })).env).toEqual([
      "GOPROXY=https://p.example/",
      "GOSUMDB=sum.golang.org",
    ]);
  });

  it("refuses a GOPROXY with no proxy in it, and a go that fails", () => {
    fakeGo('{"GOPROXY":"direct","GOSUMDB":"off"}');
    expect(() => allowPresetGrant({ kind: "go" }, env())).toThrow(/GOPROXY is 'direct'.*--allow git=HOST/);
    tool("go", "echo 'go: bad GOENV' >&2; exit 1");
    expect(() => allowPresetGrant({ kind: "go" }, env())).toThrow(ConfigError);
    expect(() => allowPresetGrant({ kind: "go" }, env())).toThrow(/failed: go: bad GOENV/);
  });
});

describe("--allow cargo", () => {
  it("without configuration: crates.io's sparse index and its download host, nothing to set", () => {
    expect(allowPresetGrant({ kind: "cargo" }, env())).toEqual({
      hosts: ["index.crates.io:443", "static.crates.io:443"],
      env: [],
    });
    put(".cargo/config.toml", '[registries.crates-io]\nprotocol = "git"\n');
    expect(allowPresetGrant({ kind: "cargo" }, env()).hosts).toEqual([
      "github.com:443",
      "static.crates.io:443",
    ]);
  });

  it("follows crates.io's replacement to its registry, and hands the sandbox's cargo the same", () => {
    put(
      ".cargo/config.toml",
      [
        "# a company mirror",
        "[source.crates-io]",
        'replace-with = "corp" # the mirror',
        "",
        "[source.corp]",
        "registry = 'sparse+https://token:x@crates.corp.example/index/'",
        "[registries]",
        'other = { index = "https://git.corp.example/index.git" }',
        "[net]",
        "retry = 3",
        "git-fetch-with-cli = true",
      ].join("\n"),
    );
    const grant = allowPresetGrant({ kind: "cargo" }, env());
    expect(grant.hosts).toEqual(["crates.corp.example:443", "git.corp.example:443"]);
    expect(grant.env).toEqual([
      'HARNESS_CARGO_CONFIG=source.crates-io.replace-with = "harness-mirror"\nsource.harness-mirror.registry = "sparse+https://crates.corp.example/index/"',
      "CARGO_REGISTRIES_OTHER_INDEX=https://git.corp.example/index.git",
    ]);
  });

  it("reads CARGO_HOME and cargo's variables, and refuses a local replacement or a loop", () => {
    const cargoHome = join(home, "elsewhere");
    put(
      "elsewhere/config",
      'source.crates-io.replace-with = "m"\n[registries.m]\nindex = "sparse+http://127.0.0.2:9000/"\n',
    );
    expect(allowPresetGrant({ kind: "cargo" }, env({ CARGO_HOME: cargoHome })).hosts).toEqual([
      "127.0.0.2:9000",
    ]);
    expect(
      allowPresetGrant(
        { kind: "cargo" },
        env({ CARGO_HOME: cargoHome, CARGO_REGISTRIES_M_INDEX: "https://m.example/" }),
      ).hosts,
    ).toEqual(["m.example:443"]);
    put(".cargo/config.toml", '[source.crates-io]\nreplace-with = "v"\n[source.v]\ndirectory = "vendor"\n');
    expect(() => allowPresetGrant({ kind: "cargo" }, env())).toThrow(/local directory/);
    put(
      ".cargo/config.toml",
      '[source.crates-io]\nreplace-with = "a"\n[source.a]\nreplace-with = "crates-io"\n',
    );
    expect(() => allowPresetGrant({ kind: "cargo" }, env())).toThrow(/loop/);
    put(".cargo/config.toml", "[source.crates-io\n");
    expect(() => allowPresetGrant({ kind: "cargo" }, env())).toThrow(/cannot read .*config.toml: line 1/);
  });
});

describe("--allow maven", () => {
  it("without settings: Maven Central, nothing to set", () => {
    expect(allowPresetGrant({ kind: "maven" }, env())).toEqual({
      hosts: ["repo.maven.apache.org:443"],
      env: [],
    });
  });

  it("a mirror of central stands in for it, in the sandbox too; servers and blocked mirrors stay out", () => {
    put(
      ".m2/settings.xml",
      `<settings>
  <servers><server><id>corp</id><username>me</username><password>s3cret</password></server></servers>
  <!-- <mirrors><mirror><url>https://commented.example/</url></mirror></mirrors> -->
  <mirrors>
    <mirror><id>corp</id><mirrorOf>central,!snapshots</mirrorOf><url>https://u:s3cret@maven.corp.example/m2?a=1&amp;b=2</url></mirror>
    <mirror><id>env</id><mirrorOf>other</mirrorOf><url>\${env.MIRROR_BASE}/other</url></mirror>
    <mirror><id>off</id><mirrorOf>external:http:*</mirrorOf><url>http://0.0.0.0/</url><blocked>true</blocked></mirror>
  </mirrors>
</settings>`,
    );
    const grant = allowPresetGrant({ kind: "maven" }, env({ MIRROR_BASE: "https://o.example" }));
    expect(grant.hosts).toEqual(["maven.corp.example:443", "o.example:443"]);
    expect(grant.env).toHaveLength(1);
    const settings = grant.env[0] ?? "";
    expect(settings).toMatch(/^HARNESS_MAVEN_SETTINGS=<settings><mirrors>/);
    expect(settings).toContain(
      "<mirror><id>corp</id><mirrorOf>central,!snapshots</mirrorOf><url>https://maven.corp.example/m2?a=1&amp;b=2</url></mirror>",
    );
    expect(settings).toContain("<url>https://o.example/other</url>");
    expect(settings).not.toMatch(/s3cret|server|username/);
    // Maven's own refusal of plain-http repositories is kept.
    expect(settings).toContain("<id>maven-default-http-blocker</id>");
  });

  it("reads the installation's settings too, found from mvn on PATH; refuses an unset env.X", () => {
    const install = join(home, "maven");
    mkdirSync(join(install, "bin"), { recursive: true });
    writeFileSync(join(install, "bin", "mvn"), "#!/bin/sh\n");
    chmodSync(join(install, "bin", "mvn"), 0o755);
    put(
      "maven/conf/settings.xml",
      "<settings><mirrors><mirror><mirrorOf>*</mirrorOf><url>https://all.example/</url></mirror></mirrors></settings>",
    );
    const grant = allowPresetGrant({ kind: "maven" }, env({ PATH: join(install, "bin") }));
    expect(grant.hosts).toEqual(["all.example:443"]);
    // Maven's own interpolation, not a template string.
    const unset = ["$", "{env.NOPE}"].join("");
    put(".m2/settings.xml", `<settings><mirrors><mirror><url>${unset}/x</url></mirror></mirrors></settings>`);
    expect(() => allowPresetGrant({ kind: "maven" }, env())).toThrow(/\$\{env.NOPE\}, which is not set/);
  });
});

describe("isClientEnv", () => {
  it("takes the variables presets set, and nothing that could run code", () => {
    for (const entry of [
      "npm_config_registry=https://r/",
      "npm_config_@corp:registry=https://r/",
      "PIP_INDEX_URL=https://i/",
      "GOPROXY=https://p",
      "HARNESS_CARGO_CONFIG=source={}",
      "CARGO_REGISTRIES_CORP_INDEX=https://c/",
      "HARNESS_MAVEN_SETTINGS=<settings/>",
    ])
      expect(isClientEnv(entry), entry).toBe(true);
    for (const entry of [
      "LD_PRELOAD=/x.so",
      "NODE_OPTIONS=--require /x",
      "npm_config_script_shell=/x",
      "GOFLAGS=-toolexec=/x",
      "MAVEN_OPTS=-javaagent:/x",
      "PATH=/x",
      "GOPROXY",
    ])
      expect(isClientEnv(entry), entry).toBe(false);
  });
});
