import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../../../src/errors.js";
import {
  configHash,
  containerCreateOptions,
} from "../../../../../src/sandbox/docker/container/container-spec.js";
import {
  checkEgressNetwork,
  resolveSettings,
} from "../../../../../src/sandbox/docker/docker-sandbox-options.js";
import { EGRESS_MOUNT } from "../../../../../src/sandbox/docker/egress/egress-relay-script.js";

const parts = { image: "img", workspace: "/w", user: "1000:1000", isolation: "bind" as const };

describe("allowlist mode in the container's settings", () => {
  it("mounts the gateway's socket directory read-only at /run/harness-egress, and keeps network none", () => {
    const settings = resolveSettings({ workspace: "/w" }, { ...parts, egressSocketDir: "/state/egress/abc" });
    const create = containerCreateOptions(settings);
    expect(create.HostConfig?.Mounts).toContainEqual({
      Type: "bind",
      Source: "/state/egress/abc",
      Target: EGRESS_MOUNT,
      ReadOnly: true,
    });
    expect(EGRESS_MOUNT).toBe("/run/harness-egress");
    expect(create.HostConfig?.NetworkMode).toBe("none");
    expect(create.NetworkDisabled).toBe(true);
  });

  it("mounts it in copy mode too, next to the copy's volume", () => {
    const settings = resolveSettings(
      { workspace: "/w" },
      { ...parts, isolation: "copy", egressSocketDir: "/state/egress/def" },
    );
    const targets = containerCreateOptions(settings).HostConfig?.Mounts?.map((m) => m.Target);
    expect(targets).toEqual(["/workspace", EGRESS_MOUNT]);
  });

  it("mounts nothing without it, and the create options (config hash) depend only on the directory", () => {
    const plain = containerCreateOptions(resolveSettings({ workspace: "/w" }, parts));
    expect(plain.HostConfig?.Mounts?.some((m) => m.Target === EGRESS_MOUNT)).toBe(false);
    const a = containerCreateOptions(
      resolveSettings({ workspace: "/w" }, { ...parts, egressSocketDir: "/d" }),
    );
    const b = containerCreateOptions(
      resolveSettings({ workspace: "/w" }, { ...parts, egressSocketDir: "/d" }),
    );
    expect(configHash(a)).toBe(configHash(b));
    expect(configHash(a)).not.toBe(configHash(plain));
    expect(JSON.stringify(a.Env)).not.toContain("PROXY");
  });

  it("refuses allowlist mode with a network other than none, in one line", () => {
    const egress = { allowHosts: ["example.com"] };
    expect(() => checkEgressNetwork({ workspace: "/w", egress })).not.toThrow();
    expect(() => checkEgressNetwork({ workspace: "/w", egress, network: "none" })).not.toThrow();
    expect(() => checkEgressNetwork({ workspace: "/w", network: "bridge" })).not.toThrow();
    const error = (() => {
      try {
        checkEgressNetwork({ workspace: "/w", egress, network: "bridge" });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/need --network none.*--network bridge/);
    expect((error as Error).message).not.toContain("\n");
  });
});
