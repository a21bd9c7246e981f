/**
 * Gatehouse in VS Code's own Chat view: the `@gatehouse` chat participant (sticky) and the
 * Gatehouse language model provider it needs (finalized API only). Each request runs one
 * Gatehouse turn (`ChatSession` over the shared server, routed by `SessionRouter`); the server
 * session continues through the chat's history (`result.metadata.gatehouseSessionId`).
 * Approvals are Gatehouse's own, in the response (src/nativeChatUi.ts): VS Code's tool
 * confirmation is never the gate.
 */
import * as vscode from 'vscode';
import { describeApproval } from './approvals';
import { ChatSession, type ChatTransport } from './chatSession';
import { DENY_WITH_MESSAGE, NativeApprovals, NativeChatUi, type NativeStream } from './nativeChatUi';
import type { ProposalEditors } from './proposals';
import type { ToolConfirmParams, ToolConfirmResult } from './protocol';
import type { Owner, SessionRouter } from './sessionRouter';
import type { WaitingNotice } from './waitingNotice';

export const PARTICIPANT_ID = 'gatehouse.agent';
export const VENDOR = 'gatehouse';
const MODEL_ID = 'gatehouse';

/** One `@gatehouse` request: the turn a session's events and approvals go to. */
export class NativeTurn implements Owner {
  readonly frontEnd = 'native' as const;
  session: ChatSession | undefined;

  constructor(readonly ui: NativeChatUi) {}
}

export interface NativeChatDeps {
  transport: ChatTransport;
  router: SessionRouter;
  notice: WaitingNotice;
  folder(): string;
  log(message: string): void;
  onTurnEnd(): void;
  /** Edits: the diff editors of proposals ("Open diff"; the user's version is sent on Accept). */
  proposals?: ProposalEditors;
}

/** A response stream whose writes after the response closed are dropped, not thrown. */
function streamOf(stream: vscode.ChatResponseStream, log: (message: string) => void): NativeStream {
  const safely = (what: string, write: () => void): void => {
    try {
      write();
    } catch (error) {
      log(`Chat view: ${what} not shown (${String(error)})`);
    }
  };
  return {
    // Model text is never trusted: no command links, no HTML.
    markdown: (text) => safely('markdown', () => stream.markdown(new vscode.MarkdownString(text, false))),
    progress: (text) => safely('progress', () => stream.progress(text)),
    button: (title, command, args) => safely('button', () => stream.button({ title, command, arguments: args })),
  };
}

function lastSessionId(history: vscode.ChatContext['history']): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i];
    if (turn instanceof vscode.ChatResponseTurn && turn.participant === PARTICIPANT_ID) {
      const id: unknown = turn.result.metadata?.gatehouseSessionId;
      return typeof id === 'string' ? id : undefined;
    }
  }
  return undefined;
}

export class NativeChat implements vscode.Disposable {
  readonly approvals = new NativeApprovals();
  private readonly turns = new Set<NativeTurn>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly deps: NativeChatDeps,
  ) {}

  /** Registers the participant and the model; false where this VS Code (or fork) has no Chat API. */
  register(): boolean {
    if (typeof vscode.chat?.createChatParticipant !== 'function' || typeof vscode.lm?.registerLanguageModelChatProvider !== 'function') {
      this.deps.log('This VS Code has no Chat API: @gatehouse is not available (the Gatehouse view is).');
      return false;
    }
    this.disposables.push(vscode.lm.registerLanguageModelChatProvider(VENDOR, this.modelProvider()));
    // Without this call VS Code never asks the provider for its models (measured in 1.139).
    void Promise.resolve(vscode.lm.selectChatModels({ vendor: VENDOR })).catch((error: unknown) => this.deps.log(`selectChatModels: ${String(error)}`));
    const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, (request, context, stream, token) => this.handle(request, context, stream, token));
    participant.iconPath = vscode.Uri.joinPath(this.context.extensionUri, 'media', 'gatehouse.svg');
    this.disposables.push(new vscode.Disposable(() => participant.dispose()));
    return true;
  }

  get running(): boolean {
    return this.turns.size > 0;
  }

  /** Stops the turn of `sessionId`, or every running `@gatehouse` turn. */
  stop(sessionId?: string): void {
    for (const turn of this.turns) {
      if (sessionId === undefined || turn.session?.currentSessionId === sessionId) void turn.session?.stop();
    }
  }

  /** Asks in the response of the turn that owns the session; resolves undefined when withdrawn. */
  ask(params: ToolConfirmParams, token: vscode.CancellationToken, turn: NativeTurn): Promise<ToolConfirmResult | undefined> {
    let view;
    try {
      view = describeApproval(params, this.deps.folder());
    } catch (error) {
      this.deps.log(`toolConfirm (Chat view): ${String(error)}; denied`);
      return Promise.resolve({ decision: 'deny' });
    }
    const live = this.turns.has(turn) ? turn.ui : undefined; // a finished response cannot ask: deny
    if (live !== undefined) this.deps.notice.add({ approvalId: view.approvalId, tool: view.tool, frontEnd: 'native' });
    if (live !== undefined) this.deps.proposals?.register(view.approvalId, params.edits);
    return this.approvals.ask(view, live, token, [view.sessionId], () => {
      this.deps.notice.remove(view.approvalId);
      this.deps.proposals?.release(view.approvalId).catch((error: unknown) => this.deps.log(`closing the diff editors failed: ${String(error)}`));
    });
  }

  /** `gatehouse.openProposalDiff` (an edit's "Open diff" button in the response). */
  async openDiff(approvalId: unknown, path: unknown): Promise<void> {
    if (typeof approvalId !== 'string' || typeof path !== 'string' || !this.approvals.has(approvalId) || this.deps.proposals === undefined) {
      void vscode.window.showInformationMessage('Gatehouse: this approval is no longer waiting (it was answered, stopped or timed out).');
      return;
    }
    try {
      await this.deps.proposals.open(approvalId, path);
    } catch (error) {
      void vscode.window.showErrorMessage(`Gatehouse: cannot open the diff of ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** `gatehouse.answerApproval` (the response's buttons). */
  async answer(approvalId: unknown, choice: unknown): Promise<void> {
    if (typeof approvalId !== 'string' || !this.approvals.has(approvalId)) {
      void vscode.window.showInformationMessage('Gatehouse: this approval is no longer waiting (it was answered, stopped or timed out).');
      return;
    }
    if (choice === DENY_WITH_MESSAGE) {
      const message = await vscode.window.showInputBox({
        title: 'Gatehouse: deny, with a message to the model',
        prompt: 'Why, or what to do instead (the call is denied whatever you type, or if you cancel)',
      });
      this.approvals.deny(approvalId, message);
      return;
    }
    // An allowed edit takes along what the user changed in the diff editor, as it is now; any
    // failure to read it is a denial.
    const view = this.approvals.view(approvalId);
    const chosen = view?.choices.find((c) => c.id === choice);
    if (view?.edits !== undefined && chosen !== undefined && chosen.kind !== 'deny' && this.deps.proposals !== undefined) {
      let edits;
      try {
        edits = await this.deps.proposals.collect(approvalId);
      } catch (error) {
        this.deps.log(`reading your version of the edit failed (${String(error)}); denied`);
        this.approvals.deny(approvalId);
        return;
      }
      this.approvals.answer(approvalId, choice, undefined, edits);
      return;
    }
    this.approvals.answer(approvalId, choice);
  }

  /** Shows VS Code's Chat view (where a waiting approval is), leaving its input alone. */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand('workbench.action.chat.open');
  }

  /** Opens VS Code's Chat view with `@gatehouse` in the input. */
  async open(): Promise<void> {
    await vscode.commands.executeCommand('workbench.action.chat.open', {
      query: '@gatehouse ',
      isPartialQuery: true,
      modelSelector: { vendor: VENDOR, id: MODEL_ID },
    });
  }

  dispose(): void {
    this.approvals.denyAll();
    for (const d of this.disposables) d.dispose();
  }

  private async handle(
    request: vscode.ChatRequest,
    context: vscode.ChatContext,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<vscode.ChatResult> {
    const previous = lastSessionId(context.history);
    const sessionId = previous !== undefined && this.deps.router.knows(previous) ? previous : undefined;
    const ui = new NativeChatUi(streamOf(stream, (m) => this.deps.log(m)));
    if (previous !== undefined && sessionId === undefined) {
      stream.markdown('_The Gatehouse server restarted since the last answer: this is a new session, and the model does not see the earlier turns._\n\n');
    }
    const turn = new NativeTurn(ui);
    const session = new ChatSession(this.deps.router.transport(turn, this.deps.transport), ui, { onTurnEnd: () => this.deps.onTurnEnd() }, sessionId);
    turn.session = session;
    this.turns.add(turn);
    const cancel = token.onCancellationRequested(() => void session.stop());
    try {
      if (request.prompt.trim() === '') stream.markdown('Ask Gatehouse something: `@gatehouse how many lines are in each Python file here?`');
      else await session.send(request.prompt);
    } finally {
      cancel.dispose();
      this.turns.delete(turn);
    }
    return { metadata: { gatehouseSessionId: session.currentSessionId } };
  }

  /** The model VS Code needs behind a participant; Gatehouse runs its own model and loop. */
  private modelProvider(): vscode.LanguageModelChatProvider {
    const info: vscode.LanguageModelChatInformation = {
      id: MODEL_ID,
      name: 'Gatehouse',
      family: 'gatehouse',
      version: '0.1.0',
      tooltip: 'Gatehouse runs its own local model and agent loop; ask it with @gatehouse.',
      detail: 'local',
      maxInputTokens: 32768,
      maxOutputTokens: 4096,
      capabilities: { toolCalling: true },
    };
    return {
      provideLanguageModelChatInformation: () => [info],
      provideLanguageModelChatResponse: (_model, _messages, _options, progress) => {
        progress.report(new vscode.LanguageModelTextPart('Gatehouse answers as @gatehouse in this chat, with its own model, tools and approvals: start your message with @gatehouse.'));
        return Promise.resolve();
      },
      provideTokenCount: (_model, text) => Promise.resolve(Math.ceil((typeof text === 'string' ? text : JSON.stringify(text.content)).length / 4)),
    };
  }
}
