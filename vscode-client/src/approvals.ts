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
 * - fail closed: any UI error, or an answer that is not one of the three decisions, is a denial.
 */
import type { Decision, ToolConfirmParams, ToolConfirmResult } from './protocol';
import { visible } from './display';
import { isolationText, toolText } from './toolText';

export interface Disposable {
  dispose(): void;
}

export interface CancellationLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): Disposable;
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
}

export interface ApprovalAnswer {
  decision: Decision;
  message?: string;
}

export type ApprovalOutcome = Decision | 'withdrawn';

export interface ApprovalUi {
  isVisible(): boolean;
  onDidChangeVisibility(listener: (visible: boolean) => void): Disposable;
  /** Shows the card (queued if the view is not open yet); resolves with the user's answer. */
  showCard(view: ApprovalView): Promise<ApprovalAnswer>;
  /** Removes the card and leaves a one-line note; safe to call for a card that is gone. */
  closeCard(approvalId: string, outcome: ApprovalOutcome): void;
  /** A modal dialog; resolves with the decision, or undefined when it was dismissed. */
  showModal(view: ApprovalView): Promise<Decision | undefined>;
  /** How a card the person cannot see is brought to them (absent: 'modal'). */
  whenHidden?(): 'modal' | 'notify';
}

const DECISIONS: readonly Decision[] = ['allow', 'allow_session', 'deny'];
const MODAL_CODE_LIMIT = 4000;

export function reasonText(reason: string): string {
  switch (reason) {
    case 'code_execution':
      return 'It runs code: python and terminal calls need your approval (gatehouse.confirmCodeExecution).';
    case 'all_tools':
      return 'Every tool call needs your approval (gatehouse.confirmToolCalls).';
    default:
      return `The server asked (${reason}).`;
  }
}

export function describeApproval(params: ToolConfirmParams, folder: string): ApprovalView {
  if (typeof params.approvalId !== 'string' || typeof params.name !== 'string' || typeof params.sandbox !== 'object') {
    throw new Error('malformed toolConfirm request');
  }
  const { label, text, warning } = toolText(params.name, params.arguments);
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
  };
  if (warning !== undefined) view.hiddenWarning = warning;
  return view;
}

/** The modal's message and detail. Very long code is cut here, and the detail says so and where to read it. */
export function modalText(view: ApprovalView): { message: string; detail: string } {
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
      `Isolation: ${view.isolation}`,
    ].join('\n'),
  };
}

export function toResult(answer: ApprovalAnswer | null | undefined): ToolConfirmResult {
  if (typeof answer !== 'object' || answer === null || !DECISIONS.includes(answer.decision)) return { decision: 'deny' };
  const message = typeof answer.message === 'string' ? answer.message.trim() : '';
  return answer.decision === 'deny' && message !== '' ? { decision: 'deny', message } : { decision: answer.decision };
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
        ui.closeCard(view.approvalId, result === undefined ? 'withdrawn' : result.decision);
      } catch (error) {
        log(`toolConfirm: closing the card failed: ${String(error)}`);
      }
      resolve(result);
    };
    const failClosed = (error: unknown): void => {
      log(`toolConfirm: the approval prompt failed (${String(error)}); denied`);
      finish({ decision: 'deny' });
    };
    const askModal = (): void => {
      if (modalShown || done) return;
      if ((ui.whenHidden?.() ?? 'modal') !== 'modal') return; // the UI's own notice points to the card
      modalShown = true;
      try {
        ui.showModal(view).then((decision) => finish(toResult({ decision: decision ?? 'deny' })), failClosed);
      } catch (error) {
        failClosed(error);
      }
    };
    try {
      disposables.push(token.onCancellationRequested(() => finish(undefined)));
      ui.showCard(view).then((answer) => finish(toResult(answer)), failClosed);
      if (!done) disposables.push(ui.onDidChangeVisibility((visible) => visible || askModal()));
      if (!ui.isVisible()) askModal();
    } catch (error) {
      failClosed(error);
    }
  });
}
