/**
 * `CONNECT host:port`: an HTTPS tunnel, without TLS interception. The gateway decides on the name,
 * connects to a checked address, answers 200 and then copies bytes both ways, counted, with
 * backpressure, until both sides have finished or the connection is cut short.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { pipeline } from "node:stream";
import type { GatewayCore } from "./gateway-core.js";
import { parseAuthority } from "./http/request-target.js";
import { answerBody, answerRaw, requestHeadBytes } from "./http/responses.js";
import { shown } from "./policy/host-syntax.js";

const ESTABLISHED = "HTTP/1.1 200 Connection Established\r\n\r\n";

export async function handleConnect(
  core: GatewayCore,
  request: IncomingMessage,
  client: Socket,
  head: Buffer,
): Promise<void> {
  client.on("error", () => {});
  const target = parseAuthority(request.url ?? "");
  if (!target.ok) {
    const asked = shown(request.url ?? "");
    core.malformed(asked, "CONNECT", target.reason);
    answerRaw(client, 400, answerBody(asked, 0, target.reason));
    return;
  }
  const host = shown(target.host);
  // The name is looked up and sent on (SNI): it must not carry a secret's value or placeholder.
  const named = core.secrets?.decideName(target.host, target.port);
  if (named !== undefined && !named.ok) {
    core.refuseContent(host, target.port, "CONNECT", named.reason, named.secret);
    answerRaw(client, 403, answerBody(host, target.port, named.reason));
    return;
  }
  // The CONNECT head and the answer to it cross the gateway too: the budget pays for them up front.
  const headBytes = requestHeadBytes(request) + ESTABLISHED.length;
  const admission = core.admit(target.host, target.port, "CONNECT", headBytes);
  if (!admission.ok) {
    answerRaw(client, admission.status, answerBody(host, target.port, admission.reason));
    return;
  }
  const { connection } = admission;
  if (!connection.charge(headBytes)) return;
  if (core.terminates(target.host, target.port)) {
    // TLS ends here: this record is the CONNECT's; each request inside gets its own.
    connection.answered(200);
    connection.finish();
    client.write(ESTABLISHED);
    if (head.length > 0) client.unshift(head);
    core.terminate(client, target.host, target.port);
    return;
  }
  connection.onAbort(() => client.destroy());
  // Seen only when the socket fails: a paused socket does not notice EOF; idleMs bounds that case.
  const gone = () => connection.abort("the client closed before the tunnel was open");
  client.once("close", gone);

  const reached = await core.reach(connection);
  if (!reached.ok) {
    if (!connection.ended) {
      client.off("close", gone);
      answerRaw(client, reached.status, answerBody(host, target.port, reached.reason));
      connection.finish();
    }
    return;
  }
  client.off("close", gone);
  const origin = reached.socket;
  connection.onAbort(() => origin.destroy());
  origin.on("error", (error: NodeJS.ErrnoException) =>
    connection.note(`origin connection failed: ${error.code ?? error.message}`),
  );
  connection.answered(200);
  client.write(ESTABLISHED);
  // Bytes the client sent right behind its CONNECT go up first, counted like the rest.
  if (head.length > 0) client.unshift(head);

  let open = 2;
  const directionDone = (error: Error | null | undefined) => {
    open -= 1;
    // An error in either direction ends both; a clean end waits for the other direction.
    if (!error && open > 0) return;
    client.destroy();
    origin.destroy();
    connection.finish();
  };
  pipeline(client, connection.counter("up"), origin, directionDone);
  pipeline(origin, connection.counter("down"), client, directionDone);
}
