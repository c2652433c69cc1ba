/**
 * What a devcontainer Dockerfile would have the engine fetch on the host's network (round 4,
 * finding 2), read strictly: every spelling of a fetch this suite knows is refused with its line,
 * the images a build reads come out to be found on the engine, and ordinary Dockerfiles pass.
 */
import { describe, expect, it } from "vitest";
import {
  imagesNeeded,
  type NeededImage,
  quotedWords,
  triggerImagesNeeded,
} from "../../../src/sandbox/docker/devcontainer/dockerfile-fetches.js";
import { DockerfileRefusal } from "../../../src/sandbox/docker/devcontainer/dockerfile-syntax.js";

const URL = "http://127.0.0.1:9/exfil?data=x";

function needed(text: string, args: Record<string, string> = {}): NeededImage[] {
  return imagesNeeded(Buffer.from(text), args);
}

function refusal(text: string | Uint8Array, args: Record<string, string> = {}): DockerfileRefusal {
  try {
    imagesNeeded(typeof text === "string" ? Buffer.from(text) : text, args);
  } catch (error) {
    if (error instanceof DockerfileRefusal) return error;
    throw error;
  }
  throw new Error(`not refused:\n${String(text)}`);
}

const refs = (images: NeededImage[]) => images.map((i) => `${i.use} ${i.ref} @${i.line}`);

describe("a Dockerfile that names a fetch is refused, at its line", () => {
  const cases: [string, string, RegExp, number?][] = [
    [
      "ADD http://",
      `FROM base\nADD ${URL} /x\n`,
      /ADD http:\/\/127\.0\.0\.1:9\/exfil.*download it itself/,
      2,
    ],
    ["ADD https://", "FROM base\nADD https://127.0.0.1:9/x /x\n", /download it itself/, 2],
    ["ADD of a git URL (https)", "FROM base\nADD https://127.0.0.1:9/repo.git /src\n", /download/, 2],
    ["ADD git@", "FROM base\nADD git@127.0.0.1:repo.git /src\n", /download/, 2],
    ["ADD git://", "FROM base\nADD git://127.0.0.1/repo /src\n", /download/, 2],
    ["ADD github.com/ shorthand", "FROM base\nADD github.com/a/b /src\n", /download/, 2],
    ["ADD of a URL among local sources", "FROM base\nADD a.txt http://127.0.0.1:9/x /dst/\n", /download/, 2],
    ["odd casing", `FROM base\naDd ${URL} /x\n`, /download/, 2],
    ["upper-case scheme", "FROM base\nADD HTTP://127.0.0.1:9/x /x\n", /download/, 2],
    ["a line continuation", `FROM base\nADD \\\n  ${URL} \\\n  /x\n`, /download/, 2],
    [
      "a continuation with a comment inside",
      `FROM base\nRUN true\nADD \\\n# hi\n ${URL} /x\n`,
      /download/,
      3,
    ],
    ["JSON form", `FROM base\nADD ["${URL}", "/x"]\n`, /download/, 2],
    [
      "JSON form with an escaped scheme",
      'FROM base\nADD ["\\u0068ttp://127.0.0.1:9/x", "/x"]\n',
      /download/,
      2,
    ],
    ["JSON form with trailing text", `FROM base\nADD ["${URL}", "/x"] tail\n`, /not a JSON array/, 2],
    ["flags before the URL", `FROM base\nADD --chown=1000:1000 ${URL} /x\n`, /download/, 2],
    ["ADD --checksum", `FROM base\nADD --checksum=sha256:00 ${URL} /x\n`, /ADD --checksum/, 2],
    ["ARG $U", `ARG U=${URL}\nFROM base\nARG U\nADD $U /x\n`, /variable/, 4],
    [`ARG \${U}`, `FROM base\nARG U=${URL}\nADD \${U} /x\n`, /variable/, 3],
    ["ENV $U", `FROM base\nENV U=${URL}\nADD \${U:-/x} /x\n`, /variable/, 3],
    ["a build.args default", "FROM base\nARG U\nADD $U /x\n", /variable/, 3],
    ["quotes around the scheme", "FROM base\nADD 'http'://127.0.0.1:9/x /x\n", /quotes/, 2],
    ["an escaped scheme", "FROM base\nADD h\\ttp://127.0.0.1:9/x /x\n", /backslash/, 2],
    ["ONBUILD ADD in the Dockerfile", `FROM base\nONBUILD ADD ${URL} /x\n`, /download/, 2],
    ["ONBUILD with odd casing", `FROM base\nonBuild aDd ${URL} /x\n`, /download/, 2],
    [
      "RUN --mount=type=bind,from=",
      "FROM base\nRUN --mount=type=bind,from=127.0.0.1:9/img,target=/m true\n",
      /RUN takes no flags/,
      2,
    ],
    ["RUN --mount=type=cache", "FROM base\nRUN --mount=type=cache,target=/c true\n", /RUN --mount/, 2],
    [
      "RUN --mount=type=secret",
      "FROM base\nRUN --mount=type=secret,id=s cat /run/secrets/s\n",
      /RUN --mount/,
      2,
    ],
    ["RUN --mount=type=ssh", "FROM base\nRUN --mount=type=ssh true\n", /RUN --mount/, 2],
    ["RUN --network=host", "FROM base\nRUN --network=host curl 127.0.0.1:9\n", /RUN --network/, 2],
    ["RUN --security=insecure", "FROM base\nRUN --security=insecure true\n", /RUN --security/, 2],
    ["a flag the engine unquotes", 'FROM base\nRUN --"mount"=type=bind true\n', /quotes/, 2],
    ["a flag the engine unescapes", "FROM base\nRUN --mo\\unt=type=bind true\n", /backslash/, 2],
    ["RUN heredoc", "FROM base\nRUN <<EOF\nwget 127.0.0.1:9\nEOF\n", /heredoc/, 2],
    ["COPY heredoc", "FROM base\nCOPY <<EOF /x\nhi\nEOF\n", /heredoc/, 2],
    ["ADD heredoc", "FROM base\nADD <<-'EOF' /x\nhi\nEOF\n", /heredoc/, 2],
    ["# syntax= directive", "# syntax=127.0.0.1:9/frontend\nFROM base\n", /BuildKit pull a frontend/, 1],
    ["# SYNTAX = directive", "#  SYNTAX = docker/dockerfile:1\nFROM base\n", /frontend/, 1],
    [
      "# syntax= after another comment",
      "# hello\n\n# syntax=docker/dockerfile:1\nFROM base\n",
      /frontend/,
      3,
    ],
    ["# escape=`", "# escape=`\nFROM base\nRUN echo `\nADD x /y\n", /escape character/, 1],
    ["FROM --platform", "FROM --platform=linux/arm64 base\n", /FROM takes no flags/, 1],
    ["an unknown instruction", "FROM base\nFETCH http://x /y\n", /unknown instruction 'FETCH'/, 2],
    ["an instruction before FROM", `ADD ${URL} /x\nFROM base\n`, /only ARG may come before/, 1],
    ["no instruction at all", "# nothing\n", /no instructions/, 0],
    ["a FROM ARG with a quoted default", 'ARG B="a"b\nFROM $B\n', /not a plain value/, 2],
    ["a FROM ARG default with a variable", "ARG A=x\nARG B=$A\nFROM $B\n", /not a plain value/, 3],
    ["an unsupported substitution", `ARG B=x\nFROM \${B%x}\n`, /not a substitution/, 2],
    ["FROM $1", "FROM $1\n", /not a variable/, 1],
    ["FROM with quotes", 'FROM "base"\n', /quotes/, 1],
    ["FROM an empty ARG", "ARG B\nFROM $B\n", /names no image/, 2],
    ["COPY --from with a variable", "FROM base\nARG I=img\nCOPY --from=$I /a /b\n", /without variables/, 3],
    ["a non-breaking space", "FROM base\nADD\u00a0http://127.0.0.1:9/x /x\n", /space character/, 2],
    ["U+0085", "FROM base\nADD http://127.0.0.1:9/x\u0085/x\n", /space character/, 2],
    ["a flag with a non-ASCII byte", "FROM base\nCOPY --chown=x\u00e0--from=img a b\n", /outside ASCII/, 2],
  ];
  for (const [name, text, reason, line] of cases) {
    it(name, () => {
      const error = refusal(text);
      expect(error.reason).toMatch(reason);
      if (line !== undefined) expect(error.line).toBe(line);
    });
  }

  it("refuses a file that is not UTF-8", () => {
    expect(refusal(Buffer.from([0x46, 0x52, 0x4f, 0x4d, 0x20, 0xff, 0x0a])).reason).toMatch(/UTF-8/);
  });
});

describe("the images a build reads from the engine", () => {
  it("every FROM (variables worked out, build.args first) and COPY --from that is not a stage", () => {
    const text = [
      "# a comment",
      "ARG VARIANT=3.11",
      "ARG REG",
      'ARG QUOTED="plain"',
      `FROM mcr.microsoft.com/devcontainers/python:\${VARIANT} AS build`,
      "RUN pip install x",
      `FROM \${REG:-docker.io}/library/debian:$QUOTED`,
      "COPY --from=build /a /b",
      "COPY --from=0 /a /c",
      "COPY --from=other:1 /x /y",
      "FROM BUILD",
      "FROM scratch",
      "",
    ].join("\n");
    expect(refs(needed(text))).toEqual([
      "FROM mcr.microsoft.com/devcontainers/python:3.11 @5",
      "FROM docker.io/library/debian:plain @7",
      "COPY --from other:1 @10",
    ]);
    expect(refs(needed(text, { VARIANT: "3.12", REG: "127.0.0.1:9" }))).toEqual([
      "FROM mcr.microsoft.com/devcontainers/python:3.12 @5",
      "FROM 127.0.0.1:9/library/debian:plain @7",
      "COPY --from other:1 @10",
    ]);
  });

  it("a stage named later is an image here, as the engine reads it", () => {
    expect(refs(needed("FROM a\nCOPY --from=later /x /y\nFROM b AS later\n"))).toEqual([
      "FROM a @1",
      "COPY --from later @2",
      "FROM b @3",
    ]);
  });

  it(`\${X:+alt} and an ARG declared after FROM (not global) as the engine substitutes them`, () => {
    expect(refs(needed(`ARG X=1\nFROM img\${X:+-slim}\nARG Y=z\nFROM base$Y\n`))).toEqual([
      "FROM img-slim @2",
      "FROM base @4",
    ]);
  });

  it("passes an ordinary devcontainer Dockerfile", () => {
    const text = [
      "\ufeff# escape=\\",
      "ARG VARIANT=bookworm",
      `FROM debian:\${VARIANT}`,
      "ENV DEBIAN_FRONTEND=noninteractive",
      'LABEL org.opencontainers.image.authors="Jöhn <j@example.org>"',
      "RUN apt-get update \\",
      "  # comments inside a continuation are skipped",
      "  && apt-get install -y git \\",
      "",
      "  && rm -rf /var/lib/apt/lists/*",
      'RUN ["sh", "-c", "echo $((1<<2))"]',
      "COPY --chown=1000:1000 requirements.txt /tmp/",
      'ADD ["local.tar.gz", "/opt/"]',
      "ADD --chmod=755 script.sh /usr/local/bin/",
      "HEALTHCHECK --interval=30s CMD true",
      "USER 1000",
      "WORKDIR /workspace",
      'CMD ["sleep", "infinity"]',
    ].join("\r\n");
    expect(refs(needed(text))).toEqual(["FROM debian:bookworm @3"]);
  });
});

describe("a base image's ONBUILD triggers", () => {
  it("are checked as instructions of this build", () => {
    expect(() => triggerImagesNeeded(`ADD ${URL} /x`, 1, [])).toThrow(/download/);
    expect(() => triggerImagesNeeded("RUN --mount=type=cache,target=/c true", 1, [])).toThrow(/RUN --mount/);
    expect(() => triggerImagesNeeded("FROM x", 1, [])).toThrow(/cannot be FROM/);
    expect(triggerImagesNeeded("COPY --from=helper /a /b", 1, [])).toEqual([
      { ref: "helper", line: 1, use: "COPY --from" },
    ]);
    expect(triggerImagesNeeded("RUN make", 1, [])).toEqual([]);
  });
});

describe("quotedWords (the engine's parseWords)", () => {
  it("keeps quotes in, and spaces inside quotes", () => {
    expect(quotedWords("A=\"a b\" B='c d' C=e\\ f D")).toEqual(['A="a b"', "B='c d'", "C=e\\ f", "D"]);
  });
});
