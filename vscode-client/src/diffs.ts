/**
 * Unified diffs as the server sends them (`toolConfirm.edits[].diff`, `tool_end.edits[].diff`):
 * rows with line numbers for the approval card, and the proposal itself (the diff applied to the
 * file's current text) for VS Code's diff editor. Pure functions: unit-tested without VS Code.
 */

export type DiffRowKind = 'header' | 'hunk' | 'context' | 'add' | 'del' | 'note';

export interface DiffRow {
  kind: DiffRowKind;
  /** The line's number in the file before (context and removed lines). */
  oldLine?: number;
  /** The line's number in the file after (context and added lines). */
  newLine?: number;
  /** The line without its +/-/space prefix (headers and notes as they are). */
  text: string;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function lines(diff: string): string[] {
  const all = diff.split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all;
}

/** Every line of a diff as a row to show, numbered. */
export function diffRows(diff: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let oldLine = 0;
  let newLine = 0;
  let inHunk = false;
  for (const line of lines(diff)) {
    const hunk = HUNK.exec(line);
    if (hunk !== null) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[3]);
      if (hunk[2] === '0') oldLine += 1;
      if (hunk[4] === '0') newLine += 1;
      inHunk = true;
      rows.push({ kind: 'hunk', text: line });
    } else if (!inHunk || line.startsWith('--- ') || line.startsWith('+++ ')) {
      inHunk = false;
      rows.push({ kind: 'header', text: line });
    } else if (line.startsWith('+')) {
      rows.push({ kind: 'add', newLine: newLine++, text: line.slice(1) });
    } else if (line.startsWith('-')) {
      rows.push({ kind: 'del', oldLine: oldLine++, text: line.slice(1) });
    } else if (line.startsWith('\\')) {
      rows.push({ kind: 'note', text: line });
    } else {
      rows.push({ kind: 'context', oldLine: oldLine++, newLine: newLine++, text: line.slice(1) });
    }
  }
  return rows;
}

/** Lines added and removed. */
export function diffCounts(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const row of diffRows(diff)) {
    if (row.kind === 'add') added++;
    else if (row.kind === 'del') removed++;
  }
  return { added, removed };
}

interface Hunk {
  oldStart: number;
  oldCount: number;
  old: string[];
  neu: Array<{ text: string; context: boolean }>;
  newNoNewline: boolean;
}

function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  let previous = '';
  for (const line of lines(diff)) {
    const header = HUNK.exec(line);
    if (header !== null) {
      current = { oldStart: Number(header[1]), oldCount: Number(header[2] ?? '1'), old: [], neu: [], newNoNewline: false };
      hunks.push(current);
    } else if (current !== undefined) {
      const kind = line[0];
      if (kind === '\\') {
        if (previous === '+' || previous === ' ') current.newNoNewline = true;
      } else if (kind === ' ' || kind === '-' || kind === '+') {
        if (kind !== '+') current.old.push(line.slice(1));
        if (kind !== '-') {
          current.neu.push({ text: line.slice(1), context: kind === ' ' });
          current.newNoNewline = false;
        }
      } else {
        current = undefined; // a header: the next file (not expected in one file's diff)
      }
      previous = kind ?? '';
    }
  }
  return hunks;
}

/**
 * The text a diff makes of `oldText` (its line ends as `\n`). The diff must fit exactly, as the
 * server's diffs of the file as it is do; otherwise this throws.
 */
export function applyDiff(oldText: string, diff: string): string {
  const source = oldText.split('\n');
  const eol = oldText === '' || oldText.endsWith('\n');
  if (eol) source.pop();
  const out: string[] = [];
  let position = 0;
  let newEol = eol;
  for (const hunk of parseHunks(diff)) {
    const at = hunk.old.length > 0 ? hunk.oldStart - 1 : hunk.oldStart;
    if (at < position || at + hunk.old.length > source.length) throw new Error(`the diff does not fit the file (at line ${at + 1})`);
    hunk.old.forEach((line, k) => {
      if (source[at + k] !== line) throw new Error(`the diff does not fit the file (line ${at + k + 1} differs)`);
    });
    out.push(...source.slice(position, at), ...hunk.neu.map((line) => line.text));
    position = at + hunk.old.length;
    if (position === source.length) newEol = hunk.neu.length === 0 ? true : !hunk.newNoNewline;
  }
  out.push(...source.slice(position));
  if (out.length === 0) return '';
  return out.join('\n') + (newEol ? '\n' : '');
}
