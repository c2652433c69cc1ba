/**
 * The text editor (text_editor_20250728) and bash_20250124's restart on a real sandbox: every command
 * checked on the files in the workspace, as the workspace owner, with write_file's protections:
 * protected paths stay read-only, a link in the workspace that leads out of it is not followed,
 * files too big are refused.
 */
import { chownSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { createBashTool } from "../../src/tools/bash-tool.js";
import { createEditorTool } from "../../src/tools/editor/editor-tool.js";
import { type Tool, ToolError } from "../../src/tools/tool.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

/** A file of the workspace as its owner would have written it. */
function ownFile(path: string, text: string): void {
  writeFileSync(path, text);
  if (process.getuid?.() === 0) chownSync(path, TEST_UID, TEST_GID);
}

/** The tool's answer to `input`, a refusal included, as the model gets it. */
async function call<I>(tool: Tool<I>, input: unknown): Promise<{ content: string; isError: boolean }> {
  try {
    return await tool.run(tool.parse(input), {});
  } catch (error) {
    if (error instanceof ToolError) return { content: error.message, isError: true };
    throw error;
  }
}

describe.skipIf(skipDocker)("the text editor in the sandbox", { timeout: 180_000 }, () => {
  it("views, creates, replaces and inserts on the workspace's files, as its owner", async () => {
    using ws = makeWorkspace();
    ownFile(join(ws.path, "app.py"), "def main():\n\tprint('hi')\n\nmain()\n");
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const editor = createEditorTool(sandbox, { timeoutMs: 30_000, maxCharacters: 20 });

    expect(await call(editor, { command: "view", path: "/workspace/app.py", view_range: [2, 2] })).toEqual({
      content: "Here's the result of running `cat -n` on /workspace/app.py:\n     2\t\tprint('hi')\n",
      isError: false,
    });
    const cut = await call(editor, { command: "view", path: "/workspace/app.py" });
    expect(cut.content).toContain("<response clipped>");

    const replaced = await call(editor, {
      command: "str_replace",
      path: "/workspace/app.py",
      old_str: "print('hi')",
      new_str: "print('hello')",
    });
    expect(replaced).toMatchObject({
      isError: false,
      content: expect.stringMatching(/^The file \/workspace\/app.py has been edited\./),
    });
    expect(readFileSync(join(ws.path, "app.py"), "utf8")).toBe("def main():\n\tprint('hello')\n\nmain()\n");

    const inserted = await call(editor, {
      command: "insert",
      path: "/workspace/app.py",
      insert_line: 0,
      insert_text: "#!/usr/bin/env python3",
    });
    expect(inserted.isError).toBe(false);
    expect(readFileSync(join(ws.path, "app.py"), "utf8")).toMatch(/^#!\/usr\/bin\/env python3\ndef main/);

    const created = await call(editor, {
      command: "create",
      path: "/workspace/pkg/sub/mod.py",
      file_text: "X = 1\n",
    });
    expect(created).toEqual({
      content: "File created successfully at: /workspace/pkg/sub/mod.py",
      isError: false,
    });
    const made = join(ws.path, "pkg/sub/mod.py");
    expect(readFileSync(made, "utf8")).toBe("X = 1\n");
    if (process.getuid?.() === 0) expect(statSync(made).uid).toBe(TEST_UID);

    expect(await call(editor, { command: "create", path: "/workspace/app.py", file_text: "" })).toEqual({
      content: "File already exists at: /workspace/app.py. Cannot overwrite files using command `create`.",
      isError: true,
    });
    expect(
      await call(editor, { command: "str_replace", path: "/workspace/app.py", old_str: "nope", new_str: "" }),
    ).toEqual({
      content: "No replacement was performed, old_str `nope` did not appear verbatim in /workspace/app.py.",
      isError: true,
    });
    const listing = await call(editor, { command: "view", path: "/workspace" });
    expect(listing.content).toMatch(
      /^Here's the files and directories up to 2 levels deep in \/workspace, excluding hidden items:\n/,
    );
    expect(listing.content).toContain("/workspace/pkg/sub");
    expect(await call(editor, { command: "view", path: "/workspace/none.py" })).toEqual({
      content: "The path /workspace/none.py does not exist. Please provide a valid path.",
      isError: true,
    });
    expect(await call(editor, { command: "view", path: "app.py" })).toMatchObject({
      content: expect.stringMatching(/is not an absolute path.*Maybe you meant \/workspace\/app.py\?/),
    });
  });

  it("keeps protected paths read-only, follows no link out of the workspace, and refuses a file too big", async () => {
    using ws = makeWorkspace();
    ownFile(join(ws.path, ".env"), "TOKEN=keep\n");
    symlinkSync("/etc/passwd", join(ws.path, "passwd-link"));
    symlinkSync("/tmp/planted", join(ws.path, "dangling"));
    mkdirSync(join(ws.path, "data"));
    ownFile(join(ws.path, "data/big.txt"), "y".repeat(3 * 1024 * 1024));
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const editor = createEditorTool(sandbox, { timeoutMs: 30_000 });

    const env = await call(editor, {
      command: "str_replace",
      path: "/workspace/.env",
      old_str: "keep",
      new_str: "stolen",
    });
    expect(env.isError).toBe(true);
    expect(env.content).toMatch(/Read-only file system/);
    expect(readFileSync(join(ws.path, ".env"), "utf8")).toBe("TOKEN=keep\n");

    const out = await call(editor, { command: "view", path: "/workspace/passwd-link" });
    expect(out).toEqual({
      content:
        "Error: /workspace/passwd-link leads out of the workspace (to /etc/passwd) through a link; it is not followed.",
      isError: true,
    });
    const planted = await call(editor, { command: "create", path: "/workspace/dangling", file_text: "x" });
    expect(planted.content).toMatch(/leads out of the workspace \(to \/tmp\/planted\)/);
    const check = await sandbox.exec("test -e /tmp/planted; echo $?");
    expect(check.stdout.trim()).toBe("1");

    const big = await call(editor, {
      command: "str_replace",
      path: "/workspace/data/big.txt",
      old_str: "y",
      new_str: "z",
    });
    expect(big.content).toMatch(/more than the editor handles/);
  });

  it("restarts bash: earlier calls' background jobs killed and named, the working directory reset", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const bash = createBashTool(sandbox, { timeoutMs: 30_000, anthropic: true });
    await call(bash, { command: "nohup sleep 321 > /dev/null 2>&1 & cd /tmp" });
    const restarted = await call(bash, { restart: true });
    expect(restarted.isError).toBe(false);
    expect(restarted.content).toMatch(
      /^The shell was restarted: 1 background process was killed \(`sleep 321`\); the working directory is \/workspace again\./,
    );
    const after = await sandbox.exec("pwd");
    expect(after.stdout.trim()).toBe("/workspace");
    expect(after.background).toBeUndefined();
  });
});
