/**
 * The proxy variables of allowlist mode, set on each command's exec (and the interactive shell),
 * never on the container: the relay's port changes from one harness process to the next, and the
 * container's create options must not (they decide whether a long-lived container is reused).
 */

/** Hosts the tools must reach directly: the container's own loopback, never the relay. */
export const NO_PROXY_HOSTS = "localhost,127.0.0.1,::1";

/**
 * `KEY=value` entries for an exec's Env. Both spellings of each variable, since tools disagree on
 * which they read (curl and libcurl-based git read `http_proxy` only in lower case; Python's
 * urllib and requests, and so pip, read either). npm also reads its own `npm_config_*`, Yarn 2+ its
 * `YARN_*`. No `PIP_PROXY`: pip honours HTTPS_PROXY already, and with its own proxy option some pip
 * versions stop reading the environment (requests' trust_env, pypa/pip#11091), which would also drop
 * NO_PROXY and any CA bundle variable.
 */
export function egressEnv(port: number): string[] {
  const url = `http://127.0.0.1:${port}`;
  return [
    `HTTP_PROXY=${url}`,
    `http_proxy=${url}`,
    `HTTPS_PROXY=${url}`,
    `https_proxy=${url}`,
    `NO_PROXY=${NO_PROXY_HOSTS}`,
    `no_proxy=${NO_PROXY_HOSTS}`,
    `npm_config_proxy=${url}`,
    `npm_config_https_proxy=${url}`,
    `YARN_HTTP_PROXY=${url}`,
    `YARN_HTTPS_PROXY=${url}`,
  ];
}
