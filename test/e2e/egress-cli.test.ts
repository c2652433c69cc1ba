/**
 * Allowlist mode through the built CLI, the real sandbox and the fake Messages API: `exec` with
 * `--allow-host`, a `run` whose command reaches an allowed origin and is refused another (the
 * model's tool result, stream-json's `system`/`egress` lines, the result's counts, the transcript),
 * and `replay` of that transcript through a gateway with the same allowlist.
 *
 * The origins listen on loopback addresses other than 127.0.0.1 and are allowed as IP literals with
 * `--allow-private`: the CLI has no resolver to inject, and a name would need real DNS. Inside the
 * sandbox `NO_PROXY` covers only its own 127.0.0.1, so these go through the relay and the gateway.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf } from "../support/workspace-container.js";

const ALLOWED_IP = "127.0.0.2";
/** Never listened on: a refused request must not reach anything, and nothing is there to reach. */
const REFUSED_IP = "127.0.0.3";

type Json = Record<string, unknown>;

/** A python3 one-liner that GETs a URL through the proxy variables and prints status and body. */
function fetchCommand(url: string): string {
  return `python3 -c "import urllib.request as u, sys
try:
    r = u.urlopen('${url}', timeout=20); print(r.status, r.read().decode())
except Exception as e:
    print('failed', getattr(e, 'code', type(e).__name__)); sys.exit(7)"`;
}

describe.skipIf(skipDocker)("allowlist mode through the CLI", () => {
  let origin: Server;
  let port = 0;
  const paths: string[] = [];
  beforeAll(async () => {
    origin = createServer((req, res) => {
      paths.push(req.url ?? "");
      res.end(`origin says ${req.url}`);
    });
    await new Promise<void>((resolve) => origin.listen(0, ALLOWED_IP, resolve));
    port = (origin.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => origin.close(resolve));
  });

  it("exec: an allowed origin answers; a refused one fails and stderr names it", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const allow = ["--allow-host", `${ALLOWED_IP}:${port}`, "--allow-private"];
    const ok = await runCli([
      "exec",
      "--workspace",
      ws.path,
      ...allow,
      "--",
      fetchCommand(`http://${ALLOWED_IP}:${port}/exec`),
    ]);
    expect(ok.stdout).toBe("200 origin says /exec\n");
    expect(ok.code).toBe(0);
    expect(paths).toContain("/exec");

    const refused = await runCli([
      "exec",
      "--workspace",
      ws.path,
      ...allow,
      "--",
      fetchCommand(`http://${REFUSED_IP}:${port}/nope`),
    ]);
    expect(refused.stdout).toBe("failed 403\n");
    expect(refused.code).toBe(7);
    expect(refused.stderr).toContain(`harness: network: refused ${REFUSED_IP}:${port}`);
    expect(refused.stderr).toContain("--allow-host");
  });

  describe("run and replay", () => {
    const fake = useFakeApi();

    it("records each connection with its tool call, tells the model of the refusal, and replays", async () => {
      using ws = makeWorkspace();
      await using _container = removesContainerOf(ws.path);
      fake.api.enqueue(
        toolUseReply("bash", { command: fetchCommand(`http://${ALLOWED_IP}:${port}/run`) }, "", "toolu_get"),
        toolUseReply(
          "bash",
          { command: fetchCommand(`http://${REFUSED_IP}:${port}/secret`) },
          "",
          "toolu_bad",
        ),
        textReply("Fetched one page; the other host is not allowed."),
      );
      const transcript = join(ws.path, "..", `${ws.path.split("/").pop()}-egress.jsonl`);
      const allow = ["--allow-host", `${ALLOWED_IP}:${port}`, "--allow-private"];
      const run = await runCli(
        [
          "run",
          "--workspace",
          ws.path,
          ...allow,
          "--output-format",
          "stream-json",
          "--transcript",
          transcript,
          "fetch the page",
        ],
        { env: fake.env },
      );
      expect(run.code).toBe(0);
      const lines = run.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Json);

      // The model was told which hosts it may reach, and of the refusal, in one line.
      const system = JSON.stringify(fake.api.requests[0]?.body.system);
      expect(system).toContain(`${ALLOWED_IP}:${port}`);
      const lastRequest = JSON.stringify(fake.api.requests[2]?.body.messages.at(-1));
      expect(lastRequest).toContain(`the request to ${REFUSED_IP}:${port} was refused by harness's gateway`);

      const init = lines.find((l) => l["type"] === "system" && l["subtype"] === "init");
      expect(init?.["network"]).toBe("allowlist");
      const egress = lines.filter((l) => l["type"] === "system" && l["subtype"] === "egress");
      expect(egress).toEqual([
        expect.objectContaining({
          tool_use_id: "toolu_get",
          host: ALLOWED_IP,
          port,
          allowed: true,
          status: 200,
        }),
        expect.objectContaining({
          tool_use_id: "toolu_bad",
          host: REFUSED_IP,
          port,
          allowed: false,
          status: 403,
        }),
      ]);
      const result = lines.at(-1);
      expect(result?.["egress"]).toMatchObject({ connections: 2, denied: 1 });

      const records = readFileSync(transcript, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Json)
        .filter((r) => r["type"] === "egress");
      expect(records.map((r) => [r["callId"], r["allowed"]])).toEqual([
        ["toolu_get", true],
        ["toolu_bad", false],
      ]);

      // Replay: the recorded allowlist comes back; --allow-private must be given again.
      const before = paths.length;
      const replay = await runCli(["replay", transcript, "--allow-private", "--output-format", "json"]);
      expect(replay.stderr).toContain("allowlist");
      const report = JSON.parse(replay.stdout) as { reproduced: boolean; summary: Json };
      expect(report.summary).toMatchObject({ matched: 2, diverged: 0 });
      expect(report.reproduced).toBe(true);
      expect(replay.code).toBe(0);
      expect(paths.slice(before)).toEqual(["/run"]);
    });
  });
});
