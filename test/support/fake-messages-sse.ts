/**
 * Turns a scripted assistant turn into what the Messages API sends: a whole `Message` JSON, or the
 * exact SSE event sequence of a streaming response (message_start, content_block_start/delta/stop per
 * block, message_delta, message_stop, with a ping after the first block starts, as the API does).
 * Reference: https://docs.anthropic.com/en/api/messages-streaming
 */
import { redactedData, signThinking } from "./fake-signatures.js";

/** Error `type`s the API uses in `{"type":"error","error":{"type":…}}`. */
export type ApiErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

/** Stop reasons the fake can send (the SDK's `StopReason`, kept loose so tests can send anything). */
export type FakeStopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "pause_turn"
  | "refusal"
  | "model_context_window_exceeded"
  | "compaction";

/** A content block of a scripted turn. */
export type FakeBlock =
  | { type: "text"; text: string }
  | {
      type: "tool_use";
      /** Defaults to a generated `toolu_fake_…` id. */
      id?: string;
      name: string;
      /** The input object; streamed as `input_json_delta` chunks of its JSON. */
      input?: Record<string, unknown>;
      /** Streamed verbatim instead of `input`'s JSON: lets a test cut the JSON short (max_tokens). */
      rawJson?: string;
    }
  /** Signed by the fake (fake-signatures.ts): a client that alters it is refused. */
  | { type: "thinking"; thinking: string }
  /** Opaque data made by the fake from `seed`. */
  | { type: "redacted_thinking"; seed: string }
  /** Put first by the fake itself when it compacts (fake-context.ts); not for scripts. */
  | {
      type: "compaction";
      content: string;
      encrypted_content: string;
      signature: string;
      tool_changes?: unknown[];
    };

/** Token counts of a scripted turn, in API (snake_case) shape. */
export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** Per-iteration usage; the fake sets it when it compacts. */
  iterations?: Record<string, unknown>[];
}

/** One scripted assistant turn. */
export interface FakeTurn {
  content: FakeBlock[];
  /** Defaults to "tool_use" when a tool_use block is present, else "end_turn". */
  stopReason?: FakeStopReason;
  /** The matched stop sequence, for stopReason "stop_sequence". */
  stopSequence?: string | null;
  /** Merged over `{input_tokens: 10, output_tokens: 5, cache_*: 0}`. */
  usage?: Partial<FakeUsage>;
  /** Defaults to the request's model. */
  model?: string;
  /** Streaming only: after this many events (default: all content events), send `event: error` and end. */
  midStreamError?: { type: ApiErrorType; message: string; afterEvents?: number };
  /** Streaming only: end the response cleanly after this many events, as a cut-off proxy would. */
  truncateAfterEvents?: number;
  /** Streaming only: wait this long between events, so a test can abort mid-stream. */
  eventDelayMs?: number;
}

/** How finely the fake splits streamed text and JSON. */
export interface ChunkSizes {
  text: number;
  json: number;
}

/** One SSE event: its name and JSON data. */
export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** A one-text-block turn. */
export function textReply(text: string, extra: Omit<FakeTurn, "content"> = {}): FakeTurn {
  return { content: [{ type: "text", text }], ...extra };
}

/** A turn calling one tool, optionally after some text. */
export function toolUseReply(
  name: string,
  input: Record<string, unknown>,
  text?: string,
  id?: string,
): FakeTurn {
  const call = { type: "tool_use" as const, name, input, ...(id === undefined ? {} : { id }) };
  return { content: text === undefined ? [call] : [{ type: "text", text }, call] };
}

let nextToolId = 1;

function splitInto(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

function toolJson(block: Extract<FakeBlock, { type: "tool_use" }>): string {
  return block.rawJson ?? JSON.stringify(block.input ?? {});
}

/** The block as it appears in a complete `Message` (tool ids are fixed here so both shapes agree). */
export function finalBlock(block: FakeBlock): Record<string, unknown> {
  if (block.type === "text") return { type: "text", text: block.text, citations: null };
  if (block.type === "thinking")
    return { type: "thinking", thinking: block.thinking, signature: signThinking(block.thinking) };
  if (block.type === "redacted_thinking")
    return { type: "redacted_thinking", data: redactedData(block.seed) };
  if (block.type === "compaction") return { ...block };
  let input: unknown = block.input ?? {};
  if (block.rawJson !== undefined) {
    try {
      input = JSON.parse(block.rawJson);
    } catch {
      input = {};
    }
  }
  return { type: "tool_use", id: block.id ?? `toolu_fake_${nextToolId++}`, name: block.name, input };
}

function usageOf(turn: FakeTurn): FakeUsage {
  return {
    input_tokens: 10,
    output_tokens: 5,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    ...turn.usage,
  };
}

function stopReasonOf(turn: FakeTurn): FakeStopReason {
  return turn.stopReason ?? (turn.content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn");
}

/** The non-streaming response body. */
export function buildMessage(turn: FakeTurn, id: string, requestModel: string): Record<string, unknown> {
  return {
    id,
    type: "message",
    role: "assistant",
    model: turn.model ?? requestModel,
    content: turn.content.map(finalBlock),
    stop_reason: stopReasonOf(turn),
    stop_sequence: turn.stopSequence ?? null,
    usage: usageOf(turn),
  };
}

function blockEvents(block: FakeBlock, index: number, chunks: ChunkSizes): SseEvent[] {
  const final = finalBlock(block);
  const delta = (d: Record<string, unknown>): SseEvent => ({
    event: "content_block_delta",
    data: { type: "content_block_delta", index, delta: d },
  });
  let start: Record<string, unknown>;
  let deltas: SseEvent[];
  if (block.type === "text") {
    start = { type: "text", text: "" };
    deltas = splitInto(block.text, chunks.text).map((text) => delta({ type: "text_delta", text }));
  } else if (block.type === "thinking") {
    start = { type: "thinking", thinking: "", signature: "" };
    deltas = [
      ...splitInto(block.thinking, chunks.text).map((thinking) =>
        delta({ type: "thinking_delta", thinking }),
      ),
      delta({ type: "signature_delta", signature: final["signature"] }),
    ];
  } else if (block.type === "redacted_thinking") {
    // Sent whole at its start, as the API does: there is nothing to stream.
    start = final;
    deltas = [];
  } else if (block.type === "compaction") {
    // The signature and the tool changes open the block (the SDK's compaction_delta carries neither);
    // one compaction_delta carries the summary and its opaque state.
    start = { ...final, content: null, encrypted_content: null };
    deltas = [
      delta({ type: "compaction_delta", content: block.content, encrypted_content: block.encrypted_content }),
    ];
  } else {
    // The API starts a tool_use block with empty input and an empty first partial_json.
    start = { ...final, input: {} };
    deltas = ["", ...splitInto(toolJson(block), chunks.json)].map((partial_json) =>
      delta({ type: "input_json_delta", partial_json }),
    );
  }
  return [
    { event: "content_block_start", data: { type: "content_block_start", index, content_block: start } },
    ...deltas,
    { event: "content_block_stop", data: { type: "content_block_stop", index } },
  ];
}

/** The full event sequence of a streaming response, ending with `event: error` if the turn says so. */
export function buildStreamEvents(
  turn: FakeTurn,
  id: string,
  requestModel: string,
  chunks: ChunkSizes,
): SseEvent[] {
  const usage = usageOf(turn);
  const message = {
    ...buildMessage(turn, id, requestModel),
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...usage, output_tokens: 1 },
  };
  const content = turn.content.flatMap((block, index) => blockEvents(block, index, chunks));
  if (content.length > 0) content.splice(1, 0, { event: "ping", data: { type: "ping" } });
  const events: SseEvent[] = [
    { event: "message_start", data: { type: "message_start", message } },
    ...content,
  ];
  const error = turn.midStreamError;
  if (error) {
    return [
      ...events.slice(0, error.afterEvents ?? events.length),
      { event: "error", data: { type: "error", error: { type: error.type, message: error.message } } },
    ];
  }
  events.push(
    {
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: stopReasonOf(turn), stop_sequence: turn.stopSequence ?? null },
        usage: {
          output_tokens: usage.output_tokens,
          ...(usage.iterations === undefined ? {} : { iterations: usage.iterations }),
        },
      },
    },
    { event: "message_stop", data: { type: "message_stop" } },
  );
  return events.slice(0, turn.truncateAfterEvents ?? events.length);
}

/** One event in wire format. */
export function formatSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
