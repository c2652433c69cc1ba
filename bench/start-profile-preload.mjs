// Loaded with --import into `harness exec` by bench/start-profile.ts: stamps each phase of the start
// (ms since the process began) and prints them as one JSON line on stderr at exit. Engine requests
// are seen through http.request; the executor through its exec's upgraded socket (first bytes back
// = its hello; writes = the program, then frames).
import http from "node:http";

const stamps = [];
const stamp = (what) => stamps.push([what, Math.round(performance.now() * 10) / 10]);
stamp("preload");
const request = http.request;
http.request = function (...args) {
  const options = typeof args[0] === "object" ? args[0] : {};
  const path = String(options.path ?? "")
    .replace(/[0-9a-f]{64}/g, "ID")
    .replace(/\?.*/, "");
  const what = `${options.method ?? "GET"} ${path}`;
  stamp(`> ${what}`);
  const req = request.apply(this, args);
  req.on("response", () => stamp(`< ${what}`));
  req.on("upgrade", (_res, socket) => {
    stamp(`< ${what} (upgraded)`);
    let reads = 0;
    socket.on("data", () => {
      reads += 1;
      if (reads <= 3) stamp(`socket read ${reads}`);
    });
    const write = socket.write;
    let writes = 0;
    socket.write = function (...w) {
      writes += 1;
      if (writes <= 4) stamp(`socket write ${writes}`);
      return write.apply(this, w);
    };
  });
  return req;
};
process.on("exit", () => {
  stamp("exit");
  process.stderr.write(`START-PROFILE ${JSON.stringify(stamps)}\n`);
});
