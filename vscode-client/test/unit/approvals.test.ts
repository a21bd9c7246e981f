import assert from 'node:assert/strict';
import { test } from 'node:test';
import { askApproval, describeApproval, modalText, toResult } from '../../src/approvals';
import type { ChoiceView, ToolConfirmParams, ToolConfirmResult } from '../../src/protocol';
import { FakeApprovalUi, FakeToken, tick } from './fakes';

const SHA = 'ab'.repeat(32);
const rule = { action: 'allow' as const, tool: 'terminal', pattern: 'rm -rf build' };
const CHOICES: ChoiceView[] = [
  { id: 'deny', label: 'Deny', kind: 'deny' },
  { id: 'allow_once', label: 'Allow once', kind: 'allow_once' },
  { id: 'allow_session', label: 'Allow `rm -rf build` in this session', kind: 'allow_session', rule },
  { id: 'allow_always', label: 'Always allow `rm -rf build` in this workspace', kind: 'allow_always', rule },
];

const params = (extra: Partial<ToolConfirmParams> = {}): ToolConfirmParams => ({
  sessionId: 's_1',
  turnId: 's_1:1',
  toolCallId: 'call_1',
  approvalId: 'A1',
  name: 'terminal',
  arguments: { command: 'rm -rf build' },
  reason: 'code_execution',
  sandbox: { level: 'strong', network: false },
  contentSha256: SHA,
  choices: CHOICES,
  ...extra,
});

/** What the server gets for a choice of approval A1 (or another). */
const result = (choice: string, approvalId = 'A1', message?: string): ToolConfirmResult => {
  const kind = CHOICES.find((c) => c.id === choice)!.kind;
  const decision = kind === 'deny' ? 'deny' : kind === 'allow_session' ? 'allow_session' : 'allow';
  return { decision, choice, approvalId, contentSha256: SHA, ...(message === undefined ? {} : { message }) };
};

test('the card shows everything needed to decide', () => {
  const view = describeApproval(params(), '/ws');
  assert.equal(view.tool, 'terminal');
  assert.equal(view.code, 'rm -rf build');
  assert.equal(view.codeLabel, 'Command');
  assert.equal(view.folder, '/ws');
  assert.match(view.reason, /runs code/);
  assert.equal(view.isolation, 'strong · network off');
  assert.equal(view.weakIsolation, false);
  const all = describeApproval(params({ name: 'read_file', arguments: { path: 'x' }, reason: 'all_tools', sandbox: { level: 'standard', network: true } }), '/ws');
  assert.match(all.reason, /Every tool call/);
  assert.equal(all.isolation, 'standard · network on');
  assert.equal(all.weakIsolation, true);
  assert.equal(all.code, '{\n  "path": "x"\n}');
});

test('long python code is never shortened on the card', () => {
  const code = 'print(1)\n'.repeat(5000);
  const view = describeApproval(params({ name: 'python', arguments: { code } }), '/ws');
  assert.equal(view.code, code);
  assert.equal(view.codeLabel, 'Python code');
});

test('the modal says when it cannot show all the code, and where to read it', () => {
  const short = modalText(describeApproval(params(), '/ws'));
  assert.match(short.detail, /rm -rf build/);
  assert.match(short.detail, /Working folder: \/ws/);
  assert.match(short.detail, /Isolation: strong · network off/);
  const long = modalText(describeApproval(params({ name: 'python', arguments: { code: 'x'.repeat(10_000) } }), '/ws'));
  assert.match(long.detail, /6000 more characters are not shown here/);
  assert.match(long.detail, /chat view/);
});

test('the card offers the scoped choices, Deny first, and says why rules could not allow it', () => {
  const shuffled = [CHOICES[2]!, CHOICES[0]!, CHOICES[1]!, CHOICES[3]!];
  const view = describeApproval(params({ choices: shuffled, unclear: ['runs a command substitution ($( ) or backquotes)'] }), '/ws');
  assert.deepEqual(view.choices.map((c) => c.label), [
    'Deny',
    'Allow `rm -rf build` in this session',
    'Allow once',
    'Always allow `rm -rf build` in this workspace',
  ]);
  assert.deepEqual(view.unclear, ['runs a command substitution ($( ) or backquotes)']);
  assert.match(modalText(view).detail, /Rules cannot allow it: it runs a command substitution/);
  const bidi = describeApproval(params({ choices: [{ id: 'allow_session', label: 'Allow `x\u202e` in this session', kind: 'allow_session' }] }), '/ws');
  assert.deepEqual(bidi.choices.map((c) => c.label), ['Deny', 'Allow `x<U+202E>` in this session'], 'labels through the display rule; Deny added');
});

test('visible view: the chosen choice is answered with its decision, bound to the content', async () => {
  const ui = new FakeApprovalUi(true);
  const pending = askApproval(params(), new FakeToken(), ui, '/ws');
  ui.card('A1').answer.resolve({ choice: 'allow_once' });
  assert.deepEqual(await pending, result('allow_once'));
  assert.deepEqual(ui.closed, [['A1', 'allow_once']]);
  assert.equal(ui.modals.length, 0);
});

test('each scope maps to its decision; a message is sent only with deny', async () => {
  const ui = new FakeApprovalUi(true);
  const session = askApproval(params(), new FakeToken(), ui, '/ws');
  ui.card('A1').answer.resolve({ choice: 'allow_session', message: 'ignored' });
  assert.deepEqual(await session, result('allow_session'));
  const always = askApproval(params({ approvalId: 'A4' }), new FakeToken(), ui, '/ws');
  ui.card('A4').answer.resolve({ choice: 'allow_always' });
  assert.deepEqual(await always, result('allow_always', 'A4'));
  const deny = askApproval(params({ approvalId: 'A2' }), new FakeToken(), ui, '/ws');
  ui.card('A2').answer.resolve({ choice: 'deny', message: '  use git clean instead ' });
  assert.deepEqual(await deny, result('deny', 'A2', 'use git clean instead'));
  const bare = askApproval(params({ approvalId: 'A3' }), new FakeToken(), ui, '/ws');
  ui.card('A3').answer.resolve({ choice: 'deny', message: '   ' });
  assert.deepEqual(await bare, result('deny', 'A3'));
});

test('hidden view: a modal asks too, and its answer wins and closes the card', async () => {
  const ui = new FakeApprovalUi(false);
  const pending = askApproval(params(), new FakeToken(), ui, '/ws');
  assert.equal(ui.modals.length, 1);
  assert.ok(ui.cards.has('A1'), 'the card waits in the view as well');
  ui.modals[0]!.answer.resolve('allow_session');
  assert.deepEqual(await pending, result('allow_session'));
  assert.deepEqual(ui.closed, [['A1', 'allow_session']]);
});

test('a dismissed modal is a denial', async () => {
  const ui = new FakeApprovalUi(false);
  const pending = askApproval(params(), new FakeToken(), ui, '/ws');
  ui.modals[0]!.answer.resolve(undefined);
  assert.deepEqual(await pending, { decision: 'deny' });
});

test('the view hidden while the card waits: a modal asks, once', async () => {
  const ui = new FakeApprovalUi(true);
  const pending = askApproval(params(), new FakeToken(), ui, '/ws');
  assert.equal(ui.modals.length, 0);
  ui.setVisible(false);
  ui.setVisible(true);
  ui.setVisible(false);
  assert.equal(ui.modals.length, 1);
  ui.card('A1').answer.resolve({ choice: 'deny' });
  assert.deepEqual(await pending, result('deny'));
  ui.modals[0]!.answer.resolve('allow_once');
  await tick();
  assert.deepEqual(ui.closed, [['A1', 'deny']], 'the late modal answer changes nothing');
});

test('withdrawal closes the card at once and yields no decision', async () => {
  const ui = new FakeApprovalUi(true);
  const token = new FakeToken();
  const pending = askApproval(params(), token, ui, '/ws');
  token.cancel();
  assert.deepEqual(ui.closed, [['A1', 'withdrawn']], 'closed synchronously');
  assert.equal(await pending, undefined);
  assert.equal(ui.cards.has('A1'), false);
});

test('withdrawal while the modal is open: the late modal answer is ignored', async () => {
  const ui = new FakeApprovalUi(false);
  const token = new FakeToken();
  const pending = askApproval(params(), token, ui, '/ws');
  token.cancel();
  assert.equal(await pending, undefined);
  ui.modals[0]!.answer.resolve('allow_once');
  await tick();
  assert.deepEqual(ui.closed, [['A1', 'withdrawn']]);
});

test('already withdrawn: nothing is shown', async () => {
  const ui = new FakeApprovalUi(true);
  const token = new FakeToken();
  token.cancel();
  assert.equal(await askApproval(params(), token, ui, '/ws'), undefined);
  assert.equal(ui.cards.size, 0);
});

test('fail closed: a UI that throws, rejects, or answers nonsense means deny', async () => {
  const throwing = new FakeApprovalUi(true);
  throwing.failCard = true;
  assert.deepEqual(await askApproval(params(), new FakeToken(), throwing, '/ws'), { decision: 'deny' });

  const rejecting = new FakeApprovalUi(false);
  const pending = askApproval(params(), new FakeToken(), rejecting, '/ws');
  rejecting.modals[0]!.answer.reject(new Error('dialog failed'));
  assert.deepEqual(await pending, { decision: 'deny' });

  const nonsense = new FakeApprovalUi(true);
  const odd = askApproval(params(), new FakeToken(), nonsense, '/ws');
  nonsense.card('A1').answer.resolve({ choice: 'allow_forever' });
  assert.deepEqual(await odd, { decision: 'deny' });

  const logs: string[] = [];
  const malformed = await askApproval({ ...params(), approvalId: undefined as never }, new FakeToken(), new FakeApprovalUi(true), '/ws', (m) => logs.push(m));
  assert.deepEqual(malformed, { decision: 'deny' });
  assert.equal(logs.length, 1);
});

test('toResult: only an offered choice allows anything', () => {
  const view = describeApproval(params(), '/ws');
  assert.deepEqual(toResult({ choice: 'allow_once', message: 'x' }, view), result('allow_once'));
  assert.deepEqual(toResult({ choice: 'allow_session' }, describeApproval(params({ choices: [] }), '/ws')), { decision: 'deny' });
  assert.deepEqual(toResult(undefined, view), { decision: 'deny' });
  assert.deepEqual(toResult(null, view), { decision: 'deny' });
});

test('a server that sends no choices gets Deny and Allow once', () => {
  const view = describeApproval({ ...params(), choices: undefined as never }, '/ws');
  assert.deepEqual(view.choices.map((c) => c.kind), ['deny', 'allow_once']);
});

test('a command hiding escape codes or bidi controls is shown escaped, with a warning, on the card and in the modal', () => {
  const sneaky = 'touch hidden_ran.txt #\u001b[2K\u001b[1G  $ ls -la \u202e\u2066x\u2069';
  const view = describeApproval(params({ arguments: { command: sneaky } }), '/ws');
  assert.equal(view.code, 'touch hidden_ran.txt #\\x1b[2K\\x1b[1G  $ ls -la <U+202E><U+2066>x<U+2069>');
  assert.match(view.hiddenWarning ?? '', /hidden or control characters/);
  const modal = modalText(view);
  for (const raw of ['\u001b', '\u202e', '\u2066', '\u2069']) assert.ok(!modal.detail.includes(raw));
  assert.match(modal.detail, /hidden or control characters/);
  assert.equal(describeApproval(params(), '/ws').hiddenWarning, undefined);
});
