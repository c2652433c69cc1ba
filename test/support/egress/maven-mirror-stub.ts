/**
 * A Maven mirror on loopback that fetches what it is asked for from Maven Central, from this host.
 * Unlike the other registry stubs it serves real artifacts: `mvn test` needs Maven's own plugins and
 * their dependencies (some hundred files), which no stub could stand in for. The sandbox still
 * reaches only this mirror, through the gateway, as a host's settings.xml mirror would be reached.
 */
import { type Origin, startOrigin } from "./origin-server.js";

/** Maven's built-in central repository, where the mirror gets its files. */
const UPSTREAM = "https://repo.maven.apache.org/maven2/";

export interface MavenMirrorStub extends Origin {
  /** `http://<hostname>:<port>/maven2/`, for a settings.xml `<mirror>`. */
  readonly url: string;
}

export async function startMavenMirrorStub(
  hostname: string,
  address = "127.0.0.1",
): Promise<MavenMirrorStub> {
  const origin = await startOrigin(
    (request, response) => {
      const path = (request.url ?? "").split("?")[0] ?? "";
      const method = request.method === "HEAD" ? "HEAD" : "GET";
      if (!path.startsWith("/maven2/") || path.includes("..")) {
        response.writeHead(404).end();
        return;
      }
      fetch(`${UPSTREAM}${path.slice("/maven2/".length)}`, { method })
        .then(async (upstream) => {
          const body = method === "HEAD" ? Buffer.alloc(0) : Buffer.from(await upstream.arrayBuffer());
          response
            .writeHead(upstream.status, {
              "content-type": upstream.headers.get("content-type") ?? "application/octet-stream",
              "content-length":
                method === "HEAD" ? (upstream.headers.get("content-length") ?? "0") : body.length,
            })
            .end(body);
        })
        .catch(() => response.writeHead(502).end());
    },
    undefined,
    address,
  );
  return { ...origin, url: `http://${hostname}:${origin.port}/maven2/` };
}
