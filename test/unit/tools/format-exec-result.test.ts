import { describe, expect, it } from "vitest";
import { formatExecResult } from "../../../src/tools/format-exec-result.js";
import { makeExecResult } from "../../support/fake-sandbox.js";

describe("formatExecResult", () => {
  it("shows stdout and stderr apart, and the exit code", () => {
    const text = formatExecResult(makeExecResult({ stdout: "out\n", stderr: "warn\n", exitCode: 0 }));
    expect(text).toBe("<stdout>\nout\n</stdout>\n<stderr>\nwarn\n</stderr>\n<exit_code>0</exit_code>");
  });

  it("omits empty streams, and says so when there is no output at all", () => {
    expect(formatExecResult(makeExecResult({ stderr: "bad", exitCode: 2 }))).toBe(
      "<stderr>\nbad\n</stderr>\n<exit_code>2</exit_code>",
    );
    expect(formatExecResult(makeExecResult({}))).toBe("(no output)\n<exit_code>0</exit_code>");
  });

  it("says the command timed out and keeps the partial output", () => {
    const text = formatExecResult(
      makeExecResult({
        stdout: "started\n",
        exitCode: undefined,
        timedOut: true,
        shortMessage: "Command timed out after 5000 milliseconds",
      }),
    );
    expect(text).toContain("<stdout>\nstarted\n</stdout>");
    expect(text).toContain("<exit_code>none</exit_code>");
    expect(text).toContain("<note>Command timed out after 5000 milliseconds; it was killed.");
    expect(text).toContain("(partial)");
  });

  it("says the command was cancelled", () => {
    const text = formatExecResult(makeExecResult({ isCanceled: true, exitCode: undefined, stdout: "a" }));
    expect(text).toContain("cancelled by the user");
  });

  it("says a process was OOM-killed", () => {
    const text = formatExecResult(makeExecResult({ oomKilled: true, exitCode: 137 }));
    expect(text).toContain("<exit_code>137</exit_code>");
    expect(text).toContain("out-of-memory killer");
  });

  it("says the output was cut where the sandbox marked it, and how to see more", () => {
    const text = formatExecResult(
      makeExecResult({ stdout: "head…tail", isTruncated: true, stdoutBytes: 5_000_000, stderr: "e" }),
    );
    expect(text).toContain(
      "<note>Output was too long: the middle was cut where marked. Redirect big output to a file",
    );
  });

  it("says where the whole output of a cut command was saved", () => {
    const saved = [
      {
        id: "out-3",
        stream: "stdout",
        path: "/x/out-3.stdout",
        readPath: "/x/out-3.stdout",
        savedBytes: 64,
        totalBytes: 5_000_000,
      },
      {
        id: "out-3",
        stream: "stderr",
        path: "/x/out-3.stderr",
        readPath: "/x/out-3.stderr",
        savedBytes: 20_000,
        totalBytes: 20_000,
      },
    ] as const;
    const text = formatExecResult(makeExecResult({ stdout: "head…tail", isTruncated: true }), [...saved]);
    expect(text).toContain(
      "<note>Output was too long: the middle was cut where marked. The full output was saved as out-3 (stdout: first 64 bytes of 5,000,000 bytes; stderr: 20,000 bytes): read it with the read_output tool by line range or grep.</note>",
    );
    expect(text.match(/<note>/g)).toHaveLength(1);
  });

  it("passes the sandbox's notices on", () => {
    const text = formatExecResult(makeExecResult({ notices: ["the sandbox was restarted"] }));
    expect(text).toContain("<note>Sandbox notice: the sandbox was restarted</note>");
  });

  it("explains a command that never ran", () => {
    const text = formatExecResult(
      makeExecResult({ exitCode: undefined, failed: true, shortMessage: "The container stopped" }),
    );
    expect(text).toContain("did not run to completion: The container stopped");
  });

  it("does not cut again: the model sees what the sandbox kept, with its one marker", () => {
    const marker = "\n[... 4950000 bytes of output cut here; 5000000 bytes in all ...]\n";
    const stdout = `FIRST${"o".repeat(25_000)}${marker}${"o".repeat(25_000)}LAST`;
    const text = formatExecResult(
      makeExecResult({ stdout, stderr: "e".repeat(25_000), isTruncated: true, exitCode: 1 }),
    );
    expect(text).toContain(`<stdout>\n${stdout}\n</stdout>`);
    expect(text).toContain(`<stderr>\n${"e".repeat(25_000)}\n</stderr>`);
    expect(text.match(/cut here/g)).toHaveLength(1);
    expect(text).not.toContain("elided");
    expect(text).toContain("<exit_code>1</exit_code>");
  });
});

describe("formatExecResult: bytes not shown as themselves (issue 35)", () => {
  it("says how many bytes of stdout are escapes, and how to get them exactly", () => {
    // What the sandbox gives for `printf 'a\0b\377c'`.
    const text = formatExecResult(
      makeExecResult({ stdout: "a\\x00b\\xffc", notTextBytes: { stdout: 2, stderr: 0 } }),
    );
    expect(text).toContain("<stdout>\na\\x00b\\xffc\n</stdout>");
    expect(text).toContain(
      "<note>Not byte-exact: bytes that are not text (NUL, invalid UTF-8 or control characters) are shown above as escapes like \\x00, which printed text can look like (stdout: 2 bytes). For the exact bytes, send the output through od: `… | od -c` (or to a file, then `od -c FILE`).</note>",
    );
  });

  it("counts control characters it shows as escapes, per stream, in bytes", () => {
    const text = formatExecResult(
      makeExecResult({ stdout: "\u001b[1mbold\u001b[0m", stderr: "x\u0085\u202ey", exitCode: 1 }),
    );
    expect(text).toContain("<stdout>\n\\x1b[1mbold\\x1b[0m\n</stdout>");
    // ESC twice (1 byte each); U+0085 (2 bytes) and U+202E (3 bytes).
    expect(text).toContain("(stdout: 2 bytes; stderr: 5 bytes)");
  });

  it("points stderr alone at od without stdout", () => {
    const text = formatExecResult(
      makeExecResult({ stderr: "\\xff", notTextBytes: { stdout: 0, stderr: 1 } }),
    );
    expect(text).toContain("(stderr: 1 byte)");
    expect(text).toContain("`… 2>&1 >/dev/null | od -c`");
  });

  it("adds nothing for text, tabs and newlines included", () => {
    const text = formatExecResult(makeExecResult({ stdout: "é\tb\r\nc €😀\n", stderr: "warn\n" }));
    expect(text).not.toContain("<note>");
  });
});
