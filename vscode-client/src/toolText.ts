/**
 * How a tool call's arguments read to a person: the code or command itself, else pretty JSON,
 * always through the display rule (hidden characters written out, with a warning).
 */
import { hiddenWarning, visible } from './display';

const CODE_FIELDS: Readonly<Record<string, { field: string; label: string }>> = {
  python: { field: 'code', label: 'Python code' },
  terminal: { field: 'command', label: 'Command' },
  apply_patch: { field: 'patch', label: 'Patch' },
};
/** The edit tools that name one file: the card shows the file; what changes is shown as a diff. */
const FILE_TOOLS: readonly string[] = ['edit_file', 'write_file'];

export interface ToolText {
  /** "Python code", "Command" or "Arguments". */
  label: string;
  /** The full text, never shortened, hidden characters written out. */
  text: string;
  /** Set when the raw text hides characters: say so next to it. */
  warning?: string;
}

function shown(label: string, raw: string): ToolText {
  const warning = hiddenWarning(raw);
  return warning === undefined ? { label, text: visible(raw) } : { label, text: visible(raw), warning };
}

export function toolText(name: string, args: unknown): ToolText {
  const path = typeof args === 'object' && args !== null ? (args as Record<string, unknown>).path : undefined;
  if (FILE_TOOLS.includes(name) && typeof path === 'string') return shown('File', path);
  const known = CODE_FIELDS[name];
  if (known !== undefined && typeof args === 'object' && args !== null) {
    const value = (args as Record<string, unknown>)[known.field];
    const others = Object.keys(args).filter((k) => k !== known.field);
    if (typeof value === 'string' && others.length === 0) return shown(known.label, value);
  }
  let text: string;
  try {
    text = JSON.stringify(args ?? {}, null, 2) ?? String(args);
  } catch {
    text = String(args);
  }
  return shown('Arguments', text);
}

/** An isolation level and the network state in words, e.g. "strong · network off". */
export function isolationText(sandbox: { level: string; network: boolean }): string {
  return `${sandbox.level} · network ${sandbox.network ? 'on' : 'off'}`;
}
