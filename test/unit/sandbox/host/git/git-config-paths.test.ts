import { describe, expect, it } from "vitest";
import { gitConfigWorkspacePaths } from "../../../../../src/sandbox/host/git/git-config-paths.js";

describe("gitConfigWorkspacePaths", () => {
  it("finds core.hooksPath from the work tree and includes from .git, in any spelling git accepts", () => {
    const config = [
      "[core]",
      "\trepositoryformatversion = 0",
      '\tHooksPath = ".husky" # husky',
      "[include]",
      "\tpath = ../shared.gitconfig",
      '[includeIf "gitdir:/w/"]',
      "\tpath = ../ci/extra.gitconfig ; why",
      "[core]",
      "\thookspath = /w/tools/hooks/",
    ].join("\n");
    expect(gitConfigWorkspacePaths(config, "/w")).toEqual([
      { path: ".husky", key: "core.hooksPath", type: "directory" },
      { path: "shared.gitconfig", key: "include.path", type: "file" },
      { path: "ci/extra.gitconfig", key: "include.path", type: "file" },
      { path: "tools/hooks", key: "core.hooksPath", type: "directory" },
    ]);
  });

  it("leaves out what is outside the workspace, home-relative, or not a path key", () => {
    const config = [
      "[core]",
      "\thooksPath = /etc/hooks",
      "\tfsmonitor = ./x.sh",
      "[include]",
      "\tpath = ~/.gitconfig.local",
      "\tpath = ../../outside",
      "[alias]",
      "\tpath = .husky",
    ].join("\n");
    expect(gitConfigWorkspacePaths(config, "/w")).toEqual([]);
  });
});
