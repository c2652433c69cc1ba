/**
 * The variables that make the sandbox's tools trust the run's CA, set on each command as the proxy
 * variables are. Most of them replace the tool's whole store, so they name the bundle (Node's root
 * store plus the run's CA): blind tunnels to other hosts still verify as before. Node's own variable
 * adds to its store, so it names the CA alone.
 */
export function trustEnv(caPath: string, bundlePath: string): string[] {
  return [
    `SSL_CERT_FILE=${bundlePath}`,
    `CURL_CA_BUNDLE=${bundlePath}`,
    `REQUESTS_CA_BUNDLE=${bundlePath}`,
    `PIP_CERT=${bundlePath}`,
    `GIT_SSL_CAINFO=${bundlePath}`,
    `npm_config_cafile=${bundlePath}`,
    `NODE_EXTRA_CA_CERTS=${caPath}`,
  ];
}
