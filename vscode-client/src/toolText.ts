/** How a tool call's arguments read to a person: the code or command itself, else pretty JSON. */

const CODE_FIELDS: Readonly<Record<string, { field: string; label: string }>> = {
  python: { field: 'code', label: 'Python code' },
  terminal: { field: 'command', label: 'Command' },
};

export interface ToolText {
  /** "Python code", "Command" or "Arguments". */
  label: string;
  /** The full text, never shortened. */
  text: string;
}

export function toolText(name: string, args: unknown): ToolText {
  const known = CODE_FIELDS[name];
  if (known !== undefined && typeof args === 'object' && args !== null) {
    const value = (args as Record<string, unknown>)[known.field];
    const others = Object.keys(args).filter((k) => k !== known.field);
    if (typeof value === 'string' && others.length === 0) return { label: known.label, text: value };
  }
  let text: string;
  try {
    text = JSON.stringify(args ?? {}, null, 2) ?? String(args);
  } catch {
    text = String(args);
  }
  return { label: 'Arguments', text };
}

/** An isolation level and the network state in words, e.g. "strong · network off". */
export function isolationText(sandbox: { level: string; network: boolean }): string {
  return `${sandbox.level} · network ${sandbox.network ? 'on' : 'off'}`;
}
