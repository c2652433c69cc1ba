import { describe, expect, it } from "vitest";
import type { TokenUsage } from "../../../src/model/model-client.js";
import { fixture } from "../../support/agent-fixture.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";
import { assertValidConversation } from "../../support/validate-conversation.js";

const forever = (n: number) => Array.from({ length: n }, (_, i) => toolCalls(bash(`t${i}`, `echo ${i}`)));
/** One cent per token of any kind: each scripted response (10 input + 5 output) costs $0.15. */
const centPerToken = (usage: Readonly<TokenUsage>) =>
  (usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens) /
  100;

describe("runAgent: cost budget", () => {
  it("stops with cost_limit once the priced usage reaches maxCostUsd, after answering the tool calls", async () => {
    const { run, model, sandbox, notices } = fixture(forever(5), {
      limits: { maxCostUsd: 0.4, costOf: centPerToken },
    });
    const result = await run();
    // $0.15, $0.30 are under the budget; $0.45 after the third call is not.
    expect(result).toMatchObject({ status: "cost_limit", turns: 3 });
    expect(model.requests).toHaveLength(3);
    expect(sandbox.commands).toEqual(["echo 0", "echo 1", "echo 2"]);
    expect(notices().join()).toContain("cost budget used up (about $0.45 of $0.4)");
    assertValidConversation(result.messages);
  });

  it("lets a run that finishes under budget finish", async () => {
    const { run } = fixture([toolCalls(bash("t", "ls")), answer("done")], {
      limits: { maxCostUsd: 1, costOf: centPerToken },
    });
    expect((await run()).status).toBe("submitted");
  });

  it("has no budget without a price function", async () => {
    const { run } = fixture([...forever(3), answer("done")], { limits: { maxCostUsd: 0.000001 } });
    expect((await run()).status).toBe("submitted");
  });
});
