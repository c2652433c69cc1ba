import { describe, expect, it } from "vitest";
import { userFromPasswd } from "../../../src/sandbox/docker/devcontainer/image-user.js";

const PASSWD = `root:x:0:0:root:/root:/bin/bash
dev:x:1001:1001::/home/dev:/bin/sh
rooty:x:0:0::/:/bin/sh
grouproot:x:1002:0::/:/bin/sh
`;

describe("userFromPasswd", () => {
  it("resolves a name or a uid to uid:gid", () => {
    expect(userFromPasswd(PASSWD, "dev")).toEqual({ ok: true, user: "1001:1001" });
    expect(userFromPasswd(PASSWD, "1001")).toEqual({ ok: true, user: "1001:1001" });
    expect(userFromPasswd(PASSWD, "1500")).toEqual({ ok: true, user: "1500:1500" });
  });

  it("never gives root, by name, alias, uid or group", () => {
    for (const name of ["root", "rooty", "0", "00", "grouproot"]) {
      expect(userFromPasswd(PASSWD, name).ok, name).toBe(false);
    }
    expect(userFromPasswd(PASSWD, "nobody-here").ok).toBe(false);
  });
});
