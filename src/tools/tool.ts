/**
 * A tool the model can call: its definition for the API, a parser for its input, and what it does.
 */
import type { ExecResult } from "../sandbox/sandbox.js";

/** What the API is told about a tool. */
export interface ToolDefinition {
  /** Tool name, as the model will call it. */
  name: string;
  /** What the tool does and when to use it, for the model. */
  description: string;
  /** JSON Schema of the input object. */
  inputSchema: { type: "object"; properties: Record<string, unknown>; required?: string[] };
  /**
   * An Anthropic-defined tool the model was trained on: the Messages API is sent its type and name
   * only (the schema is the model's own). `description` and `inputSchema` still say what it takes,
   * for everyone else (MCP clients, people).
   */
  anthropic?: AnthropicToolType;
}

/** The Anthropic-defined tools harness implements. */
export type AnthropicToolType =
  | { type: "bash_20250124" }
  /** `maxCharacters`: what one `view` shows at most (the API's `max_characters`). */
  | { type: "text_editor_20250728"; maxCharacters?: number };

/** One `tool_use` block from the model. */
export interface ToolCall {
  /** The `tool_use` block id; the result must carry the same id. */
  id: string;
  /** The tool the model asked for. */
  name: string;
  /** The input as the model wrote it; not yet validated. */
  input: unknown;
}

/** One `tool_result` block to send back. */
export interface ToolResult {
  /** Equals the `ToolCall.id` it answers. */
  toolUseId: string;
  /** Text for the model. */
  content: string;
  /** True when the call failed, was blocked, timed out or could not run. */
  isError: boolean;
  /** The command's result, when the tool ran one (for the terminal and the transcript). */
  exec?: ExecResult;
  /** The id `read_output` reads the whole output by, when it was cut and kept (`content` names it too). */
  outputId?: string;
}

/** What a tool gets besides its input. */
export interface ToolContext {
  /** The `tool_use` id of this call (network records made while it runs carry it). */
  callId?: string;
  /** Aborted on Ctrl-C: the tool must stop its work (the bash tool kills the command). */
  signal?: AbortSignal;
  /** A running command's output as it arrives, for live display. Must not throw. */
  onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void;
}

/** What a tool returns. Throwing is allowed too: the runner turns it into an error result. */
export interface ToolOutput {
  content: string;
  isError: boolean;
  exec?: ExecResult;
  /** The id the whole of a cut output was saved under (see `ToolResult.outputId`). */
  outputId?: string;
}

/**
 * Thrown by a tool to return a specific error text to the model.
 * Anything else thrown becomes `Error: <message>`.
 */
export class ToolError extends Error {
  override readonly name = "ToolError";
}

export interface Tool<Input = unknown> {
  readonly definition: ToolDefinition;
  /** Validates the model's input; throws `ToolError` with a message the model can act on. */
  parse(input: unknown): Input;
  run(input: Input, context: ToolContext): Promise<ToolOutput>;
}
