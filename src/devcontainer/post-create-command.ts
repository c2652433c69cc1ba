/**
 * devcontainer.json's `postCreateCommand` as one shell command line: a string runs in a shell as it
 * is; an array is an argv (each part quoted); an object's values (strings or arrays) run one after
 * the other, in the order written, each after the last succeeded (the spec runs them in parallel).
 */

export type PostCreateParse = { ok: true; command: string | undefined } | { ok: false; reason: string };

export function postCreateCommandLine(value: unknown): PostCreateParse {
  if (value === undefined || value === null) return { ok: true, command: undefined };
  if (typeof value === "string") return { ok: true, command: value.trim() === "" ? undefined : value };
  if (Array.isArray(value)) return argvLine(value);
  if (typeof value === "object") {
    const parts: string[] = [];
    for (const [name, item] of Object.entries(value)) {
      const part = typeof item === "string" ? { ok: true as const, command: item } : argvLine(item);
      if (!part.ok) return { ok: false, reason: `'${name}': ${part.reason}` };
      if (part.command !== undefined && part.command.trim() !== "") parts.push(`(${part.command}\n)`);
    }
    return { ok: true, command: parts.length === 0 ? undefined : parts.join(" && ") };
  }
  return { ok: false, reason: "must be a string, an array of strings or an object of them" };
}

function argvLine(value: unknown): PostCreateParse {
  if (!Array.isArray(value) || value.some((part) => typeof part !== "string")) {
    return { ok: false, reason: "must be a string, an array of strings or an object of them" };
  }
  if (value.length === 0) return { ok: true, command: undefined };
  return { ok: true, command: (value as string[]).map(shellQuote).join(" ") };
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}
