/**
 * A running command's first lines, shown as they arrive instead of when it ends, so a long build or
 * test run is visibly alive. After `maxLines` lines nothing more is decoded: a 200 MB flood costs no
 * display work. Lines are emitted whole; a last line without a newline comes out at `finish`.
 */
import { StringDecoder } from "node:string_decoder";

type StreamName = "stdout" | "stderr";

export class LiveOutput {
  private readonly decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  private readonly partial = { stdout: "", stderr: "" };
  private shownLines = 0;
  /** True once output went past what is shown. */
  private cut = false;

  constructor(
    private readonly maxLines: number,
    private readonly emit: (stream: StreamName, line: string) => void,
  ) {}

  get shown(): number {
    return this.shownLines;
  }

  push(stream: StreamName, chunk: Buffer): void {
    if (this.shownLines >= this.maxLines) {
      if (chunk.length > 0) this.cut = true;
      return;
    }
    let text = this.partial[stream] + this.decoders[stream].write(chunk);
    let newline = text.indexOf("\n");
    while (newline >= 0 && this.shownLines < this.maxLines) {
      this.show(stream, text.slice(0, newline));
      text = text.slice(newline + 1);
      newline = text.indexOf("\n");
    }
    if (this.shownLines >= this.maxLines && text !== "") this.cut = true;
    // Bounded: a line longer than this is shown cut anyway.
    this.partial[stream] = this.shownLines < this.maxLines ? text.slice(0, 4096) : "";
  }

  /** Emits unfinished last lines; says whether output went past what was shown. */
  finish(): { more: boolean } {
    for (const stream of ["stdout", "stderr"] as const) {
      const rest = this.partial[stream] + this.decoders[stream].end();
      this.partial[stream] = "";
      if (rest === "") continue;
      if (this.shownLines < this.maxLines) this.show(stream, rest);
      else this.cut = true;
    }
    return { more: this.cut };
  }

  private show(stream: StreamName, line: string): void {
    this.shownLines += 1;
    this.emit(stream, line);
  }
}
