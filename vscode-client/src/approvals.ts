/**
 * Answers `toolConfirm` (docs/protocol.md, "Approvals") through a small UI interface, so the
 * policy is unit-tested without VS Code:
 * - the approval card is always shown in the chat view; when the view is not visible (or becomes
 *   hidden while the card waits), the UI's `whenHidden()` says how the person is told: 'modal'
 *   (a modal dialog asks too) or 'notify' (the UI raises its own notice — a notification and a
 *   badge whose button opens the card — and the card stays the only place to answer);
 *   the first answer wins;
 * - when the server withdraws the request (`$/cancelRequest` fires the token) the card closes at
 *   once and there is no decision (`undefined`); a modal cannot be closed by an extension, so its
 *   late answer is ignored;
 * - the card and the modal offer the request's choices, Deny first, with labels that say their
 *   scope ("Allow `npm test *` in this session"); the answer names the choice, the decision that
 *   goes with it, and echoes the content's SHA-256;
 * - an edit shows each file's diff; "Open diff" opens VS Code's diff editor on the proposal, and
 *   on an allow whatever the user changed there is sent back as their version (`edits`);
 * - fail closed: any UI error, or an answer that is not one of the offered choices, is a denial.
 */
import type { ChoiceView, Decision, ProposedEdit, ToolConfirmParams, ToolConfirmResult, UserEdit } from './protocol';
import { diffCounts, diffRows, type DiffRow } from './diffs';
import { hiddenWarning, visible } from './display';
import { isolationText, toolText } from './toolText';

export interface Disposable {
  dispose(): void;
}

export interface CancellationLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): Disposable;
}

/** One file of an edit, as display strings. */
export interface EditView {
  /** The path exactly as the server names it (the key of the user's version). */
  path: string;
  /** The path through the display rule. */
  shownPath: string;
  action: ProposedEdit['action'];
  added: number;
  removed: number;
  /** The whole diff, every text through the display rule, with line numbers. */
  rows: DiffRow[];
  /** Set for an auto-run path: what runs or reads it. */
  protected?: string;
}

/** Everything a person needs to decide, as display strings. */
export interface ApprovalView {
  approvalId: string;
  toolCallId: string;
  sessionId: string;
  tool: string;
  /** "Python code", "Command" or "Arguments". */
  codeLabel: string;
  /** The full code, command or arguments: never shortened, hidden characters written out. */
  code: string;
  /** Set when the code hides characters (escape codes, bidi controls, zero-width characters). */
  hiddenWarning?: string;
  folder: string;
  reason: string;
  /** e.g. "strong · network off". */
  isolation: string;
  /** True when the code would run below strong isolation or with the network on. */
  weakIsolation: boolean;
  /** The answers offered, Deny first; labels through the display rule. */
  choices: ChoiceButton[];
  /** Why rules could not allow this command, when they could not. */
  unclear?: string[];
  /** What an allow approves (echoed in the answer). */
  contentSha256?: string;
  /** Set for the edit tools: every file the call would change (`code` is then the whole diff). */
  edits?: EditView[];
}

export interface ChoiceButton {
  id: string;
  label: string;
  kind: ChoiceView['kind'];
}

export interface ApprovalAnswer {
  /** The id of the chosen choice. */
  choice: string;
  message?: string;
  /** The user's own version of files of an edit (what they changed in the diff editor). */
  edits?: UserEdit[];
}

export type ApprovalOutcome = ChoiceView['kind'] | 'withdrawn';

export interface ApprovalUi {
  isVisible(): boolean;
  onDidChangeVisibility(listener: (visible: boolean) => void): Disposable;
  /** Shows the card (queued if the view is not open yet); resolves with the user's answer. */
  showCard(view: ApprovalView): Promise<ApprovalAnswer>;
  /** Removes the card and leaves a one-line note (the chosen label, when there is one); safe to
   *  call for a card that is gone. */
  closeCard(approvalId: string, outcome: ApprovalOutcome, label?: string): void;
  /** A modal dialog; resolves with the chosen choice's id, or undefined when it was dismissed. */
  showModal(view: ApprovalView): Promise<string | undefined>;
  /** How a card the person cannot see is brought to them (absent: 'modal'). */
  whenHidden?(): 'modal' | 'notify';
  /** Edits: the files the user changed in the diff editor for this approval (on an allow). */
  collectEdits?(approvalId: string): Promise<UserEdit[]>;
  /** Edits: close the approval's diff editors and forget its proposals. */
  releaseEdits?(approvalId: string): void;
}

const MODAL_CODE_LIMIT = 4000;
const EDIT_TOOLS: readonly string[] = ['edit_file', 'write_file', 'apply_patch'];

/** The decision each kind of choice is answered with. */
export const BASE_DECISION: Readonly<Record<ChoiceView['kind'], Decision>> = {
  deny: 'deny',
  allow_once: 'allow',
  allow_session: 'allow_session',
  allow_always: 'allow',
};

/** What a server that sends no choices gets offered. */
const DENY_CHOICE: ChoiceButton = { id: 'deny', label: 'Deny', kind: 'deny' };
const BASIC_CHOICES: readonly ChoiceButton[] = [DENY_CHOICE, { id: 'allow_once', label: 'Allow once', kind: 'allow_once' }];

function choiceButtons(choices: unknown): ChoiceButton[] {
  if (!Array.isArray(choices) || choices.length === 0) return [...BASIC_CHOICES];
  const buttons: ChoiceButton[] = [];
  for (const c of choices as ChoiceView[]) {
    if (typeof c !== 'object' || c === null || typeof c.id !== 'string' || typeof c.label !== 'string') continue;
    if (!(c.kind in BASE_DECISION)) continue;
    buttons.push({ id: c.id, label: visible(c.label), kind: c.kind });
  }
  // Deny first, whatever order the server sent: it is the default of every prompt.
  buttons.sort((a, b) => Number(b.kind === 'deny') - Number(a.kind === 'deny'));
  return buttons.some((b) => b.kind === 'deny') ? buttons : [DENY_CHOICE, ...buttons];
}

export function reasonText(reason: string): string {
  switch (reason) {
    case 'code_execution':
      return 'It runs code: python and terminal calls need your approval (gatehouse.confirmCodeExecution).';
    case 'all_tools':
      return 'Every tool call needs your approval (gatehouse.confirmToolCalls).';
    case 'ask_rule':
      return 'A rule says to ask about it (Gatehouse: Rules).';
    case 'file_edit':
      return 'It changes files: every edit needs your approval (gatehouse.confirmFileEdits).';
    case 'protected_path':
      return 'It changes a file that runs code or configures your tools by itself (.git, hooks, .vscode, ...): always asked, whatever the settings and rules say.';
    default:
      return `The server asked (${reason}).`;
  }
}

export function describeApproval(params: ToolConfirmParams, folder: string): ApprovalView {
  if (typeof params.approvalId !== 'string' || typeof params.name !== 'string' || typeof params.sandbox !== 'object') {
    throw new Error('malformed toolConfirm request');
  }
  const edits = Array.isArray(params.edits) && EDIT_TOOLS.includes(params.name) ? params.edits : undefined;
  const { label, text, warning } = edits === undefined ? toolText(params.name, params.arguments) : editText(edits);
  const view: ApprovalView = {
    approvalId: params.approvalId,
    toolCallId: params.toolCallId,
    sessionId: params.sessionId,
    tool: visible(params.name),
    codeLabel: label,
    code: text,
    folder,
    reason: reasonText(params.reason),
    isolation: isolationText(params.sandbox),
    weakIsolation: params.sandbox.level !== 'strong' || params.sandbox.network,
    choices: choiceButtons(params.choices),
  };
  if (warning !== undefined) view.hiddenWarning = warning;
  if (Array.isArray(params.unclear) && params.unclear.length > 0) view.unclear = params.unclear.map((u) => visible(u));
  if (typeof params.contentSha256 === 'string') view.contentSha256 = params.contentSha256;
  if (edits !== undefined) view.edits = edits.map(editView);
  return view;
}

function editText(edits: ProposedEdit[]): { label: string; text: string; warning?: string } {
  const raw = edits.map((e) => e.diff).join('');
  const label = edits.length === 1 ? 'Change to 1 file' : `Changes to ${edits.length} files`;
  const warning = hiddenWarning(raw);
  return warning === undefined ? { label, text: visible(raw) } : { label, text: visible(raw), warning };
}

function editView(edit: ProposedEdit): EditView {
  if (typeof edit.path !== 'string' || typeof edit.diff !== 'string') throw new Error('malformed toolConfirm edits');
  const { added, removed } = diffCounts(edit.diff);
  const view: EditView = {
    path: edit.path,
    shownPath: visible(edit.path),
    action: edit.action,
    added,
    removed,
    rows: diffRows(edit.diff).map((row) => ({ ...row, text: visible(row.text) })),
  };
  if (typeof edit.protected === 'string') view.protected = visible(edit.protected);
  return view;
}

/** The modal's buttons, Deny first; an edit too long to show there can only be denied there. */
export function modalChoices(view: ApprovalView): ChoiceButton[] {
  if (view.edits !== undefined && view.code.length > MODAL_CODE_LIMIT) return view.choices.filter((c) => c.kind === 'deny');
  return view.choices;
}

/** The modal's message and detail. Very long code is cut here, and the detail says so and where to read it. */
export function modalText(view: ApprovalView): { message: string; detail: string } {
  if (view.edits !== undefined) return editModalText(view, view.edits);
  let code = view.code;
  if (code.length > MODAL_CODE_LIMIT) {
    const rest = code.length - MODAL_CODE_LIMIT;
    code = `${code.slice(0, MODAL_CODE_LIMIT)}\n… ${rest} more characters are not shown here: ` +
      'open the Gatehouse chat view to read all of it before you allow it.';
  }
  return {
    message: `Gatehouse: allow the ${view.tool} tool to run?`,
    detail: [
      ...(view.hiddenWarning === undefined ? [] : [view.hiddenWarning, '']),
      `${view.codeLabel}:`,
      code,
      '',
      `Working folder: ${view.folder}`,
      `Why you are asked: ${view.reason}`,
      ...(view.unclear === undefined ? [] : [`Rules cannot allow it: it ${view.unclear.join('; it ')}.`]),
      `Isolation: ${view.isolation}`,
    ].join('\n'),
  };
}

function editModalText(view: ApprovalView, edits: EditView[]): { message: string; detail: string } {
  const files = edits.length === 1 ? edits[0]?.shownPath ?? 'a file' : `${edits.length} files`;
  const stat = edits.map((e) => `${e.shownPath} | +${e.added} -${e.removed} (${e.action})${e.protected === undefined ? '' : ` PROTECTED: ${e.protected}`}`);
  const complete = view.code.length <= MODAL_CODE_LIMIT;
  return {
    message: `Gatehouse: allow ${view.tool} to change ${files}?`,
    detail: [
      ...(view.hiddenWarning === undefined ? [] : [view.hiddenWarning, '']),
      ...stat,
      '',
      complete
        ? view.code
        : `The diff (${view.code.length} characters) is too long to show here, so it can only be denied here: ` +
          'review it in the Gatehouse chat view (or with Open diff) and accept it there.',
      '',
      `Working folder: ${view.folder}`,
      `Why you are asked: ${view.reason}`,
    ].join('\n'),
  };
}

/** The answer as the server reads it; anything that is not an offered choice is a denial. */
export function toResult(answer: ApprovalAnswer | null | undefined, view: ApprovalView): ToolConfirmResult {
  const deny: ToolConfirmResult = { decision: 'deny' };
  if (typeof answer !== 'object' || answer === null || typeof answer.choice !== 'string') return deny;
  const choice = view.choices.find((c) => c.id === answer.choice);
  if (choice === undefined) return deny;
  const result: ToolConfirmResult = { decision: BASE_DECISION[choice.kind], choice: choice.id, approvalId: view.approvalId };
  if (view.contentSha256 !== undefined) result.contentSha256 = view.contentSha256;
  const message = typeof answer.message === 'string' ? answer.message.trim() : '';
  if (choice.kind === 'deny' && message !== '') result.message = message;
  const edits = Array.isArray(answer.edits) ? answer.edits.filter((e) => typeof e?.path === 'string' && typeof e?.content === 'string') : [];
  if (choice.kind !== 'deny' && edits.length > 0) result.edits = edits;
  return result;
}

/** Asks the user; resolves with the decision, or undefined when the server withdrew the request. */
export function askApproval(
  params: ToolConfirmParams,
  token: CancellationLike,
  ui: ApprovalUi,
  folder: string,
  log: (message: string) => void = () => undefined,
): Promise<ToolConfirmResult | undefined> {
  let view: ApprovalView;
  try {
    view = describeApproval(params, folder);
  } catch (error) {
    log(`toolConfirm: ${String(error)}; denied`);
    return Promise.resolve({ decision: 'deny' });
  }
  if (token.isCancellationRequested) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let done = false;
    let modalShown = false;
    const disposables: Disposable[] = [];
    const finish = (result: ToolConfirmResult | undefined): void => {
      if (done) return;
      done = true;
      for (const d of disposables) d.dispose();
      try {
        const chosen = result === undefined ? undefined : view.choices.find((c) => c.id === result.choice);
        const outcome: ApprovalOutcome = result === undefined ? 'withdrawn' : (chosen?.kind ?? 'deny');
        ui.closeCard(view.approvalId, outcome, chosen?.label);
        ui.releaseEdits?.(view.approvalId);
      } catch (error) {
        log(`toolConfirm: closing the card failed: ${String(error)}`);
      }
      resolve(result);
    };
    const failClosed = (error: unknown): void => {
      log(`toolConfirm: the approval prompt failed (${String(error)}); denied`);
      finish({ decision: 'deny' });
    };
    let deciding = false;
    /** An allowed edit takes along what the user changed in the diff editor, as it is now. */
    const decide = (answer: ApprovalAnswer | null | undefined): void => {
      const result = toResult(answer, view);
      if (done || deciding) return;
      if (result.decision === 'deny' || view.edits === undefined || ui.collectEdits === undefined) {
        finish(result);
        return;
      }
      deciding = true;
      ui.collectEdits(view.approvalId).then((edits) => finish(toResult({ ...answer, choice: result.choice ?? '', edits }, view)), failClosed);
    };
    const askModal = (): void => {
      if (modalShown || done) return;
      if ((ui.whenHidden?.() ?? 'modal') !== 'modal') return; // the UI's own notice points to the card
      modalShown = true;
      try {
        ui.showModal(view).then((choice) => decide(choice === undefined ? null : { choice }), failClosed);
      } catch (error) {
        failClosed(error);
      }
    };
    try {
      disposables.push(token.onCancellationRequested(() => finish(undefined)));
      ui.showCard(view).then(decide, failClosed);
      if (!done) disposables.push(ui.onDidChangeVisibility((visible) => visible || askModal()));
      if (!ui.isVisible()) askModal();
    } catch (error) {
      failClosed(error);
    }
  });
}
