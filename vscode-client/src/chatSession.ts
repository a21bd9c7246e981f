/**
 * One chat conversation: sends `agent/chat`, turns `agent/stream` events into UI calls, stops a
 * turn (`agent/cancel`) and starts new sessions. Talks to the server and the UI only through the
 * small interfaces below, so it is unit-tested without VS Code.
 */
import {
  ErrorCodes,
  type CancelResult,
  type ChatParams,
  type ChatResult,
  type StopReason,
  type StreamEvent,
  type ToolStatus,
} from './protocol';
import { diffCounts } from './diffs';
import { visible } from './display';
import { isolationText, toolText } from './toolText';

export interface ToolStartView {
  id: string;
  name: string;
  /** The code, command or JSON arguments, in full. */
  args: string;
  awaitingConfirmation: boolean;
}

export interface ToolEndView {
  id: string;
  status: ToolStatus;
  exitCode: number | null;
  result: string;
  /** e.g. "strong · network off" when code ran. */
  isolation?: string;
  /** Auto-run paths (.git, hooks, .vscode, ...) the call touched, and what was done, one line each. */
  protected?: string[];
  /** Files an edit changed, one line each: "path: modify (+1 -1)". */
  edits?: string[];
}

export interface ChatUi {
  setRunning(running: boolean): void;
  addUserMessage(text: string): void;
  beginTurn(): void;
  appendContent(text: string): void;
  appendReasoning(text: string): void;
  previewToolArgs(index: number, text: string): void;
  startTool(tool: ToolStartView): void;
  appendToolOutput(id: string, text: string): void;
  endTool(end: ToolEndView): void;
  setStatus(text: string): void;
  /** '' clears the error. */
  showError(text: string): void;
  /** The turn is over; `note` ('' for a normal end) stays under the answer. */
  endTurn(note: string): void;
  clear(): void;
}

export interface ChatTransport {
  chat(params: ChatParams, signal: AbortSignal): Promise<ChatResult>;
  cancel(sessionId: string): Promise<CancelResult>;
}

export interface ChatSessionHooks {
  onTurnEnd?(result: ChatResult | undefined): void;
}

const STOP_NOTES: Record<StopReason, string> = {
  end_turn: '',
  max_tokens: 'Stopped: the model reached its token limit.',
  tool_limit: 'Stopped: the tool call limit was reached.',
  cancelled: 'Stopped.',
  error: 'Stopped: the model failed (see the status above).',
};

interface Turn {
  generation: number;
  abort: AbortController;
}

function errorCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function errorMessage(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : String(error);
}

export class ChatSession {
  private sessionId: string | undefined;
  private turn: Turn | undefined;
  private generation = 0;
  /** Sessions left behind by New Session: their late events are dropped. */
  private readonly retired = new Set<string>();

  constructor(
    private readonly transport: ChatTransport,
    private readonly ui: ChatUi,
    private readonly hooks: ChatSessionHooks = {},
    /** Continue this server session (VS Code's Chat view keeps it in the chat's history). */
    sessionId?: string,
  ) {
    this.sessionId = sessionId;
  }

  get running(): boolean {
    return this.turn !== undefined;
  }

  get currentSessionId(): string | undefined {
    return this.sessionId;
  }

  /** Runs one turn; resolves when it is over (never rejects: errors go to the UI). */
  async send(prompt: string): Promise<void> {
    if (prompt.trim() === '') return;
    if (this.turn !== undefined) {
      this.ui.showError('A turn is still running: wait for it or press Stop.');
      return;
    }
    const turn: Turn = { generation: ++this.generation, abort: new AbortController() };
    this.turn = turn;
    this.ui.showError('');
    this.ui.addUserMessage(prompt);
    this.ui.beginTurn();
    this.ui.setRunning(true);
    const params: ChatParams = { prompt };
    if (this.sessionId !== undefined) params.sessionId = this.sessionId;
    try {
      const result = await this.transport.chat(params, turn.abort.signal);
      if (this.turn !== turn) return;
      this.sessionId = result.sessionId;
      this.finishTurn(STOP_NOTES[result.stopReason] ?? '', result);
    } catch (error) {
      if (this.turn !== turn) return;
      if (errorCode(error) === ErrorCodes.requestCancelled || turn.abort.signal.aborted) {
        this.finishTurn(STOP_NOTES.cancelled, undefined);
      } else if (errorCode(error) === ErrorCodes.invalidParams && params.sessionId !== undefined && /unknown session/.test(errorMessage(error))) {
        // The server no longer has it (sessions are not saved, or it was deleted): start over.
        this.sessionId = undefined;
        this.ui.showError('That session is gone (it was deleted, or sessions are not saved): send again to start a new one.');
        this.finishTurn('The turn did not run.', undefined);
      } else {
        this.ui.showError(errorMessage(error));
        this.finishTurn('The turn failed.', undefined);
      }
    }
  }

  /** Stops the running turn: `agent/cancel` once the session is known, else cancels the request itself. */
  async stop(): Promise<void> {
    const turn = this.turn;
    if (turn === undefined) return;
    this.ui.setStatus('Stopping…');
    if (this.sessionId === undefined) {
      turn.abort.abort();
      return;
    }
    try {
      await this.transport.cancel(this.sessionId);
    } catch (error) {
      this.ui.showError(`Stop failed: ${errorMessage(error)}`);
      turn.abort.abort();
    }
  }

  /** Forgets the conversation; a running turn is stopped and its late events are ignored. */
  newSession(): void {
    const turn = this.turn;
    if (turn !== undefined) {
      if (this.sessionId !== undefined) {
        this.retired.add(this.sessionId);
        this.transport.cancel(this.sessionId).catch(() => turn.abort.abort());
      } else {
        turn.abort.abort();
      }
    }
    this.turn = undefined;
    this.sessionId = undefined;
    this.generation++;
    this.ui.clear();
    this.ui.setRunning(false);
    this.ui.setStatus('New session.');
  }

  /** Continue a saved session (its history is shown by the caller). */
  adopt(sessionId: string): void {
    this.newSession();
    this.retired.delete(sessionId);
    this.sessionId = sessionId;
  }

  /**
   * The server process was restarted. A running turn is lost; the conversation itself is saved by
   * the server, so the next message continues it (its "allow for session" grants are not revived).
   */
  serverRestarted(): void {
    if (this.turn !== undefined) {
      this.turn = undefined;
      this.ui.showError('The Gatehouse server restarted during the turn.');
      this.ui.endTurn('The turn was lost.');
      this.ui.setRunning(false);
    }
    if (this.sessionId !== undefined) {
      this.ui.setStatus('Server restarted: the next message continues this session (approvals are asked again).');
    }
  }

  handleEvent(event: StreamEvent): void {
    if (this.turn === undefined || typeof event !== 'object' || event === null) return;
    if (this.retired.has(event.sessionId)) return;
    if (this.sessionId === undefined) this.sessionId = event.sessionId;
    else if (event.sessionId !== this.sessionId) return;
    switch (event.type) {
      case 'content':
        this.ui.appendContent(visible(event.text));
        break;
      case 'reasoning':
        this.ui.appendReasoning(visible(event.text));
        break;
      case 'tool_args':
        this.ui.previewToolArgs(event.index, visible(event.text));
        break;
      case 'tool_start':
        this.ui.startTool({
          id: event.toolCallId,
          name: visible(event.name),
          args: toolText(event.name, event.arguments).text,
          awaitingConfirmation: event.awaitingConfirmation,
        });
        break;
      case 'tool_output':
        this.ui.appendToolOutput(event.toolCallId, visible(event.text));
        break;
      case 'tool_end': {
        const end: ToolEndView = {
          id: event.toolCallId,
          status: event.status,
          exitCode: event.exitCode ?? null,
          result: visible(event.result ?? ''),
        };
        if (event.sandbox !== undefined) end.isolation = isolationText(event.sandbox);
        if (event.protected !== undefined && event.protected.length > 0) {
          end.protected = event.protected.map((p) => visible(`${p.path}: ${p.action} (${p.detail})`));
        }
        if (event.edits !== undefined && event.edits.length > 0) {
          end.edits = event.edits.map((e) => {
            const { added, removed } = diffCounts(e.diff);
            return visible(`${e.path}: ${e.action} (+${added} -${removed}${e.userEdited ? ', your version' : ''})`);
          });
        }
        this.ui.endTool(end);
        break;
      }
      case 'status':
        this.ui.setStatus(visible(event.text));
        break;
      default:
        break;
    }
  }

  private finishTurn(note: string, result: ChatResult | undefined): void {
    this.turn = undefined;
    this.ui.endTurn(note);
    this.ui.setRunning(false);
    this.ui.setStatus(note === '' ? 'Ready.' : note);
    try {
      this.hooks.onTurnEnd?.(result);
    } catch {
      // A failing status refresh must not break the chat.
    }
  }
}
