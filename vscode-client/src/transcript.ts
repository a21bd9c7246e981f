/**
 * The chat transcript as it happened: user prompts and assistant turns, each turn holding its
 * items in arrival order — text, tool card, text, tool card, text — so an answer written after a
 * tool ran is shown after that tool, never above it.
 *
 * One model, two users: the extension host keeps the transcript (the source of truth, sent whole
 * as a snapshot to a webview that loads or reloads), and the webview applies the same messages to
 * its own copy and re-renders only what each message changed (`Change`). No DOM, no VS Code: unit
 * tested with node --test.
 *
 * Restoring from elsewhere (the server's persisted history, issue 11) is `replay`: history maps
 * to the same messages, in order.
 */
import type { ApprovalOutcome, ApprovalView } from './approvals';
import type { ToolEndView, ToolStartView } from './chatSession';
import type { FileChangeView } from './memory';

export interface TextItem {
  kind: 'text';
  text: string;
  /** False once something else followed it in the turn (or the turn ended): its markdown is final. */
  open: boolean;
}
export interface ReasoningItem {
  kind: 'reasoning';
  text: string;
}
/** The model writing a tool call: shown dimmed until the call starts (it then takes this place). */
export interface PreviewItem {
  kind: 'preview';
  index: number;
  text: string;
}
export interface ToolItem {
  kind: 'tool';
  tool: ToolStartView;
  output: string;
  /** awaiting approval, running, withdrawn, then the final ToolStatus. */
  status: string;
  final: boolean;
  end?: ToolEndView;
  /** The approval waiting inside this card. */
  approval?: ApprovalView;
  /** The id of the last approval asked for this call. */
  approvalId?: string;
  /** What became of the last approval ("Allowed once", "You chose: Allow `npm test *` in this session", ...). */
  approvalNote?: string;
  /** How the last approval ended: a choice's kind, or withdrawn. */
  approvalOutcome?: ApprovalOutcome;
}
/** An approval whose tool card is not in the transcript (e.g. a session left by New Session). */
export interface ApprovalItem {
  kind: 'approval';
  approval?: ApprovalView;
  approvalId: string;
  approvalNote?: string;
  approvalOutcome?: ApprovalOutcome;
}
export type TurnItem = TextItem | ReasoningItem | PreviewItem | ToolItem | ApprovalItem;

export interface UserEntry {
  kind: 'user';
  text: string;
}
export interface TurnEntry {
  kind: 'turn';
  items: TurnItem[];
  /** The note under a turn that ended early ('' otherwise). */
  note: string;
  open: boolean;
  /** The server's id of the turn, once it ended (memory: its changes, undo). */
  turnId?: string;
  /** The files the turn changed (each opens its diff), with "Undo this turn". */
  changes?: FileChangeView[];
  /** Set once the turn was undone: what was written back. */
  undone?: string;
}
export type Entry = UserEntry | TurnEntry;

export interface TranscriptState {
  entries: Entry[];
  running: boolean;
  status: string;
  error: string;
}

/** Host -> webview messages; every one but `reveal` and `snapshot` is a step of the transcript. */
export type ToView =
  | { type: 'snapshot'; state: TranscriptState }
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
  | { type: 'reveal'; approvalId: string };

/** What one message changed, for a renderer that updates only that. */
export type Change =
  | { kind: 'reset' }
  | { kind: 'entryAdded'; entry: number }
  | { kind: 'itemAdded'; entry: number; item: number }
  | { kind: 'itemChanged'; entry: number; item: number; delta?: string }
  | { kind: 'itemReplaced'; entry: number; item: number }
  | { kind: 'itemRemoved'; entry: number; item: number }
  | { kind: 'turnChanged'; entry: number }
  | { kind: 'chrome' };

export const OUTCOME_NOTES: Readonly<Record<ApprovalOutcome, string>> = {
  allow_once: 'Allowed once',
  allow_session: 'Allowed for this session',
  allow_always: 'Always allowed in this workspace',
  deny: 'Denied',
  withdrawn: 'Approval withdrawn',
};

/** The note an answered approval leaves: a scoped choice says what it allowed. */
export function outcomeNote(outcome: ApprovalOutcome, label?: string): string {
  const scoped = outcome === 'allow_session' || outcome === 'allow_always';
  return scoped && label !== undefined && label !== '' ? `You chose: ${label}` : OUTCOME_NOTES[outcome];
}

export function emptyState(): TranscriptState {
  return { entries: [], running: false, status: '', error: '' };
}

function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

export class Transcript {
  state: TranscriptState;

  constructor(state: TranscriptState = emptyState()) {
    this.state = copy(state);
  }

  /** A deep copy, safe to post to a webview or keep. */
  snapshot(): TranscriptState {
    return copy(this.state);
  }

  /** Applies messages in order (restoring from a recorded history). */
  replay(messages: Iterable<ToView>): void {
    for (const message of messages) this.apply(message);
  }

  /** The pending approvals (their cards are still waiting). */
  pendingApprovals(): ApprovalView[] {
    const found: ApprovalView[] = [];
    for (const entry of this.state.entries) {
      if (entry.kind !== 'turn') continue;
      for (const item of entry.items) {
        if ((item.kind === 'tool' || item.kind === 'approval') && item.approval !== undefined) found.push(item.approval);
      }
    }
    return found;
  }

  /** Forgets the conversation but keeps the approvals `keep` says are still waiting. */
  clear(keep: (approvalId: string) => boolean = () => false): void {
    const waiting = this.pendingApprovals().filter((a) => keep(a.approvalId));
    this.state.entries = [];
    this.state.error = '';
    this.state.status = '';
    if (waiting.length > 0) {
      this.state.entries.push({
        kind: 'turn',
        items: waiting.map((approval) => ({ kind: 'approval', approval, approvalId: approval.approvalId })),
        note: '',
        open: false,
      });
    }
  }

  apply(message: ToView): Change[] {
    const s = this.state;
    switch (message.type) {
      case 'snapshot':
        this.state = copy(message.state);
        return [{ kind: 'reset' }];
      case 'setRunning':
        s.running = message.running;
        return [{ kind: 'chrome' }];
      case 'status':
        s.status = message.text;
        return [{ kind: 'chrome' }];
      case 'error':
        s.error = message.text;
        return [{ kind: 'chrome' }];
      case 'user':
        s.entries.push({ kind: 'user', text: message.text });
        return [{ kind: 'entryAdded', entry: s.entries.length - 1 }];
      case 'beginTurn':
        return this.beginTurn();
      case 'content':
      case 'reasoning':
        return this.appendText(message.type === 'content' ? 'text' : 'reasoning', message.text);
      case 'toolArgs':
        return this.preview(message.index, message.text);
      case 'toolStart':
        return this.startTool(message.tool);
      case 'toolOutput':
        return this.onTool(message.id, (item) => {
          item.output += message.text;
          if (!item.final && item.approval === undefined) item.status = 'running';
          return message.text;
        });
      case 'toolEnd':
        return this.onTool(message.end.id, (item) => {
          if (item.output === '' && message.end.result !== '') item.output = message.end.result;
          item.end = message.end;
          item.status = message.end.status;
          item.final = true;
          return undefined;
        });
      case 'endTurn':
        return this.endTurn(message.note);
      case 'approval':
        return this.addApproval(message.view);
      case 'closeApproval':
        return this.closeApproval(message.approvalId, message.outcome, message.label);
      case 'tagTurn':
        return this.tagTurn(message.turnId);
      case 'turnChanges':
        return this.onTurn(message.turnId, (turn) => {
          turn.changes = message.files;
        });
      case 'turnUndone':
        return this.onTurn(message.turnId, (turn) => {
          turn.undone = message.note;
        });
      case 'reveal':
        return [];
      default:
        return [];
    }
  }

  // --- turns and items ----------------------------------------------------------------------------

  private openTurnIndex(): number {
    const last = this.state.entries.length - 1;
    const entry = this.state.entries[last];
    return entry !== undefined && entry.kind === 'turn' && entry.open ? last : -1;
  }

  private beginTurn(): Change[] {
    const changes = this.closeOpenTurn('');
    this.state.entries.push({ kind: 'turn', items: [], note: '', open: true });
    changes.push({ kind: 'entryAdded', entry: this.state.entries.length - 1 });
    return changes;
  }

  /** The open turn, started if there is none. */
  private turn(changes: Change[]): [number, TurnEntry] {
    let index = this.openTurnIndex();
    if (index < 0) {
      changes.push(...this.beginTurn());
      index = this.state.entries.length - 1;
    }
    return [index, this.state.entries[index] as TurnEntry];
  }

  /** Marks the last item final (its markdown no longer changes) when something follows it. */
  private sealLast(entry: number, turn: TurnEntry, changes: Change[]): void {
    const last = turn.items[turn.items.length - 1];
    if (last !== undefined && last.kind === 'text' && last.open) {
      last.open = false;
      changes.push({ kind: 'itemChanged', entry, item: turn.items.length - 1 });
    }
  }

  private push(entry: number, turn: TurnEntry, item: TurnItem, changes: Change[]): void {
    this.sealLast(entry, turn, changes);
    turn.items.push(item);
    changes.push({ kind: 'itemAdded', entry, item: turn.items.length - 1 });
  }

  private appendText(kind: 'text' | 'reasoning', text: string): Change[] {
    if (text === '') return [];
    const changes: Change[] = [];
    const [entry, turn] = this.turn(changes);
    const index = turn.items.length - 1;
    const last = turn.items[index];
    if (last !== undefined && last.kind === kind && (last.kind === 'reasoning' || last.open)) {
      last.text += text;
      changes.push({ kind: 'itemChanged', entry, item: index, delta: text });
    } else {
      this.push(entry, turn, kind === 'text' ? { kind, text, open: true } : { kind, text }, changes);
    }
    return changes;
  }

  private preview(index: number, text: string): Change[] {
    const changes: Change[] = [];
    const [entry, turn] = this.turn(changes);
    const at = turn.items.findIndex((i) => i.kind === 'preview' && i.index === index);
    const item = turn.items[at];
    if (item !== undefined && item.kind === 'preview') {
      item.text += text;
      changes.push({ kind: 'itemChanged', entry, item: at, delta: text });
    } else {
      this.push(entry, turn, { kind: 'preview', index, text }, changes);
    }
    return changes;
  }

  private startTool(tool: ToolStartView): Change[] {
    const changes: Change[] = [];
    const [entry, turn] = this.turn(changes);
    const item: ToolItem = { kind: 'tool', tool, output: '', status: tool.awaitingConfirmation ? 'awaiting approval' : 'running', final: false };
    // The call takes the place of the oldest preview of it: the card appears where it was written.
    const at = turn.items.findIndex((i) => i.kind === 'preview');
    if (at >= 0) {
      turn.items[at] = item;
      changes.push({ kind: 'itemReplaced', entry, item: at });
      return changes;
    }
    this.push(entry, turn, item, changes);
    return changes;
  }

  private findItem(match: (item: TurnItem) => boolean): [number, number] | undefined {
    const entries = this.state.entries;
    for (let e = entries.length - 1; e >= 0; e--) {
      const entry = entries[e];
      if (entry === undefined || entry.kind !== 'turn') continue;
      for (let i = entry.items.length - 1; i >= 0; i--) {
        const item = entry.items[i];
        if (item !== undefined && match(item)) return [e, i];
      }
    }
    return undefined;
  }

  private item(at: [number, number]): TurnItem {
    return (this.state.entries[at[0]] as TurnEntry).items[at[1]] as TurnItem;
  }

  private onTool(id: string, update: (item: ToolItem) => string | undefined): Change[] {
    const at = this.findItem((i) => i.kind === 'tool' && i.tool.id === id);
    if (at === undefined) return [];
    const delta = update(this.item(at) as ToolItem);
    return [delta === undefined ? { kind: 'itemChanged', entry: at[0], item: at[1] } : { kind: 'itemChanged', entry: at[0], item: at[1], delta }];
  }

  private closeOpenTurn(note: string): Change[] {
    const index = this.openTurnIndex();
    if (index < 0) return [];
    const turn = this.state.entries[index] as TurnEntry;
    const changes: Change[] = [];
    for (let i = turn.items.length - 1; i >= 0; i--) {
      if (turn.items[i]?.kind === 'preview') {
        turn.items.splice(i, 1);
        changes.push({ kind: 'itemRemoved', entry: index, item: i });
      }
    }
    this.sealLast(index, turn, changes);
    turn.open = false;
    turn.note = note;
    changes.push({ kind: 'turnChanged', entry: index });
    return changes;
  }

  private endTurn(note: string): Change[] {
    return this.closeOpenTurn(note);
  }

  private addApproval(view: ApprovalView): Change[] {
    const at = this.findItem((i) => i.kind === 'tool' && i.tool.id === view.toolCallId);
    if (at !== undefined) {
      const item = this.item(at) as ToolItem;
      item.approval = view;
      item.approvalId = view.approvalId;
      item.status = 'awaiting approval';
      delete item.approvalNote;
      delete item.approvalOutcome;
      return [{ kind: 'itemChanged', entry: at[0], item: at[1] }];
    }
    const changes: Change[] = [];
    let index = this.openTurnIndex();
    if (index < 0) {
      this.state.entries.push({ kind: 'turn', items: [], note: '', open: false });
      index = this.state.entries.length - 1;
      changes.push({ kind: 'entryAdded', entry: index });
    }
    this.push(index, this.state.entries[index] as TurnEntry, { kind: 'approval', approval: view, approvalId: view.approvalId }, changes);
    return changes;
  }

  /** The turn that just ended (or was replayed) is `turnId`: the last assistant turn not yet tagged. */
  private tagTurn(turnId: string): Change[] {
    const entries = this.state.entries;
    for (let e = entries.length - 1; e >= 0; e--) {
      const entry = entries[e];
      if (entry?.kind !== 'turn') continue;
      if (entry.turnId !== undefined) return [];
      entry.turnId = turnId;
      return [{ kind: 'turnChanged', entry: e }];
    }
    return [];
  }

  private onTurn(turnId: string, update: (turn: TurnEntry) => void): Change[] {
    const at = this.state.entries.findIndex((e) => e.kind === 'turn' && e.turnId === turnId);
    if (at < 0) return [];
    update(this.state.entries[at] as TurnEntry);
    return [{ kind: 'turnChanged', entry: at }];
  }

  private closeApproval(approvalId: string, outcome: ApprovalOutcome, label: string | undefined): Change[] {
    const at = this.findItem((i) => (i.kind === 'tool' || i.kind === 'approval') && i.approval?.approvalId === approvalId);
    if (at === undefined) return [];
    const item = this.item(at) as ToolItem | ApprovalItem;
    delete item.approval;
    item.approvalNote = outcomeNote(outcome, label);
    item.approvalOutcome = outcome;
    if (item.kind === 'tool' && !item.final) {
      if (outcome === 'allow_once' || outcome === 'allow_session' || outcome === 'allow_always') item.status = 'running';
      else if (outcome === 'withdrawn') item.status = 'withdrawn';
    }
    return [{ kind: 'itemChanged', entry: at[0], item: at[1] }];
  }
}
