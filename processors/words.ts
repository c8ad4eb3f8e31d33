/** Lower-cased words of a line; punctuation and whitespace separate words. */
export function splitWords(line: string | null): string[] {
  if (line === null) return [];
  return line.toLowerCase().split(/[^\p{L}\p{N}']+/u).filter((w) => w.length > 0);
}
