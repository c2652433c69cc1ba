/**
 * The ssh command line for an ssh:// engine, as the docker CLI's connhelper builds it (docker/cli
 * `cli/connhelper/ssh`): `ssh [-l user] [-p port] -- host docker system dial-stdio`, plus options
 * that bound how long a host that stops answering can hold a call.
 */

/**
 * TCP connect plus ssh's banner exchange. Without it a host that accepts TCP but never answers
 * (a frozen sshd, a full listen backlog) holds each new connection for the kernel's SYN retries
 * (about 127 s on Linux) or forever.
 */
export const SSH_CONNECT_TIMEOUT_S = 10;

/**
 * Keepalives inside the encrypted channel: a connection whose far end stopped answering (machine
 * gone, network cut, sshd frozen) ends after INTERVAL × COUNT seconds with ssh's "Timeout, server
 * not responding", instead of waiting for TCP (about 15 min of retransmissions, or never while the
 * far kernel still acknowledges). A mid-command drop then surfaces as a failed connection.
 */
export const SSH_ALIVE_INTERVAL_S = 5;
export const SSH_ALIVE_COUNT = 3;

/** The arguments of `ssh` for `host` (an ssh://[user@]host[:port] URL); throws on anything else. */
export function sshDialArgs(host: string): string[] {
  const url = new URL(host);
  if (url.protocol !== "ssh:") throw new Error(`${host}: not an ssh:// URL`);
  if (url.hostname === "") throw new Error(`${host}: an ssh:// engine URL needs a host`);
  if (url.pathname !== "" && url.pathname !== "/")
    throw new Error(`${host}: an ssh:// engine URL takes no path`);
  if (url.password !== "") throw new Error(`${host}: an ssh:// engine URL takes no password; use a key`);
  const args = [
    "-T",
    // Never a password or host-key prompt: there is no terminal to answer it, and it would wait forever.
    "-o",
    "BatchMode=yes",
    "-o",
    `ConnectTimeout=${SSH_CONNECT_TIMEOUT_S}`,
    "-o",
    `ServerAliveInterval=${SSH_ALIVE_INTERVAL_S}`,
    "-o",
    `ServerAliveCountMax=${SSH_ALIVE_COUNT}`,
  ];
  if (url.username) args.push("-l", decodeURIComponent(url.username));
  if (url.port) args.push("-p", url.port);
  // "--" before the host, as the docker CLI does: a host spelled like an option is not one.
  args.push("--", url.hostname.replace(/^\[(.*)\]$/, "$1"), "docker", "system", "dial-stdio");
  return args;
}
