/**
 * Gatehouse's memory in the editor: reopening a saved session (its history replayed into the
 * chat view), the files each turn changed (a click opens the diff) and "Undo this turn"
 * (`agent/rewind`, asking before it overwrites files changed by hand). Through small interfaces,
 * so it is unit-tested without VS Code; every text that came from the model or the workspace goes
 * through the display rule.
 */
import type { ChatUi, ToolEndView } from './chatSession';
import { visible } from './display';
import type {
  ChangesResult,
  ChatResult,
  FileChangeInfo,
  HistoryTurn,
  RewindParams,
  RewindResult,
  SessionInfo,
  SessionLoadResult,
  SessionsResult,
} from './protocol';
import { toolText } from './toolText';

export interface MemoryTransport {
  sessions(): Promise<SessionsResult>;
  loadSession(sessionId: string): Promise<SessionLoadResult>;
  deleteSession(sessionId: string): Promise<{ deleted: boolean }>;
  changes(sessionId: string, turnId: string): Promise<ChangesResult>;
  rewind(params: RewindParams): Promise<RewindResult>;
}

export interface FileChangeView {
  path: string;
  action: FileChangeInfo['action'];
}

/** What the chat view shows of each turn's memory. */
export interface TurnMemoryUi {
  /** The turn that just ended (or was replayed) is `turnId`. */
  tagTurn(turnId: string): void;
  /** The files `turnId` changed; each can be opened as a diff, the turn undone. */
  showTurnChanges(turnId: string, files: FileChangeView[]): void;
  /** The turn was undone (its files written back, the conversation rewound). */
  markTurnUndone(turnId: string, note: string): void;
}

export interface SessionPickItem {
  label: string;
  description: string;
  detail: string;
  sessionId: string;
}

/** What the memory needs from VS Code itself. */
export interface MemoryShell {
  /** A quick pick of sessions; `remove` is called for the delete button. */
  pickSession(items: SessionPickItem[], remove: (item: SessionPickItem) => Promise<void>): Promise<SessionPickItem | undefined>;
  /** A modal question; resolves with the chosen action, undefined when dismissed. */
  confirm(message: string, detail: string, action: string): Promise<boolean>;
  openDiff(title: string, diff: string): Promise<void>;
  showInfo(message: string): void;
  showError(message: string): void;
}

/** The chat session as the memory drives it. */
export interface SessionHost {
  readonly currentSessionId: string | undefined;
  readonly running: boolean;
  /** Forget the current conversation and continue `sessionId` (its history is shown by us). */
  adopt(sessionId: string): void;
}

function when(iso: string): string {
  return iso.replace('T', ' ').replace(/Z$/, '').slice(0, 16);
}

export function sessionPickItems(sessions: SessionInfo[], current: string | undefined): SessionPickItem[] {
  return sessions.map((s) => ({
    label: visible(s.title === '' ? '(untitled)' : s.title),
    description: `${s.turns} turn${s.turns === 1 ? '' : 's'} · ${when(s.lastActivity)}${s.sessionId === current ? ' · current' : ''}`,
    detail: s.model === null ? s.sessionId : `${s.sessionId} · ${visible(s.model)}`,
    sessionId: s.sessionId,
  }));
}

const STOP_NOTES: Record<string, string> = {
  end_turn: '',
  max_tokens: 'Stopped: the model reached its token limit.',
  tool_limit: 'Stopped: the tool call limit was reached.',
  cancelled: 'Stopped.',
};

/** Replays a saved session's turns into the chat view. */
export function replayHistory(ui: ChatUi & TurnMemoryUi, loaded: SessionLoadResult): void {
  for (const turn of loaded.turns) {
    ui.addUserMessage(visible(turn.prompt));
    ui.beginTurn();
    for (const call of turn.toolCalls) {
      ui.startTool({ id: call.id, name: visible(call.name), args: toolText(call.name, call.arguments).text, awaitingConfirmation: false });
      const end: ToolEndView = {
        id: call.id,
        status: call.status ?? 'cancelled',
        exitCode: call.exitCode,
        result: visible(call.result ?? 'The server stopped before this call ended.'),
      };
      ui.endTool(end);
    }
    if (turn.text !== '') ui.appendContent(visible(turn.text));
    ui.endTurn(turnNote(turn));
    ui.tagTurn(turn.turnId);
  }
}

function turnNote(turn: HistoryTurn): string {
  if (turn.rewound) return 'Rewound: the model no longer sees this turn.';
  if (turn.stopReason === null) return 'Interrupted: the server stopped during this turn.';
  return STOP_NOTES[turn.stopReason] ?? '';
}

function describeFailure(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : String(error);
}

export class Memory {
  /** The diffs of the turns shown, by turn id (fetched once). */
  private readonly changesByTurn = new Map<string, ChangesResult>();
  private readonly sessionOfTurn = new Map<string, string>();

  constructor(
    private readonly transport: MemoryTransport,
    private readonly ui: ChatUi & TurnMemoryUi,
    private readonly shell: MemoryShell,
    private readonly host: SessionHost,
  ) {}

  /** "Open Session…": pick a saved session, replay its history, continue it. */
  async openSession(): Promise<void> {
    let listed: SessionsResult;
    try {
      listed = await this.transport.sessions();
    } catch (error) {
      this.shell.showError(`Could not list the sessions: ${describeFailure(error)}`);
      return;
    }
    if (listed.sessions.length === 0) {
      this.shell.showInfo('No saved Gatehouse session in this workspace yet.');
      return;
    }
    const items = sessionPickItems(listed.sessions, this.host.currentSessionId);
    const chosen = await this.shell.pickSession(items, (item) => this.deleteSession(item));
    if (chosen !== undefined) await this.load(chosen.sessionId);
  }

  async deleteSession(item: SessionPickItem): Promise<void> {
    const sure = await this.shell.confirm(`Delete the session "${item.label}"?`, 'Its conversation is deleted; the audit log keeps its records.', 'Delete');
    if (!sure) return;
    try {
      await this.transport.deleteSession(item.sessionId);
    } catch (error) {
      this.shell.showError(`Could not delete the session: ${describeFailure(error)}`);
    }
  }

  async load(sessionId: string): Promise<void> {
    if (this.host.running) {
      this.shell.showError('A turn is running: stop it before opening another session.');
      return;
    }
    let loaded: SessionLoadResult;
    try {
      loaded = await this.transport.loadSession(sessionId);
    } catch (error) {
      this.shell.showError(`Could not open the session: ${describeFailure(error)}`);
      return;
    }
    this.host.adopt(loaded.sessionId);
    replayHistory(this.ui, loaded);
    this.ui.setStatus('Session reopened: "allow for session" approvals are asked again.');
    for (const turn of loaded.turns) {
      if (turn.changedFiles && !turn.rewound) await this.showChanges(loaded.sessionId, turn.turnId);
    }
  }

  /** After a live turn: tag it, and show the files it changed. */
  async afterTurn(result: ChatResult | undefined): Promise<void> {
    if (result === undefined) return;
    this.ui.tagTurn(result.turnId);
    if (result.toolCalls.length > 0) await this.showChanges(result.sessionId, result.turnId);
  }

  private async showChanges(sessionId: string, turnId: string): Promise<void> {
    let changes: ChangesResult;
    try {
      changes = await this.transport.changes(sessionId, turnId);
    } catch {
      return; // memory is unavailable: the turn just shows no file list
    }
    if (!changes.checkpoint || changes.files.length === 0) return;
    this.changesByTurn.set(turnId, changes);
    this.sessionOfTurn.set(turnId, sessionId);
    this.ui.showTurnChanges(turnId, changes.files.map((f) => ({ path: visible(f.path), action: f.action })));
  }

  /** A click on a changed file: its unified diff. */
  async openDiff(turnId: string, path: string): Promise<void> {
    const file = this.changesByTurn.get(turnId)?.files.find((f) => visible(f.path) === path);
    if (file === undefined) return;
    await this.shell.openDiff(`${visible(file.path)} (${file.action} in turn ${turnId.split(':').pop() ?? ''})`, file.diff);
  }

  /** "Undo this turn": files written back, the conversation rewound; asks before overwriting. */
  async undo(turnId: string): Promise<void> {
    const sessionId = this.sessionOfTurn.get(turnId) ?? this.host.currentSessionId;
    if (sessionId === undefined) return;
    if (this.host.running) {
      this.shell.showError('A turn is running: stop it before undoing one.');
      return;
    }
    const sure = await this.shell.confirm(
      'Undo this turn?',
      'Files it and every later turn changed go back to how they were before it, and the model forgets it and every later turn.',
      'Undo',
    );
    if (!sure) return;
    const params: RewindParams = { sessionId, turnId, scope: 'both' };
    try {
      let result = await this.transport.rewind(params);
      if (!result.applied && result.conflicts.length > 0) {
        const list = result.conflicts.map((c) => `${visible(c.path)}: ${visible(c.detail)}`).join('\n');
        const overwrite = await this.shell.confirm('Some files were changed after this turn. Overwrite them too?', list, 'Overwrite');
        if (!overwrite) return;
        result = await this.transport.rewind({ ...params, force: true });
      }
      const left = result.skipped.length > 0 ? `; ${result.skipped.length} left as they are` : '';
      this.ui.markTurnUndone(turnId, `Undone: ${result.files.length} file(s) written back${left}.`);
      for (const skipped of result.skipped) this.shell.showInfo(`Not written back: ${visible(skipped.path)} (${visible(skipped.detail)})`);
    } catch (error) {
      this.shell.showError(`Could not undo the turn: ${describeFailure(error)}`);
    }
  }
}
