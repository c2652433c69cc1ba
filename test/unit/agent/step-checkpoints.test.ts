/**
 * The loop's checkpoint hook: a snapshot starts after every answered call and may run while the model
 * is asked again, but it is settled before the next call runs, before the next response is recorded
 * and before the run ends, so no command changes the workspace during a snapshot and the transcript
 * keeps its order.
 */
import { describe, expect, it } from "vitest";
import type { StepCheckpoints } from "../../../src/agent/agent-types.js";
import type { ToolCall } from "../../../src/tools/tool.js";
import { type EventLog, fixture } from "../../support/agent-fixture.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

/** Records into `log`; each snapshot takes a few ms, as a real one does. */
function slowCheckpoints(log: EventLog): StepCheckpoints {
  let pending = Promise.resolve();
  return {
    start: async () => {
      log.push(["checkpoint.start"]);
    },
    afterToolCall: (call: ToolCall) => {
      log.push(["checkpoint.begin", call.id]);
      pending = pending.then(
        () =>
          new Promise((resolve) =>
            setTimeout(() => {
              log.push(["checkpoint.done", call.id]);
              resolve();
            }, 15),
          ),
      );
    },
    settle: () => pending,
  };
}

describe("runAgent: checkpoints after every tool call", () => {
  it("keeps the events in order: start, call, result, snapshot done, next call …", async () => {
    const log: EventLog = [];
    const checkpoints = slowCheckpoints(log);
    const f = fixture(
      [
        toolCalls(bash("t1", "echo a > a"), bash("t2", "echo b > b")),
        toolCalls(bash("t3", "ls")),
        answer("Done."),
      ],
      {
        checkpoints,
        events: {
          onRunStart: () => log.push(["onRunStart"]),
          onToolCall: (call) => log.push(["onToolCall", call.id]),
          onToolResult: (call) => log.push(["onToolResult", call.id]),
          onAssistantTurn: () => log.push(["onAssistantTurn"]),
          onRunEnd: () => log.push(["onRunEnd"]),
        },
      },
    );
    await f.run();
    expect(log).toEqual([
      ["onRunStart"],
      ["checkpoint.start"],
      ["onAssistantTurn"],
      ["onToolCall", "t1"],
      ["onToolResult", "t1"],
      ["checkpoint.begin", "t1"],
      ["checkpoint.done", "t1"],
      ["onToolCall", "t2"],
      ["onToolResult", "t2"],
      ["checkpoint.begin", "t2"],
      ["checkpoint.done", "t2"],
      ["onAssistantTurn"],
      ["onToolCall", "t3"],
      ["onToolResult", "t3"],
      ["checkpoint.begin", "t3"],
      ["checkpoint.done", "t3"],
      ["onAssistantTurn"],
      ["onRunEnd"],
    ]);
  });

  it("settles the last snapshot before the run ends when the model fails", async () => {
    const log: EventLog = [];
    const f = fixture([toolCalls(bash("t1", "true")), new Error("API down")], {
      checkpoints: slowCheckpoints(log),
      events: { onRunEnd: () => log.push(["onRunEnd"]) },
    });
    const result = await f.run();
    expect(result.status).toBe("error");
    expect(log.slice(-2)).toEqual([["checkpoint.done", "t1"], ["onRunEnd"]]);
  });
});
