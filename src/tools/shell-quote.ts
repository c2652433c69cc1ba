/** One shell word for any string: single-quoted, with its own single quotes spelled `'\''`. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
