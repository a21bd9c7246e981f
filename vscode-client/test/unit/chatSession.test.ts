import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChatSession } from '../../src/chatSession';
import type { ChatResult, StreamEvent } from '../../src/protocol';
import { FakeChatUi, FakeTransport, tick } from './fakes';

const S = 's_1';
const T = 's_1:1';
const ev = (e: Record<string, unknown>): StreamEvent => ({ sessionId: S, turnId: T, ...e }) as unknown as StreamEvent;
const result = (extra: Partial<ChatResult> = {}): ChatResult => ({
  sessionId: S,
  turnId: T,
  stopReason: 'end_turn',
  text: '',
  toolCalls: [],
  ...extra,
});

function setup() {
  const ui = new FakeChatUi();
  const transport = new FakeTransport();
  const ended: Array<ChatResult | undefined> = [];
  const chat = new ChatSession(transport, ui, { onTurnEnd: (r) => ended.push(r) });
  return { ui, transport, chat, ended };
}

test('content deltas concatenate; reasoning is kept apart', async () => {
  const { ui, transport, chat, ended } = setup();
  const done = chat.send('hello');
  assert.deepEqual(transport.last.params, { prompt: 'hello' });
  assert.equal(ui.running, true);
  for (const t of ['Let', ' me', ' look', '.']) chat.handleEvent(ev({ type: 'content', text: t }));
  chat.handleEvent(ev({ type: 'reasoning', text: 'thinking' }));
  chat.handleEvent(ev({ type: 'status', text: 'Loading model…' }));
  assert.equal(ui.content, 'Let me look.');
  assert.equal(ui.reasoning, 'thinking');
  assert.equal(ui.status, 'Loading model…');
  transport.last.resolve(result({ text: 'Let me look.' }));
  await done;
  assert.equal(ui.running, false);
  assert.deepEqual(ui.calls.filter((c) => c[0] === 'endTurn'), [['endTurn', '']]);
  assert.equal(ended.length, 1);
  assert.deepEqual(ui.calls.slice(0, 3), [['user', 'hello'], ['beginTurn'], ['setRunning', true]]);
});

test('the session continues: the second turn sends the sessionId', async () => {
  const { transport, chat } = setup();
  const first = chat.send('one');
  transport.last.resolve(result());
  await first;
  void chat.send('two');
  assert.deepEqual(transport.last.params, { prompt: 'two', sessionId: S });
});

test('tool card lifecycle: start (awaiting approval), output, end', async () => {
  const { ui, transport, chat } = setup();
  const done = chat.send('run ls');
  chat.handleEvent(ev({ type: 'tool_args', index: 0, text: '{"name": "terminal"' }));
  chat.handleEvent(ev({ type: 'tool_start', toolCallId: 'c1', name: 'terminal', arguments: { command: 'ls -la' }, awaitingConfirmation: true }));
  chat.handleEvent(ev({ type: 'tool_output', toolCallId: 'c1', text: 'a.py\n' }));
  chat.handleEvent(ev({ type: 'tool_output', toolCallId: 'c1', text: 'b.py\n' }));
  chat.handleEvent(ev({ type: 'tool_end', toolCallId: 'c1', name: 'terminal', status: 'completed', exitCode: 0, result: 'a.py\nb.py\n', sandbox: { level: 'strong', network: false } }));
  const tool = ui.tools.get('c1');
  assert.ok(tool);
  assert.deepEqual(tool.start, { id: 'c1', name: 'terminal', args: 'ls -la', awaitingConfirmation: true });
  assert.equal(tool.output, 'a.py\nb.py\n');
  assert.deepEqual(tool.end, { id: 'c1', status: 'completed', exitCode: 0, result: 'a.py\nb.py\n', isolation: 'strong · network off' });
  assert.deepEqual(ui.calls.find((c) => c[0] === 'toolArgs'), ['toolArgs', 0, '{"name": "terminal"']);
  transport.last.resolve(result());
  await done;
});

test('python code shows as code; other tools as JSON', () => {
  const { ui, chat } = setup();
  void chat.send('x');
  chat.handleEvent(ev({ type: 'tool_start', toolCallId: 'p', name: 'python', arguments: { code: 'print(1)\nprint(2)' }, awaitingConfirmation: true }));
  chat.handleEvent(ev({ type: 'tool_start', toolCallId: 'r', name: 'read_file', arguments: { path: 'a.py' }, awaitingConfirmation: false }));
  assert.equal(ui.tools.get('p')?.start.args, 'print(1)\nprint(2)');
  assert.equal(ui.tools.get('r')?.start.args, '{\n  "path": "a.py"\n}');
});

test('stop sends agent/cancel for the session; the turn ends as stopped', async () => {
  const { ui, transport, chat } = setup();
  const done = chat.send('slow');
  chat.handleEvent(ev({ type: 'content', text: 'A slow' }));
  await chat.stop();
  assert.deepEqual(transport.cancels, [S]);
  transport.last.resolve(result({ stopReason: 'cancelled' }));
  await done;
  assert.deepEqual(ui.calls.filter((c) => c[0] === 'endTurn'), [['endTurn', 'Stopped.']]);
  assert.equal(ui.running, false);
});

test('stop before the session is known cancels the request itself; -32800 is not an error', async () => {
  const { ui, transport, chat } = setup();
  const done = chat.send('x');
  await chat.stop();
  assert.equal(transport.cancels.length, 0);
  assert.equal(transport.last.signal.aborted, true);
  transport.last.reject(Object.assign(new Error('cancelled'), { code: -32800 }));
  await done;
  assert.equal(ui.error, '');
  assert.deepEqual(ui.calls.filter((c) => c[0] === 'endTurn'), [['endTurn', 'Stopped.']]);
});

test('stop when agent/cancel fails falls back to cancelling the request', async () => {
  const { transport, chat } = setup();
  void chat.send('x');
  chat.handleEvent(ev({ type: 'content', text: 'a' }));
  transport.cancelError = new Error('gone');
  await chat.stop();
  assert.equal(transport.last.signal.aborted, true);
});

test('errors show in the UI and end the turn', async () => {
  const { ui, transport, chat, ended } = setup();
  const done = chat.send('x');
  transport.last.reject(Object.assign(new Error('Invalid params: prompt'), { code: -32602 }));
  await done;
  assert.equal(ui.error, 'Invalid params: prompt');
  assert.equal(ui.running, false);
  assert.equal(ended.length, 1);
  void chat.send('again');
  assert.equal(ui.error, '', 'a new turn clears the error');
});

test('a second send while a turn runs is refused in the UI, not sent', () => {
  const { ui, transport, chat } = setup();
  void chat.send('one');
  void chat.send('two');
  assert.equal(transport.chats.length, 1);
  assert.match(ui.error, /still running/);
});

test('blank prompts are not sent', () => {
  const { transport, chat } = setup();
  void chat.send('   ');
  assert.equal(transport.chats.length, 0);
});

test('turn end notes per stop reason', async () => {
  const { ui, transport, chat } = setup();
  for (const [reason, note] of [['max_tokens', /token limit/], ['tool_limit', /tool call limit/]] as const) {
    const done = chat.send('x');
    transport.last.resolve(result({ stopReason: reason }));
    await done;
    const last = ui.calls.filter((c) => c[0] === 'endTurn').pop();
    assert.match(String(last?.[1]), note);
  }
});

test('events when no turn runs, or from another session, are ignored', async () => {
  const { ui, transport, chat } = setup();
  chat.handleEvent(ev({ type: 'content', text: 'stray' }));
  assert.equal(ui.content, '');
  const done = chat.send('x');
  chat.handleEvent(ev({ type: 'content', text: 'mine' }));
  chat.handleEvent({ ...ev({ type: 'content', text: 'other' }), sessionId: 's_2' });
  assert.equal(ui.content, 'mine');
  transport.last.resolve(result());
  await done;
});

test('new session: cancels the running turn, clears the UI, drops late events and results', async () => {
  const { ui, transport, chat, ended } = setup();
  const done = chat.send('x');
  chat.handleEvent(ev({ type: 'content', text: 'old' }));
  const old = transport.last;
  chat.newSession();
  assert.deepEqual(transport.cancels, [S]);
  assert.equal(ui.count('clear'), 1);
  assert.equal(ui.running, false);
  assert.equal(chat.running, false);
  void chat.send('fresh');
  assert.deepEqual(transport.last.params, { prompt: 'fresh' }, 'no sessionId: a new session');
  chat.handleEvent(ev({ type: 'content', text: ' late' }));
  assert.equal(ui.content, '', 'late events of the old session are dropped');
  old.resolve(result({ stopReason: 'cancelled' }));
  await done;
  await tick();
  assert.equal(ended.length, 0, 'the old turn result is ignored');
  chat.handleEvent({ ...ev({ type: 'content', text: 'new' }), sessionId: 's_2', turnId: 's_2:1' });
  assert.equal(ui.content, 'new');
  assert.equal(chat.currentSessionId, 's_2');
});

test('after a server restart the running turn is lost but the saved session continues', async () => {
  const { ui, transport, chat } = setup();
  const first = chat.send('x');
  transport.last.resolve(result());
  await first;
  void chat.send('y');
  chat.serverRestarted();
  assert.equal(chat.running, false);
  assert.equal(chat.currentSessionId, S);
  assert.match(ui.error, /restarted/);
  assert.match(ui.status, /continues this session/);
  void chat.send('z');
  assert.deepEqual(transport.last.params, { prompt: 'z', sessionId: S });
});

test('a session the server no longer knows is dropped, and the next message starts a new one', async () => {
  const { ui, transport, chat } = setup();
  const first = chat.send('x');
  transport.last.resolve(result());
  await first;
  const second = chat.send('y');
  transport.last.reject(Object.assign(new Error("Invalid params: sessionId: unknown session 's_1'"), { code: -32602 }));
  await second;
  assert.equal(chat.currentSessionId, undefined);
  assert.match(ui.error, /session is gone/);
  void chat.send('z');
  assert.deepEqual(transport.last.params, { prompt: 'z' });
});

test('adopting a saved session continues it', () => {
  const { transport, chat } = setup();
  chat.adopt('s_saved');
  void chat.send('more');
  assert.deepEqual(transport.last.params, { prompt: 'more', sessionId: 's_saved' });
});

test('model text and command output are shown with hidden characters written out', async () => {
  const { ui, transport, chat } = setup();
  const done = chat.send('hello');
  chat.handleEvent(ev({ type: 'content', text: 'Done \u001b[2J\u202eevil' }));
  chat.handleEvent(ev({ type: 'reasoning', text: 'zero\u200bwidth' }));
  chat.handleEvent(ev({ type: 'status', text: 'bell\u0007' }));
  assert.equal(ui.content, 'Done \\x1b[2J<U+202E>evil');
  assert.equal(ui.reasoning, 'zero<U+200B>width');
  assert.equal(ui.status, 'bell\\x07');
  transport.last.resolve(result());
  await done;
});

test('an auto-run path the call touched is reported on its tool card', async () => {
  const { ui, transport, chat } = setup();
  const done = chat.send('hello');
  chat.handleEvent(ev({ type: 'tool_start', toolCallId: 'c1', name: 'terminal', arguments: { command: 'git init' }, awaitingConfirmation: false }));
  chat.handleEvent(
    ev({
      type: 'tool_end', toolCallId: 'c1', name: 'terminal', status: 'completed', exitCode: 0, result: 'ok',
      protected: [{ path: '.git', action: 'quarantined', detail: 'moved to /q/1' }],
    }),
  );
  assert.deepEqual(ui.tools.get('c1')?.end?.protected, ['.git: quarantined (moved to /q/1)']);
  transport.last.resolve(result());
  await done;
});

test('an edit call shows its file, and when it ends the files it changed', async () => {
  const { ui, transport, chat } = setup();
  const done = chat.send('edit');
  chat.handleEvent(ev({ type: 'tool_start', toolCallId: 'e', name: 'edit_file', arguments: { path: 'a.py', old_text: 'x', new_text: 'y' }, awaitingConfirmation: true }));
  assert.equal(ui.tools.get('e')?.start.args, 'a.py');
  const diff = '--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n';
  chat.handleEvent(ev({ type: 'tool_end', toolCallId: 'e', name: 'edit_file', status: 'completed', exitCode: null, result: 'Done', edits: [{ path: 'a.py', action: 'modify', diff, userEdited: true }] }));
  assert.deepEqual(ui.tools.get('e')?.end?.edits, ['a.py: modify (+1 -1, your version)']);
  transport.last.resolve(result());
  await done;
});
