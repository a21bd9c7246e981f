import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApprovalView } from '../../src/approvals';
import { Transcript, type ToView, type TurnEntry } from '../../src/transcript';

const tool = (id: string, awaitingConfirmation = true) => ({ id, name: 'terminal', args: `touch ${id}.txt`, awaitingConfirmation });
const approval = (approvalId: string, toolCallId: string): ApprovalView => ({
  approvalId,
  toolCallId,
  sessionId: 's_1',
  tool: 'terminal',
  codeLabel: 'Command',
  code: 'touch a.txt',
  folder: '/ws',
  reason: 'It runs code',
  isolation: 'strong · network off',
  weakIsolation: false,
  choices: [{ id: 'deny', label: 'Deny', kind: 'deny' }, { id: 'allow_once', label: 'Allow once', kind: 'allow_once' }],
});

/** The turn's items as short strings, in order. */
function shape(t: Transcript, entry = -1): string[] {
  const entries = t.state.entries;
  const turn = entries[entry < 0 ? entries.length + entry : entry] as TurnEntry;
  return turn.items.map((i) => (i.kind === 'text' || i.kind === 'reasoning' ? `${i.kind}:${i.text}` : i.kind === 'tool' ? `tool:${i.tool.id}:${i.status}` : i.kind));
}

// The turn of the bug report: "I will create the file." -> the tool call -> "Done: ... created."
const ALLOWED_TURN: ToView[] = [
  { type: 'user', text: 'Create allowed.txt' },
  { type: 'beginTurn' },
  { type: 'content', text: 'I will ' },
  { type: 'content', text: 'create the file.' },
  { type: 'toolArgs', index: 0, text: '{"name": "terminal"' },
  { type: 'toolStart', tool: tool('c1') },
  { type: 'approval', view: approval('A1', 'c1') },
  { type: 'closeApproval', approvalId: 'A1', outcome: 'allow_once' },
  { type: 'toolOutput', id: 'c1', text: '' },
  { type: 'toolEnd', end: { id: 'c1', status: 'completed', exitCode: 0, result: '' } },
  { type: 'content', text: 'Done: allowed.txt ' },
  { type: 'content', text: 'was created.' },
  { type: 'endTurn', note: '' },
];

test('a turn shows text, then the tool card, then the text written after the tool ran', () => {
  const t = new Transcript();
  t.replay(ALLOWED_TURN);
  assert.deepEqual(shape(t), ['text:I will create the file.', 'tool:c1:completed', 'text:Done: allowed.txt was created.']);
  assert.equal(t.state.entries[0]?.kind, 'user');
});

test('text, tool, text, tool, text keeps every step in its place', () => {
  const t = new Transcript();
  t.replay([
    { type: 'beginTurn' },
    { type: 'content', text: 'one' },
    { type: 'toolStart', tool: tool('a', false) },
    { type: 'content', text: 'two' },
    { type: 'toolStart', tool: tool('b', false) },
    { type: 'toolOutput', id: 'a', text: 'late output of a' },
    { type: 'content', text: 'three' },
  ]);
  assert.deepEqual(shape(t), ['text:one', 'tool:a:running', 'text:two', 'tool:b:running', 'text:three']);
  const first = t.state.entries[0] as TurnEntry;
  assert.equal(first.items[1]?.kind === 'tool' && first.items[1].output, 'late output of a', 'output goes to its own card');
});

test('text before a tool call is final once the call starts; the last text stays open while it streams', () => {
  const t = new Transcript();
  t.replay([{ type: 'beginTurn' }, { type: 'content', text: 'a' }, { type: 'toolStart', tool: tool('x') }, { type: 'content', text: 'b' }]);
  const items = (t.state.entries[0] as TurnEntry).items;
  assert.deepEqual(items.map((i) => i.kind === 'text' && i.open), [false, false, true]);
  t.apply({ type: 'endTurn', note: '' });
  assert.equal(items[2]?.kind === 'text' && items[2].open, false, 'the turn ended: its text is final');
});

test('a tool call takes the place of its preview; leftover previews go when the turn ends', () => {
  const t = new Transcript();
  t.replay([
    { type: 'beginTurn' },
    { type: 'content', text: 'before' },
    { type: 'toolArgs', index: 0, text: '{"na' },
    { type: 'toolArgs', index: 0, text: 'me"' },
    { type: 'toolArgs', index: 1, text: '{"x' },
  ]);
  assert.deepEqual(shape(t), ['text:before', 'preview', 'preview']);
  assert.deepEqual(t.apply({ type: 'toolStart', tool: tool('c') }), [{ kind: 'itemReplaced', entry: 0, item: 1 }]);
  assert.deepEqual(shape(t), ['text:before', 'tool:c:awaiting approval', 'preview']);
  const removed = t.apply({ type: 'endTurn', note: 'Stopped.' });
  assert.deepEqual(removed[0], { kind: 'itemRemoved', entry: 0, item: 2 });
  assert.deepEqual(shape(t), ['text:before', 'tool:c:awaiting approval']);
  assert.equal((t.state.entries[0] as TurnEntry).note, 'Stopped.');
});

test('streamed deltas report only the delta, for a renderer that re-renders only the end', () => {
  const t = new Transcript();
  t.apply({ type: 'beginTurn' });
  assert.deepEqual(t.apply({ type: 'content', text: 'Hel' }), [{ kind: 'itemAdded', entry: 0, item: 0 }]);
  assert.deepEqual(t.apply({ type: 'content', text: 'lo' }), [{ kind: 'itemChanged', entry: 0, item: 0, delta: 'lo' }]);
});

test('reasoning keeps its place among text and tools', () => {
  const t = new Transcript();
  t.replay([
    { type: 'beginTurn' },
    { type: 'reasoning', text: 'think ' },
    { type: 'reasoning', text: 'more' },
    { type: 'content', text: 'answer' },
    { type: 'toolStart', tool: tool('r', false) },
    { type: 'reasoning', text: 'again' },
  ]);
  assert.deepEqual(shape(t), ['reasoning:think more', 'text:answer', 'tool:r:running', 'reasoning:again']);
});

test('an approval sits in its tool card; what became of it stays as a note', () => {
  const t = new Transcript();
  t.replay([{ type: 'beginTurn' }, { type: 'toolStart', tool: tool('c1') }, { type: 'approval', view: approval('A1', 'c1') }]);
  const card = (t.state.entries[0] as TurnEntry).items[0];
  assert.ok(card?.kind === 'tool');
  assert.equal(card.approval?.approvalId, 'A1');
  assert.deepEqual(t.pendingApprovals().map((a) => a.approvalId), ['A1']);
  t.apply({ type: 'closeApproval', approvalId: 'A1', outcome: 'deny' });
  assert.equal(card.approval, undefined);
  assert.equal(card.approvalNote, 'Denied');
  assert.equal(card.status, 'awaiting approval', 'denied is said by the tool end, not guessed');
  t.apply({ type: 'toolEnd', end: { id: 'c1', status: 'denied', exitCode: null, result: 'denied' } });
  assert.equal(card.status, 'denied');
  t.apply({ type: 'toolOutput', id: 'c1', text: 'x' });
  assert.equal(card.status, 'denied', 'a final status never changes');
});

test('a scoped choice leaves a note that says what it allowed', () => {
  const t = new Transcript();
  t.replay([{ type: 'beginTurn' }, { type: 'toolStart', tool: tool('c1') }, { type: 'approval', view: approval('A1', 'c1') }]);
  t.apply({ type: 'closeApproval', approvalId: 'A1', outcome: 'allow_session', label: 'Allow `touch *` in this session' });
  const card = (t.state.entries[0] as TurnEntry).items[0];
  assert.ok(card?.kind === 'tool');
  assert.equal(card.approvalNote, 'You chose: Allow `touch *` in this session');
  assert.equal(card.approvalOutcome, 'allow_session');
  assert.equal(card.status, 'running');
});

test('a withdrawn approval says so on its card', () => {
  const t = new Transcript();
  t.replay([{ type: 'beginTurn' }, { type: 'toolStart', tool: tool('c1') }, { type: 'approval', view: approval('A1', 'c1') }]);
  t.apply({ type: 'closeApproval', approvalId: 'A1', outcome: 'withdrawn' });
  const card = (t.state.entries[0] as TurnEntry).items[0];
  assert.ok(card?.kind === 'tool');
  assert.equal(card.status, 'withdrawn');
  assert.equal(card.approvalNote, 'Approval withdrawn');
});

test('New Session clears the conversation but keeps approvals still waiting', () => {
  const t = new Transcript();
  t.replay([...ALLOWED_TURN.slice(0, 7), { type: 'beginTurn' }, { type: 'toolStart', tool: tool('c2') }, { type: 'approval', view: approval('A2', 'c2') }]);
  t.clear((id) => id === 'A2');
  assert.equal(t.state.entries.length, 1);
  assert.deepEqual(shape(t), ['approval']);
  assert.deepEqual(t.pendingApprovals().map((a) => a.approvalId), ['A2']);
  t.apply({ type: 'closeApproval', approvalId: 'A2', outcome: 'withdrawn' });
  assert.deepEqual(t.pendingApprovals(), []);
});

test('a reloaded view gets the same turn, in the same order, and streaming goes on from there', () => {
  const host = new Transcript();
  host.replay(ALLOWED_TURN.slice(0, 11)); // mid-turn: "Done: allowed.txt " has streamed
  const reloaded = new Transcript();
  assert.deepEqual(reloaded.apply({ type: 'snapshot', state: host.snapshot() }), [{ kind: 'reset' }]);
  for (const m of ALLOWED_TURN.slice(11)) {
    host.apply(m);
    reloaded.apply(m);
  }
  assert.deepEqual(reloaded.state, host.state);
  assert.deepEqual(shape(reloaded), ['text:I will create the file.', 'tool:c1:completed', 'text:Done: allowed.txt was created.']);
  const snapshot = host.snapshot();
  host.apply({ type: 'content', text: 'more' });
  assert.notDeepEqual(snapshot, host.state, 'a snapshot is a copy');
});

test('chrome: running, status and error', () => {
  const t = new Transcript();
  assert.deepEqual(t.apply({ type: 'setRunning', running: true }), [{ kind: 'chrome' }]);
  t.apply({ type: 'status', text: 'Loading model…' });
  t.apply({ type: 'error', text: 'boom' });
  assert.deepEqual({ running: t.state.running, status: t.state.status, error: t.state.error }, { running: true, status: 'Loading model…', error: 'boom' });
  assert.deepEqual(t.apply({ type: 'reveal', approvalId: 'A1' }), []);
});
