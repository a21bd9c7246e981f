/**
 * Display safety: model-written text (commands, code, answers, tool output) is shown with every
 * control, bidi and invisible format character written out, so it can never rewrite or hide what a
 * person reads: C0/C1 controls and DEL as `\xNN` (ESC is `\x1b`), the others as `<U+XXXX>`; tabs
 * and newlines stay, CRLF shows as a newline and a lone CR as `\x0d`.
 * The same rule as server/protocol/display.py, tested against docs/schema/display-safety.json.
 */

/** Code points never shown raw (besides a CR that does not end a line). */
export const HIDDEN_RANGES: readonly (readonly [number, number])[] = [
  [0x0000, 0x0008],
  [0x000b, 0x000c],
  [0x000e, 0x001f],
  [0x007f, 0x009f],
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x061c, 0x061c],
  [0x115f, 0x1160],
  [0x17b4, 0x17b5],
  [0x180e, 0x180e],
  [0x200b, 0x200f],
  [0x2028, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x206f],
  [0x3164, 0x3164],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
  [0xfff9, 0xfffb],
  [0x1d173, 0x1d17a],
  [0xe0000, 0xe007f],
];

const hex = (code: number, width: number): string => code.toString(16).padStart(width, '0');
const charClass = HIDDEN_RANGES.map(([low, high]) =>
  low === high ? `\\u{${hex(low, 4)}}` : `\\u{${hex(low, 4)}}-\\u{${hex(high, 4)}}`,
).join('');
const HIDDEN = new RegExp(`\\r(?!\\n)|[${charClass}]`, 'gu');

function escapeOne(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return code <= 0x9f ? `\\x${hex(code, 2)}` : `<U+${hex(code, 4).toUpperCase()}>`;
}

/** `text` with every hidden or control character shown visibly. */
export function visible(text: string): string {
  return text.replace(HIDDEN, escapeOne).split('\r\n').join('\n');
}

/** The hidden characters in `text`, each once, in order, as `visible` shows them. */
export function hiddenCharacters(text: string): string[] {
  const seen = new Set<string>();
  for (const match of text.matchAll(HIDDEN)) seen.add(escapeOne(match[0]));
  return [...seen];
}

/** A sentence for an approval prompt when `text` hides characters, else undefined. */
export function hiddenWarning(text: string): string | undefined {
  const found = hiddenCharacters(text);
  if (found.length === 0) return undefined;
  const shown = found.slice(0, 8).join(', ') + (found.length > 8 ? ', ...' : '');
  return `Warning: this contains hidden or control characters (${shown}); they are shown as escapes. Read it carefully.`;
}
