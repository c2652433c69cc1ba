import { describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../../../src/config.js";
import { ConfigError } from "../../../../../src/errors.js";
import {
  configHash,
  containerCreateOptions,
  PACKAGE_CACHE_DIR,
} from "../../../../../src/sandbox/docker/container/container-spec.js";
import { resolveSettings } from "../../../../../src/sandbox/docker/docker-sandbox-options.js";
import { packageCacheVolumeName } from "../../../../../src/sandbox/docker/package-cache/package-cache-volume.js";

const parts = { image: "img", workspace: "/w", user: "1000:1000", isolation: "bind" as const };

describe("the package cache in the container's settings", () => {
  it("one volume per workspace and user, never shared by two workspaces", () => {
    const a = packageCacheVolumeName(1000, "/home/me/a");
    expect(a).toMatch(/^harness-package-cache-1000-[0-9a-f]{16}$/);
    expect(packageCacheVolumeName(1000, "/home/me/a")).toBe(a);
    expect(packageCacheVolumeName(1000, "/home/me/b")).not.toBe(a);
    expect(packageCacheVolumeName(1001, "/home/me/a")).not.toBe(a);
  });

  it("mounts the workspace's volume read-write outside the workspace and the home, the toolchains pointed into it", () => {
    const volume = packageCacheVolumeName(1000, "/w");
    for (const isolation of ["bind", "copy"] as const) {
      const create = containerCreateOptions(
        resolveSettings({ workspace: "/w" }, { ...parts, isolation, packageCacheVolume: volume }),
      );
      expect(create.HostConfig?.Mounts).toContainEqual({
        Type: "volume",
        Source: volume,
        Target: PACKAGE_CACHE_DIR,
        ReadOnly: false,
        VolumeOptions: { NoCopy: true },
      });
      expect(create.Env).toEqual(
        expect.arrayContaining([
          `npm_config_cache=${PACKAGE_CACHE_DIR}/npm`,
          `PIP_CACHE_DIR=${PACKAGE_CACHE_DIR}/pip`,
          // npm's logs stay in the container's own home, out of the shared cache.
          "npm_config_logs_dir=/home/sandbox/.npm/_logs",
          `GOMODCACHE=${PACKAGE_CACHE_DIR}/go/mod`,
          `GOCACHE=${PACKAGE_CACHE_DIR}/go/build`,
          `CARGO_HOME=${PACKAGE_CACHE_DIR}/cargo`,
          `MAVEN_OPTS=-Dmaven.repo.local=${PACKAGE_CACHE_DIR}/maven`,
        ]),
      );
      // Only the toolchains' package and build caches are shared, not every tool's.
      expect(create.Env?.some((e) => e.startsWith("XDG_CACHE_HOME="))).toBe(false);
      // The rest of the hardening is the same as without a cache.
      expect(create.HostConfig).toMatchObject({
        CapDrop: ["ALL"],
        ReadonlyRootfs: true,
        NetworkMode: "none",
      });
    }
  });

  it("without a cache: no mount, no variable, and the same create request (and hash) as before", () => {
    const without = containerCreateOptions(resolveSettings({ workspace: "/w" }, parts));
    expect(JSON.stringify(without)).not.toContain(PACKAGE_CACHE_DIR);
    const withIt = containerCreateOptions(
      resolveSettings(
        { workspace: "/w" },
        { ...parts, packageCacheVolume: packageCacheVolumeName(1000, "/w") },
      ),
    );
    expect(configHash(withIt)).not.toBe(configHash(without));
    expect(
      configHash(
        containerCreateOptions(
          resolveSettings({ workspace: "/w" }, { ...parts, packageCacheVolume: undefined }),
        ),
      ),
    ).toBe(configHash(without));
  });
});

describe("the package cache's flags", () => {
  it("is on by default with a 2 GiB bound; --package-cache-max sets it; --no-package-cache turns it off", () => {
    expect(loadSandboxConfig({}, { workspace: "/w" }).packageCache).toEqual({ maxBytes: 2 * 1024 ** 3 });
    expect(loadSandboxConfig({}, { workspace: "/w", packageCacheMax: "500m" }).packageCache).toEqual({
      maxBytes: 500 * 1024 ** 2,
    });
    expect(loadSandboxConfig({}, { workspace: "/w", packageCache: false }).packageCache).toBeUndefined();
    expect(() => loadSandboxConfig({}, { workspace: "/w", packageCacheMax: "lots" })).toThrow(ConfigError);
    expect(() => loadSandboxConfig({}, { workspace: "/w", packageCacheMax: "lots" })).toThrow(
      /--package-cache-max/,
    );
  });

  it("is a flag only: no variable of a .env the sandbox could write turns it off or on", () => {
    const env = {
      HARNESS_PACKAGE_CACHE: "0",
      HARNESS_NO_PACKAGE_CACHE: "1",
      HARNESS_PACKAGE_CACHE_MAX: "1k",
    };
    expect(loadSandboxConfig(env, { workspace: "/w" }).packageCache).toEqual({ maxBytes: 2 * 1024 ** 3 });
  });
});
