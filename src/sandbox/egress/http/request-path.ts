/**
 * The path of a request target as `--allow-request` judges it. Servers resolve a path in their own
 * ways (the WHATWG URL parser drops an empty segment before `..`, Python's `posixpath.normpath`
 * drops the segment before it; some decode `%2F`, `%5C` or `%252e` twice, split `;params`, read a
 * backslash as a slash, fold full-width dots or overlong UTF-8), so a path is judged only when no
 * reading can take it elsewhere: then the very text judged is what goes to the origin. Anything else
 * is refused, never rewritten: the client learns its request was not sent.
 *
 * Judged: starts with one `/`; printable ASCII only; no empty segment but a trailing one; no
 * fragment; `%` always followed by two hex digits; no segment that is, or decodes or normalizes
 * (NFKC) to, `.` or `..`; no decoded `/`, `\`, `;`, `%` or control character; decoded bytes that are
 * UTF-8. The query is the server's to read, not a path: only its bytes are checked.
 */
export type PathReading = { ok: true; path: string } | { ok: false; reason: string };

/** The path of `target` (origin-form: path and query) when every server reads it alike. */
export function judgedPath(target: string): PathReading {
  if (/[^\x21-\x7e]/.test(target)) return refuse("a byte that is not printable ASCII");
  if (target.includes("#")) return refuse("a fragment (#)");
  const query = target.indexOf("?");
  const path = query < 0 ? target : target.slice(0, query);
  if (!path.startsWith("/") || path.startsWith("//")) return refuse("a path that does not start with one /");
  if (/%(?![0-9a-fA-F]{2})/.test(path)) return refuse("a % that is not an escape");
  if (path.includes(";")) return refuse("a ;parameter");
  if (path.includes("\\")) return refuse("a backslash");
  const segments = path.slice(1).split("/");
  for (const [index, segment] of segments.entries()) {
    if (segment === "" && index < segments.length - 1) return refuse("an empty segment (//)");
    const problem = segmentProblem(segment);
    if (problem !== undefined) return refuse(problem);
  }
  return { ok: true, path };
}

function segmentProblem(segment: string): string | undefined {
  const bytes = Buffer.from(
    segment.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    "latin1",
  );
  if (bytes.some((b) => b < 0x20 || b === 0x7f)) return "an escaped control character";
  const decoded = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  let text: string;
  try {
    text = decoded.decode(bytes);
  } catch {
    return "escaped bytes that are not UTF-8";
  }
  for (const reading of [text, text.normalize("NFKC")]) {
    if (reading === "." || reading === "..") return "a dot segment (. or .., however spelled)";
    if (/[/\\;%]/.test(reading)) return "an escaped or look-alike /, \\, ; or %";
  }
  return undefined;
}

function refuse(what: string): PathReading {
  return { ok: false, reason: `its path holds ${what}` };
}
