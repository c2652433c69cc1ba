import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/errors.js";
import { transcriptRows, tryTranscriptRow } from "../../../src/transcript/transcript-rows.js";

class OwnError extends ConfigError {}

describe("transcriptRows", () => {
  it("numbers lines as the file does, blank ones included", () => {
    const rows = [...transcriptRows('{"type":"a"}\n\n{"type":"b"}\n')];
    expect(rows.map(({ row, line }) => `${line}:${row.type}`)).toEqual(["1:a", "3:b"]);
  });

  it("names the first line that is not a record, in the caller's error class", () => {
    const read = (text: string) => () => [...transcriptRows(text, (m) => new OwnError(m))];
    expect(read('{"type":"a"}\n[1]\n')).toThrow(new OwnError("line 2: a record must be a JSON object"));
    expect(read('{"type":"a"}\n{"x":1}\n')).toThrow(/line 2: a record needs a string "type"/);
    expect(read('{"type":"a"}\n{"type":')).toThrow(/line 2: not valid JSON .*ends mid-record/);
    expect(read('{"type":"a"}\n{"type":')).toThrow(OwnError);
  });

  it("reads no further than the caller takes", () => {
    const rows = transcriptRows('{"type":"a"}\nnot json\n');
    expect(rows.next().value?.row.type).toBe("a");
  });
});

describe("tryTranscriptRow", () => {
  it("gives undefined for what is not a record", () => {
    expect(tryTranscriptRow('{"type":"run_end","x":1}')?.["x"]).toBe(1);
    for (const raw of ["", "null", "[]", '{"type":3}', "{"]) expect(tryTranscriptRow(raw)).toBeUndefined();
  });
});
