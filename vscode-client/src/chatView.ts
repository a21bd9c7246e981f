/**
 * The chat view: a WebviewView in Gatehouse's own side-bar container. Implements `ChatUi` and
 * `ApprovalUi` by posting messages to the webview (webview/main.ts, bundled to dist/webview.js).
 * The host keeps the transcript (src/transcript.ts: every turn's items in arrival order), so a
 * view that is reloaded, or opened after a prompt arrived, gets it whole as a snapshot.
 * Links, Copy and Insert at cursor come back as messages: links open only through
 * `vscode.env.openExternal` (VS Code's own confirmation), only http(s) and mailto. An edit's
 * "Open diff" comes back too: VS Code's diff editor on the proposal (src/proposals.ts), whose
 * right side, as it is on Accept, is sent as the user's version.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ApprovalAnswer, ApprovalOutcome, ApprovalUi, ApprovalView, Disposable } from './approvals';
import { modalChoices, modalText } from './approvals';
import type { ChatUi, ToolEndView, ToolStartView } from './chatSession';
import type { FileChangeView, TurnMemoryUi } from './memory';
import type { ProposalEditors } from './proposals';
import type { UserEdit } from './protocol';
import { Transcript, type ToView, type TranscriptState } from './transcript';

export const VIEW_ID = 'gatehouse.chat';

/** Webview -> host. */
type FromView =
  | { type: 'ready' }
  | { type: 'send'; prompt: string }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'approve'; approvalId: string; choice: string; message?: string }
  | { type: 'openDiff'; approvalId: string; path: string }
  | { type: 'openTurnDiff'; turnId: string; path: string }
  | { type: 'undoTurn'; turnId: string }
  | { type: 'openLink'; href: string }
  | { type: 'copy'; text: string }
  | { type: 'insert'; text: string };

export interface ChatActions {
  send(prompt: string): void;
  stop(): void;
  newSession(): void;
  openDiff?(turnId: string, path: string): void;
  undoTurn?(turnId: string): void;
}

/** Told when a card is shown or closed, and when the view is shown or hidden (the waiting notice). */
export interface CardListener {
  cardShown(view: ApprovalView): void;
  cardClosed(approvalId: string): void;
}

/** The schemes a link in an answer may open (after VS Code's own confirmation). */
export function openableLink(href: unknown): string | undefined {
  if (typeof href !== 'string' || href.length > 8192) return undefined;
  return /^(https?:\/\/|mailto:)/i.test(href.trim()) ? href.trim() : undefined;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, ChatUi, ApprovalUi, TurnMemoryUi, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** The conversation since the last `clear`, sent whole to a webview that (re)loads. */
  private readonly transcript = new Transcript();
  private readonly pending = new Map<string, { view: ApprovalView; resolve: (answer: ApprovalAnswer) => void }>();
  private readonly visibility = new vscode.EventEmitter<boolean>();
  private actions: ChatActions | undefined;
  private cards: CardListener | undefined;
  /** Where a view with nothing to show gets its transcript from (issue 11: the server's history). */
  private restorer: (() => Promise<TranscriptState | undefined>) | undefined;
  /** A card to scroll to once the view has loaded. */
  private revealing: string | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly whenHiddenSetting: () => 'modal' | 'notify' = () => 'notify',
    private readonly proposals?: ProposalEditors,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  setActions(actions: ChatActions): void {
    this.actions = actions;
  }

  setCardListener(listener: CardListener): void {
    this.cards = listener;
  }

  /**
   * The seam for a persisted history: called when a webview loads and the host has no
   * transcript (e.g. after a window reload); what it returns is shown, in order.
   */
  setRestorer(restorer: () => Promise<TranscriptState | undefined>): void {
    this.restorer = restorer;
  }

  /** The transcript as the view shows it (a copy). */
  state(): TranscriptState {
    return this.transcript.snapshot();
  }

  /** Badge on the view (e.g. approvals waiting); 0 removes it. */
  setBadge(count: number, tooltip: string): void {
    if (this.view !== undefined) this.view.badge = count > 0 ? { value: count, tooltip } : undefined;
  }

  /** Shows the view and scrolls to the card of `approvalId` (once the view has loaded, if it had not). */
  async revealCard(approvalId: string | undefined): Promise<void> {
    this.revealing = approvalId;
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
    if (approvalId !== undefined && this.ready) {
      this.revealing = undefined;
      this.send({ type: 'reveal', approvalId });
    }
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = this.html(view.webview, media, dist);
    if (this.pending.size > 0) view.badge = { value: this.pending.size, tooltip: 'Gatehouse is waiting for your approval' };
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
      this.cards?.cardShown(view);
    });
  }

  closeCard(approvalId: string, outcome: ApprovalOutcome, label?: string): void {
    this.pending.delete(approvalId);
    this.post(label === undefined ? { type: 'closeApproval', approvalId, outcome } : { type: 'closeApproval', approvalId, outcome, label });
    this.cards?.cardClosed(approvalId);
  }

  whenHidden(): 'modal' | 'notify' {
    return this.whenHiddenSetting();
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
    this.transcript.clear((id) => this.pending.has(id));
    this.send({ type: 'snapshot', state: this.transcript.snapshot() });
  }

  dispose(): void {
    this.visibility.dispose();
    this.pending.clear();
  }

  // --- plumbing -----------------------------------------------------------------------------------

  /** A step of the transcript: kept, and shown if the webview is up. */
  private post(message: ToView): void {
    this.transcript.apply(message);
    this.send(message);
  }

  private send(message: ToView): void {
    if (this.ready) void this.view?.webview.postMessage(message);
  }

  private async restore(): Promise<void> {
    if (this.transcript.state.entries.length === 0 && this.restorer !== undefined) {
      try {
        const restored = await this.restorer();
        if (restored !== undefined && this.transcript.state.entries.length === 0) this.transcript.apply({ type: 'snapshot', state: restored });
      } catch {
        // Nothing to restore: the view starts empty.
      }
    }
    this.send({ type: 'snapshot', state: this.transcript.snapshot() });
    if (this.revealing !== undefined) this.send({ type: 'reveal', approvalId: this.revealing });
    this.revealing = undefined;
  }

  private receive(message: FromView): void {
    if (typeof message !== 'object' || message === null) return;
    switch (message.type) {
      case 'ready':
        this.ready = true;
        void this.restore();
        break;
      case 'openLink': {
        const href = openableLink(message.href);
        // openExternal goes through VS Code's opener, which asks before opening an untrusted site.
        if (href !== undefined) void vscode.env.openExternal(vscode.Uri.parse(href, true));
        break;
      }
      case 'copy':
        if (typeof message.text === 'string') void vscode.env.clipboard.writeText(message.text);
        break;
      case 'insert':
        if (typeof message.text === 'string') void insertAtCursor(message.text);
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

  private html(webview: vscode.Webview, media: vscode.Uri, dist: vscode.Uri): string {
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js'));
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

/** "Insert at cursor": replaces the selection of the editor the person last used. */
async function insertAtCursor(text: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (editor === undefined) {
    void vscode.window.showInformationMessage('Gatehouse: open an editor first, then use Insert at cursor.');
    return;
  }
  await editor.edit((edit) => {
    for (const selection of editor.selections) edit.replace(selection, text);
  });
}
