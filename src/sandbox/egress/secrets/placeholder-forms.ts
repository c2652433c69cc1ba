/**
 * The spellings of a placeholder the gateway looks for in a request to a host it does not belong to:
 * as is, percent-encoded (the caller decodes), hex, and base64 at each of the three alignments a
 * longer encoded text can put it at (standard and URL-safe alphabets). `Authorization: Basic` is
 * base64 of `user:PLACEHOLDER`, so it is one of these.
 */

/** Every form, lower-cased where the encoding is case-free (hex); base64 kept as is. */
export function placeholderForms(placeholder: string): string[] {
  const bytes = Buffer.from(placeholder, "utf8");
  const forms = new Set<string>([placeholder, bytes.toString("hex")]);
  for (let lead = 0; lead < 3; lead += 1) {
    const encoded = Buffer.concat([Buffer.alloc(lead), bytes]).toString("base64");
    // The first group mixes the lead bytes in; the last may mix in whatever follows.
    const start = lead === 0 ? 0 : 4;
    const end = Math.floor((lead + bytes.length) / 3) * 4;
    const core = encoded.slice(start, end);
    forms.add(core);
    forms.add(core.replaceAll("+", "-").replaceAll("/", "_"));
  }
  return [...forms];
}

/** Percent-decoding that never throws: invalid sequences stay as they are. */
export function percentDecoded(text: string): string {
  return text.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}
