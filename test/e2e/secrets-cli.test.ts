/**
 * `--secret` through the built CLI, the real sandbox and the fake Messages API. The origin is an
 * HTTPS server on a loopback IP literal (the CLI has no resolver to inject) with a certificate from a
 * test CA that the harness process trusts through NODE_EXTRA_CA_CERTS, as a user's own CA would be:
 * the gateway verifies the origin against the host's trust. The value is in harness's environment
 * only; the sandbox, stdout, stderr, stream-json and the transcript see the placeholder, and replay
 * asks for the flag again.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunCertificateAuthority } from "../../src/sandbox/egress/secrets/run-ca.js";
import { skipDocker } from "../support/docker-available.js";
import { type EchoOrigin, startEchoOrigin } from "../support/egress/echo-origin.js";
import { recoverValue } from "../support/egress/value-oracle.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf } from "../support/workspace-container.js";

const IP = "127.0.0.4";
const VALUE = "e2e-REAL-secret-31415926";

/**
 * python3 GET with the placeholder in a header (trusting the run's CA through SSL_CERT_FILE). The
 * header has a plain name: the transcript redacts credential-looking text in commands ("Bearer …",
 * "…Key': …"), and replay would run the redacted command.
 */
function apiKeyCommand(url: string): string {
  return `python3 -c "import os, urllib.request as u
r = u.Request('${url}', headers={'X-Team': os.environ['API_TOKEN']})
print(u.urlopen(r, timeout=20).read().decode())"; echo "inside: $API_TOKEN"`;
}

describe.skipIf(skipDocker)("--secret through the CLI", () => {
  const ca = new RunCertificateAuthority();
  let origin: Server;
  let port = 0;
  const seen: IncomingMessage["headers"][] = [];
  let dir = "";
  let env: Record<string, string> = {};
  beforeAll(async () => {
    const leaf = ca.leafFor(IP);
    origin = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
      seen.push(req.headers);
      res.end(`origin saw ${req.headers["x-team"]}`);
    });
    await new Promise<void>((resolve) => origin.listen(0, IP, resolve));
    port = (origin.address() as AddressInfo).port;
    dir = mkdtempSync(join(tmpdir(), "harness-secrets-e2e-"));
    writeFileSync(join(dir, "ca.pem"), ca.certPem);
    env = { API_TOKEN: VALUE, NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") };
  });
  afterAll(async () => {
    await new Promise((resolve) => origin.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("exec: the origin gets the value, the command and the terminal only the placeholder", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const result = await runCli(
      [
        "exec",
        "--workspace",
        ws.path,
        "--allow-private",
        "--secret",
        `API_TOKEN@${IP}:${port}`,
        "--",
        apiKeyCommand(`https://${IP}:${port}/exec`),
      ],
      { env },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(seen.at(-1)?.["x-team"]).toBe(VALUE);
    expect(result.stdout).toMatch(
      /^origin saw harness-secret-API_TOKEN-[0-9a-f]{32,34}\ninside: harness-secret-API_TOKEN-/,
    );
    expect(result.stdout + result.stderr).not.toContain(VALUE);
  });

  it("exec: without the variable set, it refuses to start and says which", async () => {
    using ws = makeWorkspace();
    const result = await runCli([
      "exec",
      "--workspace",
      ws.path,
      "--secret",
      `API_TOKEN@${IP}:${port}`,
      "--",
      "true",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("API_TOKEN is not set in harness's environment");
  });

  describe("run and replay", () => {
    const fake = useFakeApi();

    it("the transcript and stream-json name the secret, never its value; replay asks for the flag again", async () => {
      using ws = makeWorkspace();
      await using _container = removesContainerOf(ws.path);
      fake.api.enqueue(
        toolUseReply("bash", { command: apiKeyCommand(`https://${IP}:${port}/run`) }, "", "toolu_secret"),
        textReply("Called the API."),
      );
      const transcript = join(ws.path, "..", `${ws.path.split("/").pop()}-secrets.jsonl`);
      const secret = ["--allow-private", "--secret", `API_TOKEN@${IP}:${port}`];
      const run = await runCli(
        [
          "run",
          "--workspace",
          ws.path,
          ...secret,
          "--output-format",
          "stream-json",
          "--transcript",
          transcript,
          "call the API",
        ],
        { env: { ...fake.env, ...env } },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(seen.at(-1)?.["x-team"]).toBe(VALUE);
      const system = JSON.stringify(fake.api.requests[0]?.body.system);
      expect(system).toContain(`$API_TOKEN (for ${IP}:${port}) hold placeholders`);
      const recorded = readFileSync(transcript, "utf8");
      for (const text of [run.stdout, run.stderr, recorded, JSON.stringify(fake.api.requests)]) {
        expect(text).not.toContain(VALUE);
      }
      expect(recorded).toContain(`"secrets":["API_TOKEN@${IP}:${port}"]`);
      expect(run.stdout).toContain('"secrets":["API_TOKEN"]');

      const bare = await runCli(["replay", transcript, "--allow-private", "--output-format", "json"], {
        env,
      });
      expect(bare.code).not.toBe(0);
      expect(bare.stderr).toContain(`--secret API_TOKEN@${IP}:${port}`);

      const again = await runCli(["replay", transcript, ...secret, "--output-format", "json"], { env });
      expect(again.code, again.stderr + again.stdout).toBe(0);
      expect(again.stdout + again.stderr).not.toContain(VALUE);
    });

    it("finding 8: an origin echoing Basic credentials gives the model, the transcript and stream-json the placeholder only", async () => {
      using ws = makeWorkspace();
      await using _container = removesContainerOf(ws.path);
      const leaf = ca.leafFor(IP);
      const echo: EchoOrigin = await startEchoOrigin({ cert: leaf.certPem, key: leaf.keyPem }, IP);
      try {
        // The credentials git builds from https://x-access-token:$API_TOKEN@host/, echoed back three ways.
        const command = `python3 -c "import base64, os, urllib.request as u
b = base64.b64encode(('x-access-token:' + os.environ['API_TOKEN']).encode()).decode()
for form in ['raw', 'b64', 'json-u']:
    print(form, u.urlopen(u.Request('https://${IP}:${echo.port}/form/' + form, headers={'Authorization': 'Basic ' + b}), timeout=20).read().decode())"`;
        fake.api.enqueue(toolUseReply("bash", { command }, "", "toolu_echo"), textReply("Echoed."));
        const transcript = join(ws.path, "..", `${ws.path.split("/").pop()}-echo.jsonl`);
        const run = await runCli(
          [
            "run",
            "--workspace",
            ws.path,
            "--allow-private",
            "--secret",
            `API_TOKEN@${IP}:${echo.port}`,
            "--output-format",
            "stream-json",
            "--transcript",
            transcript,
            "echo the credentials",
          ],
          { env: { ...fake.env, ...env } },
        );
        expect(run.code, run.stderr).toBe(0);
        const basic = Buffer.from(`x-access-token:${VALUE}`).toString("base64");
        expect(echo.seen.map((s) => s.headers.join(" ")).every((h) => h.includes(basic))).toBe(true);
        const recorded = readFileSync(transcript, "utf8");
        const toModel = JSON.stringify(fake.api.requests);
        expect(toModel).toContain("raw Basic ");
        for (const [what, text] of [
          ["stream-json", run.stdout],
          ["stderr", run.stderr],
          ["transcript", recorded],
          ["the model's requests", toModel],
        ]) {
          expect(recoverValue(text ?? "", VALUE), what).toBe(undefined);
        }
      } finally {
        await echo.close();
      }
    });
  });
});
