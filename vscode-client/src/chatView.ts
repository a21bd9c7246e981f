/**
 * The chat view: a WebviewView in Gatehouse's own side-bar container. Implements `ChatUi` and
 * `ApprovalUi` by posting messages to media/chat.js. The host keeps the transcript's messages,
 * so a view that is closed and opened again (or opened after a prompt arrived) shows everything.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ApprovalAnswer, ApprovalOutcome, ApprovalUi, ApprovalView, Disposable } from './approvals';
import { modalChoices, modalText } from './approvals';
import type { ChatUi, ToolEndView, ToolStartView } from './chatSession';
import type { FileChangeView, TurnMemoryUi } from './memory';
import type { ProposalEditors } from './proposals';
import type { UserEdit } from './protocol';

export const VIEW_ID = 'gatehouse.chat';

/** Host -> webview. */
type ToView =
  | { type: 'setRunning'; running: boolean }
  | { type: 'user'; text: string }
  | { type: 'beginTurn' }
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'toolArgs'; index: number; text: string }
  | { type: 'toolStart'; tool: ToolStartView }
  | { type: 'toolOutput'; id: string; text: string }
  | { type: 'toolEnd'; end: ToolEndView }
  | { type: 'status'; text: string }
  | { type: 'error'; text: string }
  | { type: 'endTurn'; note: string }
  | { type: 'approval'; view: ApprovalView }
  | { type: 'closeApproval'; approvalId: string; outcome: ApprovalOutcome; label?: string }
  | { type: 'tagTurn'; turnId: string }
  | { type: 'turnChanges'; turnId: string; files: FileChangeView[] }
  | { type: 'turnUndone'; turnId: string; note: string }
  | { type: 'clear' };

/** Webview -> host. */
type FromView =
  | { type: 'ready' }
  | { type: 'send'; prompt: string }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'approve'; approvalId: string; choice: string; message?: string }
  | { type: 'openDiff'; approvalId: string; path: string }
  | { type: 'openTurnDiff'; turnId: string; path: string }
  | { type: 'undoTurn'; turnId: string };

export interface ChatActions {
  send(prompt: string): void;
  stop(): void;
  newSession(): void;
  openDiff?(turnId: string, path: string): void;
  undoTurn?(turnId: string): void;
}


export class ChatViewProvider implements vscode.WebviewViewProvider, ChatUi, ApprovalUi, TurnMemoryUi, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** Every message since the last `clear`, replayed into a new webview. */
  private history: ToView[] = [];
  private readonly pending = new Map<string, { view: ApprovalView; resolve: (answer: ApprovalAnswer) => void }>();
  private readonly visibility = new vscode.EventEmitter<boolean>();
  private actions: ChatActions | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly proposals?: ProposalEditors,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  setActions(actions: ChatActions): void {
    this.actions = actions;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((message: FromView) => this.receive(message));
    view.onDidChangeVisibility(() => this.visibility.fire(view.visible));
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
        this.ready = false;
        this.visibility.fire(false);
      }
    });
  }

  // --- ApprovalUi ---------------------------------------------------------------------------------

  isVisible(): boolean {
    return this.view?.visible === true;
  }

  onDidChangeVisibility(listener: (visible: boolean) => void): Disposable {
    return this.visibility.event(listener);
  }

  showCard(view: ApprovalView): Promise<ApprovalAnswer> {
    return new Promise((resolve) => {
      this.pending.set(view.approvalId, { view, resolve });
      this.post({ type: 'approval', view });
    });
  }

  closeCard(approvalId: string, outcome: ApprovalOutcome, label?: string): void {
    this.pending.delete(approvalId);
    this.post(label === undefined ? { type: 'closeApproval', approvalId, outcome } : { type: 'closeApproval', approvalId, outcome, label });
  }

  async showModal(view: ApprovalView): Promise<string | undefined> {
    const { message, detail } = modalText(view);
    // Deny first (view.choices is ordered so): VS Code focuses the first button, so a stray
    // Enter denies. An edit too long to show there can only be denied there.
    const choices = modalChoices(view);
    const labels = choices.map((c) => c.label);
    const picked = await vscode.window.showWarningMessage(message, { modal: true, detail }, ...labels);
    return choices.find((c) => c.label === picked)?.id;
  }

  collectEdits(approvalId: string): Promise<UserEdit[]> {
    return this.proposals?.collect(approvalId) ?? Promise.resolve([]);
  }

  releaseEdits(approvalId: string): void {
    this.proposals?.release(approvalId).catch((error: unknown) => this.log(`closing the diff editors failed: ${String(error)}`));
  }

  // --- ChatUi -------------------------------------------------------------------------------------

  setRunning(running: boolean): void {
    void vscode.commands.executeCommand('setContext', 'gatehouse.running', running);
    this.post({ type: 'setRunning', running });
  }
  addUserMessage(text: string): void {
    this.post({ type: 'user', text });
  }
  beginTurn(): void {
    this.post({ type: 'beginTurn' });
  }
  appendContent(text: string): void {
    this.post({ type: 'content', text });
  }
  appendReasoning(text: string): void {
    this.post({ type: 'reasoning', text });
  }
  previewToolArgs(index: number, text: string): void {
    this.post({ type: 'toolArgs', index, text });
  }
  startTool(tool: ToolStartView): void {
    this.post({ type: 'toolStart', tool });
  }
  appendToolOutput(id: string, text: string): void {
    this.post({ type: 'toolOutput', id, text });
  }
  endTool(end: ToolEndView): void {
    this.post({ type: 'toolEnd', end });
  }
  setStatus(text: string): void {
    this.post({ type: 'status', text });
  }
  showError(text: string): void {
    this.post({ type: 'error', text });
  }
  endTurn(note: string): void {
    this.post({ type: 'endTurn', note });
  }

  // --- TurnMemoryUi -------------------------------------------------------------------------------

  tagTurn(turnId: string): void {
    this.post({ type: 'tagTurn', turnId });
  }
  showTurnChanges(turnId: string, files: FileChangeView[]): void {
    this.post({ type: 'turnChanges', turnId, files });
  }
  markTurnUndone(turnId: string, note: string): void {
    this.post({ type: 'turnUndone', turnId, note });
  }

  clear(): void {
    // Cards of the old session stay answerable until the server withdraws them.
    this.history = this.history.filter((m) => m.type === 'approval' && this.pending.has(m.view.approvalId));
    this.history.unshift({ type: 'clear' });
    if (this.ready) void this.view?.webview.postMessage({ type: 'clear' });
  }

  dispose(): void {
    this.visibility.dispose();
    this.pending.clear();
  }

  // --- plumbing -----------------------------------------------------------------------------------

  private post(message: ToView): void {
    this.remember(message);
    if (this.ready) void this.view?.webview.postMessage(message);
  }

  /** Appends to the history, merging consecutive text deltas so replay stays cheap. */
  private remember(message: ToView): void {
    const last = this.history[this.history.length - 1];
    if (last !== undefined && last.type === message.type) {
      if ((last.type === 'content' || last.type === 'reasoning') && 'text' in message) {
        last.text += message.text;
        return;
      }
      if (last.type === 'toolOutput' && message.type === 'toolOutput' && last.id === message.id) {
        last.text += message.text;
        return;
      }
      if (last.type === 'status' || last.type === 'error' || last.type === 'setRunning') {
        this.history[this.history.length - 1] = message;
        return;
      }
    }
    this.history.push({ ...message });
  }

  private receive(message: FromView): void {
    if (typeof message !== 'object' || message === null) return;
    switch (message.type) {
      case 'ready':
        this.ready = true;
        for (const m of this.history) void this.view?.webview.postMessage(m);
        break;
      case 'send':
        if (typeof message.prompt === 'string') this.actions?.send(message.prompt);
        break;
      case 'stop':
        this.actions?.stop();
        break;
      case 'newSession':
        this.actions?.newSession();
        break;
      case 'openDiff':
        if (this.pending.has(message.approvalId) && typeof message.path === 'string') {
          this.proposals?.open(message.approvalId, message.path).catch((error: unknown) => {
            void vscode.window.showErrorMessage(`Gatehouse: cannot open the diff of ${message.path}: ${error instanceof Error ? error.message : String(error)}`);
          });
        }
        break;
      case 'openTurnDiff':
        if (typeof message.turnId === 'string' && typeof message.path === 'string') this.actions?.openDiff?.(message.turnId, message.path);
        break;
      case 'undoTurn':
        if (typeof message.turnId === 'string') this.actions?.undoTurn?.(message.turnId);
        break;
      case 'approve': {
        const pending = this.pending.get(message.approvalId);
        if (pending === undefined || !pending.view.choices.some((c) => c.id === message.choice)) return;
        this.pending.delete(message.approvalId);
        const answer: ApprovalAnswer = { choice: message.choice };
        if (typeof message.message === 'string') answer.message = message.message;
        pending.resolve(answer);
        break;
      }
      default:
        break;
    }
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Gatehouse</title>
</head>
<body>
<div id="toolbar"><button id="new-session" type="button" title="Start a new conversation">New Session</button></div>
<div id="transcript" role="log" aria-live="polite"></div>
<div id="status-line" aria-live="polite"></div>
<div id="error" role="alert" hidden></div>
<div id="composer">
<textarea id="prompt" rows="3" placeholder="Ask Gatehouse… (Ctrl+Enter to send)" aria-label="Prompt"></textarea>
<div id="actions"><button id="stop" type="button" disabled>Stop</button><button id="send" type="button">Send</button></div>
</div>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }
}
