import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../../../src/errors.js";
import { removeContainer } from "../../../../../src/sandbox/docker/container/remove-container.js";

const ID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/** A container whose `remove` records its options and then does what `outcome` says. */
function fakeContainer(outcome: "removed" | { statusCode: number; message: string }) {
  const calls: unknown[] = [];
  const container = {
    id: ID,
    remove: async (options: unknown) => {
      calls.push(options);
      if (outcome !== "removed") throw Object.assign(new Error(outcome.message), outcome);
    },
  } as unknown as Docker.Container;
  return { container, calls };
}

describe("removeContainer", () => {
  it("removes with force and the anonymous volumes, and says it did", async () => {
    const { container, calls } = fakeContainer("removed");
    await expect(removeContainer(container)).resolves.toBe(true);
    expect(calls).toEqual([{ force: true, v: true }]);
  });

  it("is content with a container that is already gone (404), and says it removed nothing", async () => {
    const { container } = fakeContainer({ statusCode: 404, message: "no such container" });
    await expect(removeContainer(container)).resolves.toBe(false);
  });

  it("turns any other failure into a SandboxError naming the container", async () => {
    const { container } = fakeContainer({ statusCode: 500, message: "driver failed" });
    const error = await removeContainer(container).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SandboxError);
    expect(error).toMatchObject({ containerId: ID });
    expect((error as Error).message).toBe(
      "removing the sandbox container failed (0123456789ab): driver failed",
    );
  });
});
