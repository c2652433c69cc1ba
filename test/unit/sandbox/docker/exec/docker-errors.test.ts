/**
 * Which engine failures mean the engine itself went away (its socket refused, missing or cut off),
 * and the one line harness gives for them (test/faults/engine-restart.test.ts drives a real one).
 */
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { EngineGoneError, SandboxError } from "../../../../../src/errors.js";
import {
  classifyEngineError,
  engineUnreachable,
  sandboxError,
} from "../../../../../src/sandbox/docker/exec/docker-errors.js";

/** A socket error as Node's http client gives it to docker-modem. */
function socketError(code: string, syscall = "connect"): Error {
  return Object.assign(new Error(`${syscall} ${code} /run/x/docker.sock`), { code, syscall });
}

/** An answer from the engine: docker-modem puts its status on the error. */
function answered(statusCode: number, message: string): Error {
  return Object.assign(new Error(message), { statusCode });
}

describe("engineUnreachable", () => {
  it("is true for a refused, missing or cut-off socket", () => {
    expect(engineUnreachable(socketError("ECONNREFUSED"))).toBe(true);
    expect(engineUnreachable(socketError("ENOENT"))).toBe(true);
    expect(engineUnreachable(socketError("ECONNRESET", "read"))).toBe(true);
    expect(engineUnreachable(new Error("socket hang up"))).toBe(true);
  });

  it("is false for anything the engine answered, and for a file that is missing", () => {
    expect(engineUnreachable(answered(404, "no such container"))).toBe(false);
    expect(engineUnreachable(answered(500, "connect ECONNREFUSED inside the engine"))).toBe(false);
    expect(engineUnreachable(socketError("ENOENT", "open"))).toBe(false);
    expect(engineUnreachable(new Error("helper exec exited with 1"))).toBe(false);
  });
});

describe("sandboxError", () => {
  it("says the engine went away, in one line, and is still a SandboxError", () => {
    const error = sandboxError(
      "inspecting the sandbox container failed",
      socketError("ECONNREFUSED"),
      "a".repeat(64),
    );
    expect(error).toBeInstanceOf(EngineGoneError);
    expect(error).toBeInstanceOf(SandboxError);
    expect(error.containerId).toBe("a".repeat(64));
    expect(error.message).toMatch(
      /^the Docker engine went away \(connect ECONNREFUSED \/run\/x\/docker\.sock\) while inspecting the sandbox container \(aaaaaaaaaaaa\); .*`harness run --continue`/,
    );
    expect(error.message).not.toContain("\n");
  });

  it("keeps an engine's own answer as it was", () => {
    const error = sandboxError(
      "starting the sandbox container failed",
      answered(500, "boom"),
      "b".repeat(64),
    );
    expect(error).not.toBeInstanceOf(EngineGoneError);
    expect(error.message).toBe("starting the sandbox container failed (bbbbbbbbbbbb): boom");
  });
});

describe("classifyEngineError", () => {
  const container = (inspect: () => Promise<unknown>) =>
    ({ id: "c".repeat(64), inspect }) as unknown as Docker.Container;

  it("turns any failure into EngineGoneError when the engine no longer answers a look at the container", async () => {
    const failed = new SandboxError("the sandbox container did not become ready: exec failed");
    const gone = container(() => Promise.reject(socketError("ENOENT")));
    const error = await classifyEngineError(gone, "running the command", failed);
    expect(error).toBeInstanceOf(EngineGoneError);
    expect((error as Error).message).toMatch(
      /^the Docker engine went away \(.*\) while running the command;/,
    );
    expect((error as Error).cause).toBe(failed);
  });

  it("leaves the failure as it is while the engine answers", async () => {
    const failed = new SandboxError("the sandbox cannot run commands even after a restart");
    const alive = container(() => Promise.resolve({ State: { Running: true } }));
    expect(await classifyEngineError(alive, "running the command", failed)).toBe(failed);
    const missing = container(() => Promise.reject(answered(404, "no such container")));
    expect(await classifyEngineError(missing, "running the command", failed)).toBe(failed);
  });
});
