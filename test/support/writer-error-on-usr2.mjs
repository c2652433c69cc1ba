// Loaded into the built CLI with NODE_OPTIONS=--import (session-end-fixture.ts): on SIGUSR2 a writer
// fails and nobody listens for its 'error', so Node raises it as an uncaught exception, as a bug in
// any of harness's writers would. With HARNESS_TEST_REJECT set, an unhandled rejection instead.
import { Writable } from "node:stream";

process.on("SIGUSR2", () => {
  if (process.env.HARNESS_TEST_REJECT) {
    void Promise.reject(new Error("injected: a writer's promise rejected with no one waiting"));
    return;
  }
  const writer = new Writable({
    write(_chunk, _encoding, done) {
      done(new Error("injected: a writer failed with no one listening"));
    },
  });
  writer.write("x");
});
