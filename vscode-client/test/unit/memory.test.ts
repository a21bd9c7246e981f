import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Memory, replayHistory, sessionPickItems, type FileChangeView, type MemoryShell, type MemoryTransport, type SessionPickItem, type TurnMemoryUi } from '../../src/memory';
import type { ChangesResult, ChatResult, HistoryTurn, RewindParams, RewindResult, SessionLoadResult, SessionsResult } from '../../src/protocol';
import { FakeChatUi } from './fakes';

class FakeMemoryUi extends FakeChatUi implements TurnMemoryUi {
  tags: string[] = [];
  changes = new Map<string, FileChangeView[]>();
  undone = new Map<string, string>();
  tagTurn(turnId: string): void {
    this.tags.push(turnId);
    this.calls.push(['tagTurn', turnId]);
  }
  showTurnChanges(turnId: string, files: FileChangeView[]): void {
    this.changes.set(turnId, files);
  }
  markTurnUndone(turnId: string, note: string): void {
    this.undone.set(turnId, note);
  }
}

const FIRST: HistoryTurn = {
  turnId: 's_1:1',
  prompt: 'make a file\u202e',
  text: 'Made it.',
  stopReason: 'end_turn',
  started: '2026-12-01T10:00:00Z',
  changedFiles: true,
  rewound: false,
  toolCalls: [{ id: 'c1', name: 'terminal', arguments: { command: 'touch a.txt' }, status: 'completed', exitCode: 0, result: '(no output)', decidedBy: 'toolConfirm' }],
};

const loaded: SessionLoadResult = {
  sessionId: 's_1',
  title: 'make a file',
  allowedTools: [],
  turns: [
    FIRST,
    { turnId: 's_1:2', prompt: 'and then?', text: '', stopReason: null, started: '2026-12-01T10:01:00Z', changedFiles: false, rewound: false, toolCalls: [] },
  ],
};

const changes = (turnId: string): ChangesResult => ({
  sessionId: 's_1',
  turnId,
  checkpoint: true,
  files: [{ path: 'a.txt', action: 'created', diff: '--- /dev/null\n+++ b/a.txt\n', binary: false }],
});

class FakeTransport implements MemoryTransport {
  rewinds: RewindParams[] = [];
  rewindResults: RewindResult[] = [];
  deleted: string[] = [];
  listed: SessionsResult = { sessions: [] };
  sessions(): Promise<SessionsResult> {
    return Promise.resolve(this.listed);
  }
  loadSession(): Promise<SessionLoadResult> {
    return Promise.resolve(loaded);
  }
  deleteSession(sessionId: string): Promise<{ deleted: boolean }> {
    this.deleted.push(sessionId);
    return Promise.resolve({ deleted: true });
  }
  changes(_sessionId: string, turnId: string): Promise<ChangesResult> {
    return Promise.resolve(changes(turnId));
  }
  rewind(params: RewindParams): Promise<RewindResult> {
    this.rewinds.push(params);
    return Promise.resolve(this.rewindResults.shift() ?? { applied: true, files: [], conflicts: [], skipped: [], conversation: true });
  }
}

class FakeShell implements MemoryShell {
  answers: boolean[] = [];
  asked: string[] = [];
  diffs: Array<[string, string]> = [];
  errors: string[] = [];
  pick: SessionPickItem | undefined;
  pickSession(items: SessionPickItem[]): Promise<SessionPickItem | undefined> {
    return Promise.resolve(this.pick ?? items[0]);
  }
  confirm(message: string): Promise<boolean> {
    this.asked.push(message);
    return Promise.resolve(this.answers.shift() ?? false);
  }
  openDiff(title: string, diff: string): Promise<void> {
    this.diffs.push([title, diff]);
    return Promise.resolve();
  }
  showInfo(): void {}
  showError(message: string): void {
    this.errors.push(message);
  }
}

function setup() {
  const ui = new FakeMemoryUi();
  const transport = new FakeTransport();
  const shell = new FakeShell();
  const host = { currentSessionId: undefined as string | undefined, running: false, adopted: [] as string[], adopt(id: string) { this.adopted.push(id); this.currentSessionId = id; } };
  const memory = new Memory(transport, ui, shell, host);
  return { ui, transport, shell, host, memory };
}

test('the session list shows titles through the display rule, newest first as given', () => {
  const items = sessionPickItems(
    [{ sessionId: 's_1', title: 'fix \u202ebug', turns: 3, created: '2026-12-01T09:00:00Z', lastActivity: '2026-12-01T10:30:00Z', model: 'qwen', open: false }],
    's_1',
  );
  assert.deepEqual(items, [{ label: 'fix <U+202E>bug', description: '3 turns · 2026-12-01 10:30 · current', detail: 's_1 · qwen', sessionId: 's_1' }]);
});

test('reopening a session replays its history and shows the files each turn changed', async () => {
  const { ui, transport, host, memory } = setup();
  transport.listed = { sessions: [{ sessionId: 's_1', title: 'make a file', turns: 2, created: 'x', lastActivity: 'y', model: null, open: false }] };
  await memory.openSession();
  assert.deepEqual(host.adopted, ['s_1']);
  assert.deepEqual(ui.calls.filter((c) => c[0] === 'user'), [['user', 'make a file<U+202E>'], ['user', 'and then?']]);
  assert.equal(ui.tools.get('c1')?.end?.status, 'completed');
  assert.deepEqual(ui.tags, ['s_1:1', 's_1:2']);
  assert.deepEqual(ui.calls.filter((c) => c[0] === 'endTurn'), [['endTurn', ''], ['endTurn', 'Interrupted: the server stopped during this turn.']]);
  assert.deepEqual([...ui.changes.keys()], ['s_1:1']); // only turns that changed files
  assert.match(ui.status, /asked again/);
});

test('a live turn that ran a tool shows its files; clicking one opens its diff', async () => {
  const { ui, shell, memory } = setup();
  const result: ChatResult = { sessionId: 's_1', turnId: 's_1:3', stopReason: 'end_turn', text: '', toolCalls: [{ id: 'c', name: 'terminal', arguments: {}, status: 'completed', exitCode: 0 }] };
  await memory.afterTurn(result);
  assert.deepEqual(ui.changes.get('s_1:3'), [{ path: 'a.txt', action: 'created' }]);
  await memory.openDiff('s_1:3', 'a.txt');
  assert.equal(shell.diffs.length, 1);
  const [title, diff] = shell.diffs[0] ?? ['', ''];
  assert.match(title, /a\.txt \(created in turn 3\)/);
  assert.match(diff, /\+\+\+ b\/a\.txt/);
});

test('undo asks first, then asks again before overwriting files changed by hand', async () => {
  const { ui, transport, shell, memory } = setup();
  await memory.afterTurn({ sessionId: 's_1', turnId: 's_1:1', stopReason: 'end_turn', text: '', toolCalls: [{ id: 'c', name: 'terminal', arguments: {}, status: 'completed', exitCode: 0 }] });
  shell.answers = [false];
  await memory.undo('s_1:1');
  assert.equal(transport.rewinds.length, 0); // declined: nothing sent

  transport.rewindResults = [
    { applied: false, files: [], conflicts: [{ path: 'b.txt', reason: 'changed_by_hand', detail: 'changed by hand' }], skipped: [], conversation: false },
    { applied: true, files: [{ path: 'a.txt', action: 'deleted' }, { path: 'b.txt', action: 'restored' }], conflicts: [], skipped: [], conversation: true },
  ];
  shell.answers = [true, true];
  await memory.undo('s_1:1');
  assert.deepEqual(transport.rewinds, [
    { sessionId: 's_1', turnId: 's_1:1', scope: 'both' },
    { sessionId: 's_1', turnId: 's_1:1', scope: 'both', force: true },
  ]);
  assert.equal(ui.undone.get('s_1:1'), 'Undone: 2 file(s) written back.');
});

test('undo that finds conflicts and is not confirmed changes nothing', async () => {
  const { ui, transport, shell, host, memory } = setup();
  host.currentSessionId = 's_1';
  transport.rewindResults = [{ applied: false, files: [], conflicts: [{ path: 'b.txt', reason: 'autorun', detail: 'an auto-run path' }], skipped: [], conversation: false }];
  shell.answers = [true, false];
  await memory.undo('s_1:1');
  assert.equal(transport.rewinds.length, 1);
  assert.equal(ui.undone.size, 0);
});

test('the history of a rewound turn says so', () => {
  const ui = new FakeMemoryUi();
  replayHistory(ui, { ...loaded, turns: [{ ...FIRST, rewound: true }] });
  assert.deepEqual(ui.calls.filter((c) => c[0] === 'endTurn'), [['endTurn', 'Rewound: the model no longer sees this turn.']]);
});

test('deleting a session from the list asks first', async () => {
  const { transport, shell, memory } = setup();
  const item: SessionPickItem = { label: 'x', description: '', detail: '', sessionId: 's_9' };
  shell.answers = [false, true];
  await memory.deleteSession(item);
  await memory.deleteSession(item);
  assert.deepEqual(transport.deleted, ['s_9']);
});
