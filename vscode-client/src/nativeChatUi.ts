/**
 * Gatehouse in VS Code's own Chat view (`@gatehouse`), the pure part: a `ChatUi` that writes a
 * turn into a chat response stream (model text as markdown, tool calls as progress and then
 * their output), and the approvals asked there. Approvals stay Gatehouse's: the card is written
 * into the response with buttons that run `gatehouse.answerApproval` with the approval id —
 * never VS Code's tool-confirmation card, which "Allow all" or a workspace setting can skip
 * without telling the extension. Deny is the first button; every doubt is a denial.
 * Unit-tested without VS Code (src/nativeChat.ts is the VS Code side).
 */
import { toResult, type ApprovalOutcome, type ApprovalView, type CancellationLike, type EditView } from './approvals';
import type { ChatUi, ToolEndView, ToolStartView } from './chatSession';
import type { ToolConfirmResult, UserEdit } from './protocol';
import { outcomeNote } from './transcript';

export const ANSWER_COMMAND = 'gatehouse.answerApproval';
export const STOP_COMMAND = 'gatehouse.stop';
/** An edit's "Open diff" button: VS Code's diff editor on one file's proposal. */
export const OPEN_DIFF_COMMAND = 'gatehouse.openProposalDiff';
/** The answer of the "Deny with a message…" button (the command then asks for the message). */
export const DENY_WITH_MESSAGE = 'deny_with_message';
/** Tool output longer than this is cut in the Chat view (the Gatehouse view shows all of it). */
export const OUTPUT_LIMIT = 20_000;

/** What a chat response can show: a subset of vscode.ChatResponseStream. */
export interface NativeStream {
  /** Untrusted markdown: no HTML, no command links. */
  markdown(text: string): void;
  progress(text: string): void;
  button(title: string, command: string, args: unknown[]): void;
}

/** Backslash-escapes markdown syntax in text we did not write (names, paths, reasons). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~&:]/g, '\\$&');
}

/** `text` in a fenced block no line of it can close (the fence is longer than any run of backticks). */
export function fenced(text: string, language = ''): string {
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${language}\n${text}${text.endsWith('\n') ? '' : '\n'}${fence}\n`;
}

/** The fence that closes a code block `markdown` leaves open, else ''. */
export function openFence(markdown: string): string {
  let open: string | undefined;
  for (const line of markdown.split('\n')) {
    const match = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (match === null) continue;
    const marker = match[1] as string;
    if (open === undefined) open = marker;
    else if (marker[0] === open[0] && marker.length >= open.length && (match[2] ?? '').trim() === '') open = undefined;
  }
  return open ?? '';
}

/** An edit's approval: each file with its counts, then the whole diff (nothing runs: no isolation). */
function editMarkdown(view: ApprovalView, edits: EditView[]): string {
  const what = edits.length === 1 ? (edits[0]?.shownPath ?? '1 file') : `${edits.length} files`;
  const parts = [
    `**Gatehouse: allow \`${view.tool.replace(/`/g, "'")}\` to change ${escapeMarkdown(what)}?**`,
    '',
    ...(view.hiddenWarning === undefined ? [] : [`> **${escapeMarkdown(view.hiddenWarning)}**`, '']),
    ...edits.map((e) => `- **${escapeMarkdown(e.shownPath)}** · ${escapeMarkdown(e.action)} · +${e.added} \u2212${e.removed}${e.protected === undefined ? '' : ` · **Protected:** ${escapeMarkdown(e.protected)}`}`),
    '',
    `${escapeMarkdown(view.codeLabel)} (the whole diff):`,
    '',
    fenced(view.code, 'diff'),
    `- **Working folder:** ${escapeMarkdown(view.folder)}`,
    `- **Why you are asked:** ${escapeMarkdown(view.reason)}`,
    '',
    'Nothing is written until you answer: **Accept** writes the proposal (or your version of it, from **Open diff**). **Deny** is the default; Stop ends the turn.',
    '',
  ];
  return parts.join('\n');
}

/** The approval as the Chat view shows it: everything the webview card shows. */
export function approvalMarkdown(view: ApprovalView): string {
  if (view.edits !== undefined) return editMarkdown(view, view.edits);
  const lines = view.code.split('\n').length;
  const parts = [
    `**Gatehouse: allow \`${view.tool.replace(/`/g, "'")}\` to run?**`,
    '',
    ...(view.hiddenWarning === undefined ? [] : [`> **${escapeMarkdown(view.hiddenWarning)}**`, '']),
    `${escapeMarkdown(view.codeLabel)} (${lines}${lines === 1 ? ' line' : ' lines'}, shown in full):`,
    '',
    fenced(view.code, view.codeLabel === 'Python code' ? 'python' : view.codeLabel === 'Command' ? 'sh' : 'json'),
    `- **Working folder:** ${escapeMarkdown(view.folder)}`,
    `- **Why you are asked:** ${escapeMarkdown(view.reason)}`,
    ...(view.unclear === undefined ? [] : [`- **Rules cannot allow it:** it ${escapeMarkdown(view.unclear.join('; it '))}`]),
    `- **Isolation:** ${escapeMarkdown(view.isolation)}${view.weakIsolation ? ' — **below strong isolation or with the network on**' : ''}`,
    '',
    'Nothing runs until you answer. **Deny** is the default; Stop ends the turn.',
    '',
  ];
  return parts.join('\n');
}

/**
 * The approval's buttons, as [title, command, arguments]: the server's choices in their order
 * (Deny first: it is the default of every prompt), "Deny with a message…" right after Deny, then
 * Stop. An edit's "allow once" is Accept, and each file has an "Open diff" button after them.
 */
export function approvalButtons(view: ApprovalView, stopArgs: unknown[]): Array<[string, string, unknown[]]> {
  const buttons: Array<[string, string, unknown[]]> = [];
  const edits = view.edits;
  for (const choice of view.choices) {
    const title = edits !== undefined && choice.kind === 'allow_once' ? 'Accept' : choice.label;
    buttons.push([title, ANSWER_COMMAND, [view.approvalId, choice.id]]);
    if (choice.kind === 'deny') buttons.push(['Deny with a message…', ANSWER_COMMAND, [view.approvalId, DENY_WITH_MESSAGE]]);
  }
  for (const edit of edits ?? []) {
    buttons.push([edits?.length === 1 ? 'Open diff' : `Open diff: ${edit.shownPath}`, OPEN_DIFF_COMMAND, [view.approvalId, edit.path]]);
  }
  buttons.push(['Stop', STOP_COMMAND, stopArgs]);
  return buttons;
}

export class NativeChatUi implements ChatUi {
  private running = false;
  private thinking = false;
  /** Model text since our own last block: to close a code fence it left open. */
  private modelText = '';
  /** A trailing "!" held back, so "![" split across deltas is still caught. */
  private held = '';
  private readonly tools = new Map<string, { start: ToolStartView; output: string }>();

  constructor(private readonly stream: NativeStream) {}

  setRunning(running: boolean): void {
    this.running = running;
  }
  addUserMessage(): void {
    // VS Code shows the prompt itself.
  }
  beginTurn(): void {
    this.modelText = '';
  }
  appendContent(text: string): void {
    // Images are never loaded (a model could leak data in an image URL): "![" is shown as text.
    let chunk = this.held + text;
    this.held = '';
    if (chunk.endsWith('!')) {
      this.held = '!';
      chunk = chunk.slice(0, -1);
    }
    if (chunk === '') return;
    const safe = chunk.replace(/!\[/g, '!\\[');
    this.modelText += safe;
    this.stream.markdown(safe);
  }
  appendReasoning(): void {
    if (!this.thinking) this.stream.progress('Reasoning…');
    this.thinking = true;
  }
  previewToolArgs(): void {
    // The call shows when it starts.
  }
  startTool(tool: ToolStartView): void {
    this.tools.set(tool.id, { start: tool, output: '' });
    this.own('');
    this.stream.progress(tool.awaitingConfirmation ? `${tool.name}: waiting for your approval` : `Running ${tool.name}…`);
  }
  appendToolOutput(id: string, text: string): void {
    const tool = this.tools.get(id);
    if (tool !== undefined) tool.output += text;
  }
  endTool(end: ToolEndView): void {
    const tool = this.tools.get(end.id);
    const name = tool?.start.name ?? 'tool';
    let output = tool !== undefined && tool.output !== '' ? tool.output : end.result;
    let cut = '';
    if (output.length > OUTPUT_LIMIT) {
      cut = `\n_${output.length - OUTPUT_LIMIT} more characters are not shown here; the Gatehouse view has all of it._\n`;
      output = output.slice(0, OUTPUT_LIMIT);
    }
    const facts = [end.status.replace(/_/g, ' ')];
    if (end.exitCode !== null) facts.push(`exit code ${end.exitCode}`);
    if (end.isolation !== undefined) facts.push(`ran under ${end.isolation}`);
    let text = `\n**${escapeMarkdown(name)}** · ${escapeMarkdown(facts.join(' · '))}\n\n`;
    if (tool !== undefined) text += fenced(tool.start.args);
    if (output !== '') text += `\nOutput:\n\n${fenced(output)}${cut}`;
    for (const line of end.protected ?? []) text += `\n- Protected path: ${escapeMarkdown(line)}`;
    for (const line of end.edits ?? []) text += `\n- Changed ${escapeMarkdown(line)}`;
    // A blank line after a list, so the model's next words do not continue its last item.
    if ((end.protected?.length ?? 0) + (end.edits?.length ?? 0) > 0) text += '\n';
    this.own(`${text}\n`);
  }
  setStatus(text: string): void {
    if (this.running && text !== '') this.stream.progress(text);
  }
  showError(text: string): void {
    if (text !== '') this.own(`\n**Error:** ${escapeMarkdown(text)}\n`);
  }
  endTurn(note: string): void {
    this.flushHeld();
    if (note !== '') this.own(`\n\n_${escapeMarkdown(note)}_\n`);
  }
  clear(): void {
    // A chat response is never cleared.
  }

  /** Writes the approval and its buttons into the response. */
  showApproval(view: ApprovalView, stopArgs: unknown[]): void {
    this.own(`\n${approvalMarkdown(view)}`);
    for (const [title, command, args] of approvalButtons(view, stopArgs)) this.stream.button(title, command, args);
  }

  closeApproval(outcome: ApprovalOutcome, label?: string): void {
    this.own(`\n_${escapeMarkdown(outcomeNote(outcome, label))}._\n`);
  }

  private flushHeld(): void {
    if (this.held === '') return;
    this.modelText += this.held;
    this.stream.markdown(this.held);
    this.held = '';
  }

  /** Our own markdown, after closing any code block the model left open. */
  private own(text: string): void {
    this.flushHeld();
    const close = openFence(this.modelText);
    this.modelText = '';
    if (close !== '') this.stream.markdown(`\n${close}\n`);
    if (text !== '') this.stream.markdown(text);
  }
}

interface Pending {
  view: ApprovalView;
  resolve(result: ToolConfirmResult | undefined): void;
}

/** The approvals waiting in Chat view responses, answered by id (from the buttons). */
export class NativeApprovals {
  private readonly pending = new Map<string, Pending>();

  get size(): number {
    return this.pending.size;
  }

  has(approvalId: string): boolean {
    return this.pending.has(approvalId);
  }

  first(): ApprovalView | undefined {
    return this.pending.values().next().value?.view;
  }

  /** The waiting approval `approvalId`, if it still waits. */
  view(approvalId: string): ApprovalView | undefined {
    return this.pending.get(approvalId)?.view;
  }

  /**
   * Shows the approval in `ui` and waits for an answer; undefined when the server withdrew it.
   * Any failure to show it is a denial.
   */
  ask(view: ApprovalView, ui: NativeChatUi | undefined, token: CancellationLike, stopArgs: unknown[], onClose: (outcome: ApprovalOutcome) => void = () => undefined): Promise<ToolConfirmResult | undefined> {
    // Closed before it was shown: the caller is told all the same (the waiting notice counts it).
    if (ui === undefined) {
      onClose('deny');
      return Promise.resolve({ decision: 'deny' });
    }
    if (token.isCancellationRequested) {
      onClose('withdrawn');
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const subscription = token.onCancellationRequested(() => finish(undefined));
      const finish = (result: ToolConfirmResult | undefined): void => {
        if (this.pending.get(view.approvalId)?.resolve !== finish) return;
        this.pending.delete(view.approvalId);
        subscription.dispose();
        const chosen = result === undefined ? undefined : view.choices.find((c) => c.id === result.choice);
        const outcome: ApprovalOutcome = result === undefined ? 'withdrawn' : (chosen?.kind ?? 'deny');
        try {
          ui.closeApproval(outcome, chosen?.label);
        } catch {
          // The response is gone; the answer stands.
        }
        onClose(outcome);
        resolve(result);
      };
      this.pending.set(view.approvalId, { view, resolve: finish });
      try {
        ui.showApproval(view, stopArgs);
      } catch {
        finish({ decision: 'deny' });
      }
    });
  }

  /**
   * A button's answer: the id of one of the approval's choices. False when no such approval waits
   * (answered, withdrawn, or never asked). Anything but an offered choice is a denial.
   */
  answer(approvalId: unknown, choice: unknown, message?: string, edits?: UserEdit[]): boolean {
    const pending = typeof approvalId === 'string' ? this.pending.get(approvalId) : undefined;
    if (pending === undefined) return false;
    // An allowed edit takes along the user's version of files (toResult drops it from a denial).
    const answer = typeof choice === 'string' ? { choice, ...(typeof message === 'string' ? { message } : {}), ...(edits === undefined ? {} : { edits }) } : undefined;
    pending.resolve(toResult(answer, pending.view));
    return true;
  }

  /** Denies (with `message` for the model, if any); false when no such approval waits. */
  deny(approvalId: string, message?: string): boolean {
    const pending = this.pending.get(approvalId);
    if (pending === undefined) return false;
    const deny = pending.view.choices.find((c) => c.kind === 'deny');
    if (deny === undefined) {
      pending.resolve({ decision: 'deny' });
      return true;
    }
    return this.answer(approvalId, deny.id, message);
  }

  /** Denies everything still waiting (the extension is going away). */
  denyAll(): void {
    for (const id of [...this.pending.keys()]) this.deny(id);
  }
}
