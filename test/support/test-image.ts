/** An image made for a test: harness's own sandbox image with `script` run in it as root, committed as `tag`. */
import type Docker from "dockerode";
import { expect } from "vitest";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";

/** Its id differs from harness's own, so harness takes it for a foreign image (own-image.ts). */
export async function commitTestImage(docker: Docker, tag: string, script: string): Promise<string> {
  const base = await ensureSandboxImage(docker);
  const container = await docker.createContainer({
    Image: base,
    Cmd: ["/bin/sh", "-c", script],
    User: "0",
    NetworkDisabled: true,
    HostConfig: { NetworkMode: "none" },
  });
  try {
    await container.start();
    expect((await container.wait()).StatusCode).toBe(0);
    const [repo = "", name = ""] = tag.split(":");
    await container.commit({ repo, tag: name });
  } finally {
    await container.remove({ force: true });
  }
  return tag;
}
