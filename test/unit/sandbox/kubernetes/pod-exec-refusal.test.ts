import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../../src/errors.js";
import { execRefusal } from "../../../../src/sandbox/kubernetes/api/pod-exec.js";

/** What client-node rejects with when the WebSocket upgrade is refused: ws's ErrorEvent, not an Error. */
const errorEvent = (message: string) => ({ type: "error", message, error: new Error(message), target: {} });

describe("an exec the API server would not open", () => {
  const target = { namespace: "ns", pod: "harness-p-1" };

  it("is a SandboxError naming pods/exec for a 403 (an ErrorEvent printed as [object Object])", () => {
    const error = execRefusal(errorEvent("Unexpected server response: 403"), target);
    expect(error).toBeInstanceOf(SandboxError);
    expect(error.message).toBe(
      "the API server refused an exec into pod harness-p-1 in namespace ns (HTTP 403): the kubeconfig's user may not create pods/exec there: bind it a Role with create on pods/exec (harness doctor --engine kubernetes checks)",
    );
  });

  it("keeps any other reason's words", () => {
    expect(execRefusal(errorEvent("connect ECONNREFUSED 127.0.0.1:16443"), target).message).toBe(
      "opening an exec into pod harness-p-1 in namespace ns failed: connect ECONNREFUSED 127.0.0.1:16443",
    );
    expect(execRefusal(new Error("socket hang up"), target).message).toMatch(/failed: socket hang up$/);
  });
});
