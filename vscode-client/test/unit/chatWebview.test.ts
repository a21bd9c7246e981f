import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeApproval, type ApprovalView } from '../../src/approvals';
import type { ToolConfirmParams } from '../../src/protocol';
import { Transcript, type ToView } from '../../src/transcript';
import { Markdown } from '../../webview/markdown';
import { StreamingMarkdown } from '../../webview/streaming';
import { chatView, domWindow } from './dom';

const approval: ApprovalView = {
  approvalId: 'A1', toolCallId: 'c1', sessionId: 's', tool: 'terminal', codeLabel: 'Command', code: 'touch allowed.txt',
  folder: '/ws', reason: 'It runs code', isolation: 'strong · network off', weakIsolation: false,
  choices: [
    { id: 'deny', label: 'Deny', kind: 'deny' },
    { id: 'allow_once', label: 'Allow once', kind: 'allow_once' },
    { id: 'c_always', label: 'Always allow `touch *` in this workspace', kind: 'allow_always' },
  ],
  unclear: ['runs a command substitution'],
};
const TURN: ToView[] = [
  { type: 'user', text: 'Create allowed.txt' },
  { type: 'beginTurn' },
  { type: 'content', text: 'I will **create** ' },
  { type: 'content', text: 'the file.' },
  { type: 'toolStart', tool: { id: 'c1', name: 'terminal', args: 'touch allowed.txt', awaitingConfirmation: true } },
  { type: 'approval', view: approval },
];
const AFTER: ToView[] = [
  { type: 'closeApproval', approvalId: 'A1', outcome: 'allow_once' },
  { type: 'toolEnd', end: { id: 'c1', status: 'completed', exitCode: 0, result: '' } },
  { type: 'content', text: 'Done: `allowed.txt` ' },
  { type: 'content', text: 'was created.' },
  { type: 'endTurn', note: '' },
];

/** The assistant message's children as short strings, in DOM order. */
function order(transcript: HTMLElement): string[] {
  const message = transcript.querySelector('.message.assistant');
  return Array.from(message?.children ?? []).map((node) =>
    node.classList.contains('content') ? `text:${node.textContent?.trim()}` : node.classList.contains('tool-card') ? `tool:${node.querySelector('.tool-status')?.textContent}` : node.className);
}

test('the chat view shows text, the tool card, then the text written after it, as markdown', () => {
  const { view, transcript, posted } = chatView();
  for (const m of TURN) view.handle(m);
  view.flush();
  assert.deepEqual(order(transcript), ['text:I will create the file.', 'tool:awaiting approval']);
  assert.equal(transcript.querySelector('.content strong')?.textContent, 'create');
  const card = transcript.querySelector('.tool-card .approval-card');
  assert.ok(card, 'the approval card sits in its tool card');
  // The server's choices, Deny first, each button carrying its choice.
  assert.deepEqual(Array.from(card.querySelectorAll('.approval-buttons button')).map((b) => [b.className, b.textContent]),
    [['deny', 'Deny'], ['approve-once', 'Allow once'], ['approve-always', 'Always allow `touch *` in this workspace']]);
  assert.match(card.querySelector('.approval-unclear')?.textContent ?? '', /Rules cannot allow this command: it runs a command substitution/);
  (card.querySelector('textarea.approval-message') as HTMLTextAreaElement).value = 'typed';
  (card.querySelector('button.approve-once') as HTMLButtonElement).click();
  assert.deepEqual(posted.at(-1), { type: 'approve', approvalId: 'A1', choice: 'allow_once', message: 'typed' });
  for (const m of AFTER) view.handle(m);
  view.flush();
  assert.deepEqual(order(transcript), ['text:I will create the file.', 'tool:completed', 'text:Done: allowed.txt was created.']);
  assert.equal(transcript.querySelector('.tool-card .approval-note')?.textContent, 'Allowed once');
  assert.equal(transcript.querySelector('.tool-card .approval-note')?.getAttribute('data-outcome'), 'allow_once');
  assert.equal(transcript.querySelectorAll('.content')[1]?.querySelector('code')?.textContent, 'allowed.txt');
});

test('a reloaded view (a snapshot from the host) shows the same turn in the same order', () => {
  const host = new Transcript();
  host.replay([...TURN, ...AFTER]);
  const { view, transcript } = chatView();
  view.handle({ type: 'snapshot', state: host.snapshot() });
  assert.deepEqual(order(transcript), ['text:I will create the file.', 'tool:completed', 'text:Done: allowed.txt was created.']);
  assert.equal(transcript.querySelector('.message.user')?.textContent, 'Create allowed.txt');
  assert.equal(transcript.querySelector('.approval-note')?.textContent, 'Allowed once');
});

test('a half-typed message on a waiting card survives the tool\'s output streaming in', () => {
  const { view, transcript } = chatView();
  for (const m of TURN) view.handle(m);
  const box = transcript.querySelector('textarea.approval-message') as HTMLTextAreaElement;
  box.value = 'half';
  view.handle({ type: 'toolOutput', id: 'c1', text: 'out' });
  assert.equal((transcript.querySelector('textarea.approval-message') as HTMLTextAreaElement).value, 'half');
});

test('links never navigate the view: a click asks the host, which opens it through VS Code', () => {
  const { win, view, transcript, posted } = chatView();
  view.handle({ type: 'beginTurn' });
  view.handle({ type: 'content', text: 'See [the docs](https://example.com/docs).' });
  view.handle({ type: 'endTurn', note: '' });
  const link = transcript.querySelector('a') as HTMLAnchorElement;
  // VS Code's webview host listens on the window and would open the link without asking.
  let reachedWindow = false;
  win.addEventListener('click', () => (reachedWindow = true));
  const click = new win.MouseEvent('click', { bubbles: true, cancelable: true });
  link.dispatchEvent(click);
  assert.equal(click.defaultPrevented, true);
  assert.equal(reachedWindow, false, 'the click never reaches VS Code\'s own link handler');
  assert.deepEqual(posted, [{ type: 'openLink', href: 'https://example.com/docs' }]);
});

test('streamed markdown, re-rendered block by block, ends exactly as a whole render', () => {
  const win = domWindow();
  const md = new Markdown(win);
  const answer = [
    'Intro with a [ref link][r] and *emphasis*.', '', '- item one', '- item two', '', '```python', 'def f(x):', '', '    return x', '```',
    '', '| a | b |', '|---|---|', '| 1 | 2 |', '', 'Setext', '===', '', '[r]: https://example.com/r', '', 'The end.',
  ].join('\n');
  const streamed = win.document.createElement('div');
  const text = new StreamingMarkdown(streamed, md);
  let keptWhileStreaming = 0;
  for (let i = 0; i < answer.length; i += 3) {
    text.append(answer.slice(i, i + 3));
    text.update();
    keptWhileStreaming = Math.max(keptWhileStreaming, streamed.querySelector('.md-stable')?.children.length ?? 0);
  }
  const whole = win.document.createElement('div');
  whole.append(md.render(answer));
  // While streaming, the text shown only grows (no block is lost or re-ordered).
  assert.ok(streamed.querySelector('.code-block pre code'), 'the code block streamed as a code block');
  text.finish();
  assert.equal(streamed.querySelector('.md-stable')?.innerHTML, whole.innerHTML);
  assert.equal(streamed.querySelector('a')?.getAttribute('href'), 'https://example.com/r');
  // Finished blocks were kept while the rest streamed: only the last block was re-rendered.
  assert.ok(keptWhileStreaming >= 4, `blocks kept while streaming: ${keptWhileStreaming}`);
  assert.equal(streamed.querySelector('.md-live')?.children.length, 0);
});

const EDIT_DIFF = '--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n';
const editParams: ToolConfirmParams = {
  sessionId: 's', turnId: 's:1', toolCallId: 'e1', approvalId: 'E1', name: 'edit_file',
  arguments: { path: 'notes.txt', old_text: 'two', new_text: '2' }, reason: 'file_edit', sandbox: { level: 'strong', network: false },
  contentSha256: 'abc',
  choices: [
    { id: 'allow_once', label: 'Allow once', kind: 'allow_once' },
    { id: 'deny', label: 'Deny', kind: 'deny' },
    { id: 'ch_s', label: 'Allow edit_file `notes.txt` in this session', kind: 'allow_session' },
  ],
  edits: [{ path: 'notes.txt', action: 'modify', diff: EDIT_DIFF }],
};

test('an edit\'s card shows each file\'s diff with line numbers, Open diff, and Accept; no isolation row', () => {
  const { view, transcript, posted } = chatView();
  view.handle({ type: 'beginTurn' });
  view.handle({ type: 'toolStart', tool: { id: 'e1', name: 'edit_file', args: 'notes.txt', awaitingConfirmation: true } });
  view.handle({ type: 'approval', view: describeApproval(editParams, '/ws') });
  const card = transcript.querySelector('.tool-card .approval-card.edit') as HTMLElement;
  assert.ok(card, 'the edit card sits in its tool card');
  assert.equal(card.querySelector('.approval-title')?.textContent, 'Allow edit_file to change notes.txt?');
  const file = card.querySelector('.approval-edit[data-path="notes.txt"]') as HTMLElement;
  assert.equal(file.querySelector('.edit-stat')?.textContent, '+1 \u22121');
  assert.deepEqual(Array.from(file.querySelectorAll('tr.diff-row')).map((row) => [
    row.className.replace('diff-row diff-', ''),
    row.querySelector('.ln-old')?.textContent ?? '',
    row.querySelector('.ln-new')?.textContent ?? '',
    row.querySelector('.diff-text')?.textContent ?? '',
  ]), [
    ['hunk', '', '', '@@ -1,3 +1,3 @@'],
    ['context', '1', '1', 'one'],
    ['del', '2', '', 'two'],
    ['add', '', '2', '2'],
    ['context', '3', '3', 'three'],
  ]);
  assert.deepEqual(Array.from(card.querySelectorAll('dt')).map((d) => d.textContent), ['Working folder', 'Why you are asked']);
  assert.deepEqual(Array.from(card.querySelectorAll('.approval-buttons button')).map((b) => b.textContent).slice(0, 2), ['Deny', 'Accept']);
  (file.querySelector('button.open-diff') as HTMLButtonElement).click();
  assert.deepEqual(posted.at(-1), { type: 'openDiff', approvalId: 'E1', path: 'notes.txt' });
  (card.querySelector('button.approve-once') as HTMLButtonElement).click();
  assert.deepEqual(posted.at(-1), { type: 'approve', approvalId: 'E1', choice: 'allow_once', message: '' });
  view.handle({ type: 'closeApproval', approvalId: 'E1', outcome: 'allow_once' });
  view.handle({ type: 'toolEnd', end: { id: 'e1', status: 'completed', exitCode: null, result: 'ok', edits: ['notes.txt: modify (+1 -1, your version)'] } });
  assert.equal(transcript.querySelector('.tool-card .tool-edit')?.textContent, 'Changed notes.txt: modify (+1 -1, your version)');
  assert.equal(transcript.querySelector('.tool-card .approval-note')?.textContent, 'Allowed once');
});

test('a finished turn lists the files it changed (a click asks for the diff) with Undo this turn; undone, it says so', () => {
  const { view, transcript, posted } = chatView();
  for (const m of [...TURN, ...AFTER]) view.handle(m);
  view.handle({ type: 'tagTurn', turnId: 's:1' });
  view.handle({ type: 'turnChanges', turnId: 's:1', files: [{ path: 'allowed.txt', action: 'created' }, { path: 'old.txt', action: 'deleted' }] });
  const message = transcript.querySelector('.message.assistant[data-turn-id="s:1"]') as HTMLElement;
  assert.ok(message, 'the finished turn carries its id');
  const box = message.querySelector('.turn-changes') as HTMLElement;
  assert.equal(box.querySelector('.turn-changes-title')?.textContent, '2 files changed');
  assert.deepEqual(Array.from(box.querySelectorAll('li.turn-file')).map((li) => [li.querySelector('.turn-file-action')?.getAttribute('data-action'), li.querySelector('.turn-file-action')?.textContent, li.querySelector('a.turn-file-link')?.getAttribute('data-path')]),
    [['created', 'A', 'allowed.txt'], ['deleted', 'D', 'old.txt']]);
  (box.querySelector('a.turn-file-link[data-path="old.txt"]') as HTMLElement).click();
  assert.deepEqual(posted.at(-1), { type: 'openTurnDiff', turnId: 's:1', path: 'old.txt' }, 'the diff, never a link to follow');
  (box.querySelector('button.undo-turn') as HTMLButtonElement).click();
  assert.deepEqual(posted.at(-1), { type: 'undoTurn', turnId: 's:1' });
  // A later turn is tagged on its own; the first keeps its id.
  view.handle({ type: 'user', text: 'again' });
  view.handle({ type: 'beginTurn' });
  view.handle({ type: 'content', text: 'More.' });
  view.handle({ type: 'endTurn', note: '' });
  view.handle({ type: 'tagTurn', turnId: 's:2' });
  assert.deepEqual(Array.from(transcript.querySelectorAll('.message.assistant')).map((m) => m.getAttribute('data-turn-id')), ['s:1', 's:2']);
  view.handle({ type: 'turnUndone', turnId: 's:1', note: 'Undone: 2 file(s) written back.' });
  assert.ok(message.classList.contains('undone'));
  assert.equal(message.querySelector('button.undo-turn'), null, 'an undone turn cannot be undone again');
  assert.equal(message.querySelector('.undone-note')?.textContent, 'Undone: 2 file(s) written back.');
  // A reloaded view shows the same.
  const again = chatView();
  again.view.handle({ type: 'snapshot', state: view.model.snapshot() });
  const restored = again.transcript.querySelector('.message.assistant[data-turn-id="s:1"]') as HTMLElement;
  assert.ok(restored.classList.contains('undone'));
  assert.equal(restored.querySelectorAll('li.turn-file').length, 2);
  assert.equal(restored.querySelector('.undone-note')?.textContent, 'Undone: 2 file(s) written back.');
});
