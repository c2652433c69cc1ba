/**
 * The command's side of an exec's attach stream: frames split into stdout and stderr, the wrapper's
 * start line taken off the front of stdout and its end markers off the end of both streams, and the
 * rest kept (head and tail) and handed to the caller's `onOutput`, whose pending promises pause the
 * stream (`OutputFlow`). Neither the start line nor a marker reaches the caller as output.
 */
import type { StreamName } from "../../exec/exec-types.js";
import { OutputBuffer } from "../../exec/output-buffer.js";
import { deliverChunk, OutputFlow } from "../../exec/output-flow.js";
import { Demuxer } from "../exec/demux.js";
import { EndMarkerScanner } from "./end-marker.js";
import { StartLineReader } from "./start-line.js";
import { MARKER_LEAD, START_LEAD } from "./wrapper-script.js";

export interface AttachStreamOutputOptions {
  headBytes: number;
  tailBytes: number;
  /** As `ExecOptions.onOutput`: a returned promise pauses reading until it settles. */
  onOutput?: ((stream: StreamName, chunk: Buffer) => void | Promise<void>) | undefined;
}

export class AttachStreamOutput {
  readonly stdout: OutputBuffer;
  readonly stderr: OutputBuffer;
  readonly flow = new OutputFlow();
  /** The wrapper's pid and start time, for the kill. */
  readonly startLine: StartLineReader;
  private readonly markers: Record<StreamName, EndMarkerScanner>;
  private readonly demuxer: Demuxer;

  constructor(nonce: string, options: AttachStreamOutputOptions) {
    this.stdout = new OutputBuffer(options.headBytes, options.tailBytes);
    this.stderr = new OutputBuffer(options.headBytes, options.tailBytes);
    const forward = (name: StreamName) => (chunk: Buffer) => this.forward(name, chunk, options.onOutput);
    this.markers = {
      stdout: new EndMarkerScanner(`${MARKER_LEAD}${nonce}:`, forward("stdout")),
      stderr: new EndMarkerScanner(`${MARKER_LEAD}${nonce}`, forward("stderr")),
    };
    this.startLine = new StartLineReader(START_LEAD, nonce, (chunk) => this.markers.stdout.push(chunk));
    this.demuxer = new Demuxer((name, payload) =>
      name === "stdout" ? this.startLine.push(payload) : this.markers.stderr.push(payload),
    );
  }

  /** A chunk of the raw attach stream. */
  push(chunk: Buffer): void {
    this.demuxer.push(chunk);
  }

  /** Both marker lines arrived: the wrapper reported, and the command's output is complete. */
  get markersFound(): boolean {
    return this.markers.stdout.found && this.markers.stderr.found;
  }

  /** The stdout marker's payload ("rc:oom:cwd"), once it arrived; undefined if the wrapper never said. */
  get endReport(): string | undefined {
    return this.markers.stdout.payload;
  }

  /** End of stream: bytes held back (what looked like the start of a start line or a marker) were output. */
  flush(): void {
    this.startLine.flush();
    this.markers.stdout.flush();
    this.markers.stderr.flush();
  }

  private forward(name: StreamName, chunk: Buffer, onOutput: AttachStreamOutputOptions["onOutput"]): void {
    deliverChunk(this.flow, this[name], name, chunk, onOutput);
  }
}
