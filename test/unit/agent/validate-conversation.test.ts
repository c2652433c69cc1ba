import { describe, expect, it } from "vitest";
import type { MessageParam } from "../../../src/model/model-client.js";
import { validateConversation } from "../../support/validate-conversation.js";

const user = (content: MessageParam["content"]): MessageParam => ({ role: "user", content });
const assistant = (content: MessageParam["content"]): MessageParam => ({ role: "assistant", content });
const use = (id: string) => ({ type: "tool_use" as const, id, name: "bash", input: {} });
const result = (id: string) => ({ type: "tool_result" as const, tool_use_id: id, content: "ok" });

// The helper the loop tests rely on must itself catch what the API rejects.
describe("validateConversation", () => {
  it("accepts a valid tool exchange", () => {
    expect(
      validateConversation([user("hi"), assistant([use("a")]), user([result("a")]), assistant("done")]),
    ).toEqual([]);
  });

  it.each([
    ["no messages", [], /at least one/],
    ["an assistant first", [assistant("x")], /first message must be user/],
    ["two user messages in a row", [user("a"), user("b")], /roles must alternate/],
    ["empty content", [user([])], /non-empty/],
    ["an empty text block", [user([{ type: "text", text: "" }])], /text must be non-empty/],
    ["an unanswered tool_use at the end", [user("a"), assistant([use("a")])], /never answered/],
    [
      "a tool_use answered late",
      [user("a"), assistant([use("a")]), user("b")],
      /no tool_result immediately after/,
    ],
    [
      "a result for an unknown id",
      [user("a"), assistant([use("a")]), user([result("a"), result("zz")])],
      /unknown tool_use id zz/,
    ],
    [
      "text before the results",
      [user("a"), assistant([use("a")]), user([{ type: "text", text: "x" }, result("a")])],
      /must come first/,
    ],
    [
      "a duplicate tool_use id",
      [user("a"), assistant([use("a")]), user([result("a")]), assistant([use("a")]), user([result("a")])],
      /duplicate/,
    ],
  ] as Array<[string, MessageParam[], RegExp]>)("rejects %s", (_name, messages, problem) => {
    expect(validateConversation(messages).join("\n")).toMatch(problem);
  });
});
