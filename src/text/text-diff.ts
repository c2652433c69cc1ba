/**
 * A small line-based unified diff (Myers' O(ND) algorithm, after trimming the common head and tail),
 * for showing what the sandbox changed before it is applied. Meant for modest files: past
 * `maxEdits` differing lines it says the change is too large to diff instead of burning memory.
 */

export interface TextDiffOptions {
  /** Unchanged lines shown around each change. Default 3. */
  context?: number;
  /** Give up (return undefined) when more than this many lines were inserted plus deleted. Default 2000. */
  maxEdits?: number;
}

type Op = { kind: " " | "-" | "+"; line: string };

/** Lines with their terminator kept, so a missing final newline is a difference like any other. */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** The edit script turning a into b, or undefined when it needs more than maxEdits edits. */
function myers(a: string[], b: string[], maxEdits: number): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, offset, d, k);
    }
  }
  return undefined;
}

function backtrack(
  a: string[],
  b: string[],
  trace: Int32Array[],
  offset: number,
  d: number,
  k: number,
): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let step = d; step > 0; step--) {
    const v = trace[step] as Int32Array;
    const down = k === -step || (k !== step && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK] ?? 0;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      y--;
      ops.push({ kind: " ", line: a[--x] ?? "" });
    }
    if (down) ops.push({ kind: "+", line: b[--y] ?? "" });
    else ops.push({ kind: "-", line: a[--x] ?? "" });
    k = prevK;
  }
  while (x > 0 && y > 0) {
    y--;
    ops.push({ kind: " ", line: a[--x] ?? "" });
  }
  return ops.reverse();
}

function range(start: number, count: number): string {
  // GNU diff: an empty range names the line before it; a one-line range has no count.
  if (count === 0) return `${start - 1},0`;
  return count === 1 ? `${start}` : `${start},${count}`;
}

function formatLine(op: Op): string {
  const body = op.line.endsWith("\n") ? op.line : `${op.line}\n\\ No newline at end of file\n`;
  return `${op.kind}${body}`;
}

/** Hunks (`@@ -a,b +c,d @@` and lines) for the ops, with `context` lines around each change. */
function hunks(ops: Op[], context: number, headA: number, headB: number): string {
  let out = "";
  let i = 0;
  while (i < ops.length) {
    while (i < ops.length && ops[i]?.kind === " ") i++;
    if (i >= ops.length) break;
    const start = Math.max(0, i - context);
    let end = i;
    // Extend while the next change is within 2 * context unchanged lines.
    for (let j = i; j < ops.length; j++) {
      if (ops[j]?.kind !== " ") end = j;
      else if (j - end > 2 * context) break;
    }
    const stop = Math.min(ops.length, end + context + 1);
    let lineA = headA + 1;
    let lineB = headB + 1;
    for (let j = 0; j < start; j++) {
      if (ops[j]?.kind !== "+") lineA++;
      if (ops[j]?.kind !== "-") lineB++;
    }
    const slice = ops.slice(start, stop);
    const countA = slice.filter((o) => o.kind !== "+").length;
    const countB = slice.filter((o) => o.kind !== "-").length;
    out += `@@ -${range(lineA, countA)} +${range(lineB, countB)} @@\n${slice.map(formatLine).join("")}`;
    i = stop;
  }
  return out;
}

/**
 * A unified diff of two texts ("" when equal), or undefined when they differ in more than
 * `maxEdits` lines. Names go into the `---`/`+++` header as given (e.g. "a/x", "/dev/null").
 */
export function unifiedDiff(
  before: string,
  after: string,
  names: { before: string; after: string },
  options: TextDiffOptions = {},
): string | undefined {
  if (before === after) return "";
  const a = splitLines(before);
  const b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const context = options.context ?? 3;
  const middle = myers(
    a.slice(head, a.length - tail),
    b.slice(head, b.length - tail),
    options.maxEdits ?? 2000,
  );
  if (!middle) return undefined;
  const lead = a.slice(Math.max(0, head - context), head).map((line): Op => ({ kind: " ", line }));
  const trail = a.slice(a.length - tail, a.length - tail + context).map((line): Op => ({ kind: " ", line }));
  const shown = Math.max(0, head - context);
  return `--- ${names.before}\n+++ ${names.after}\n${hunks([...lead, ...middle, ...trail], context, shown, shown)}`;
}
