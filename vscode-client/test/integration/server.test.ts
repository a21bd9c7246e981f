/**
 * The glue modules against the real Python server over stdio (vscode-jsonrpc, no VS Code):
 * ChatSession and askApproval wired the way extension.ts wires them, with fake UIs.
 * Needs the Gatehouse venv: GATEHOUSE_PYTHON, else ../.venv/bin/python (the repository's); skipped without it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { CancellationTokenSource, ResponseError, StreamMessageReader, StreamMessageWriter, createMessageConnection, type CancellationToken, type MessageConnection } from 'vscode-jsonrpc/node';
import { askApproval } from '../../src/approvals';
import { ChatSession } from '../../src/chatSession';
import { ErrorCodes, Methods, type ChatResult, type StatusResult, type StreamEvent, type ToolConfirmParams } from '../../src/protocol';
import { readSettings, toInitializationOptions } from '../../src/settings';
import { FakeApprovalUi, FakeChatUi } from '../unit/fakes';

const python = process.env.GATEHOUSE_PYTHON ?? resolve(__dirname, '../../../.venv/bin/python');
const skip = existsSync(python) ? false : `no Gatehouse python at ${python}`;
const call = (name: string, args: object): string => `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;

let dir: string;
let child: ChildProcess;
let connection: MessageConnection;
let chat: ChatSession;
const ui = new FakeChatUi();
const approvals = new FakeApprovalUi(true);

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-it-'));
  const workspace = join(dir, 'ws');
  const script = join(dir, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [
    `Let me look. ${call('terminal', { command: 'echo hello-from-gatehouse' })}`,
    'It printed hello.',
    `Again. ${call('terminal', { command: 'echo never' })}`,
    'Nothing ran.',
  ] }));
  mkdirSync(workspace);
  const settings = { ...readSettings((_k, fallback) => fallback), backend: 'scripted' as const, script, confirmTimeoutSeconds: 1.5, sandboxMinLevel: 'none' as const };
  child = spawn(python, ['-m', 'server'], { cwd: dir, stdio: ['pipe', 'pipe', process.env.GATEHOUSE_TEST_VERBOSE ? 'inherit' : 'ignore'] });
  connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  chat = new ChatSession({
    chat: (params, signal) => {
      const source = new CancellationTokenSource();
      signal.addEventListener('abort', () => source.cancel());
      return connection.sendRequest<ChatResult>(Methods.chat, params, source.token);
    },
    cancel: (sessionId) => connection.sendRequest(Methods.cancel, { sessionId }),
  }, ui);
  connection.onNotification(Methods.stream, (event: StreamEvent) => chat.handleEvent(event));
  connection.onRequest(Methods.toolConfirm, async (params: ToolConfirmParams, token: CancellationToken) =>
    (await askApproval(params, token, approvals, workspace)) ?? new ResponseError(ErrorCodes.requestCancelled, 'withdrawn'));
  connection.onNotification('window/showMessage', (p: { message: string }) => assert.fail(`server warned: ${p.message}`));
  connection.listen();
  await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    workspaceFolders: [{ uri: `file://${workspace}`, name: 'ws' }],
    capabilities: { experimental: { toolConfirm: true }, window: { workDoneProgress: true } },
    initializationOptions: toInitializationOptions(settings),
  });
  await connection.sendNotification('initialized', {});
});

after(async () => {
  if (skip) return;
  await connection.sendRequest('shutdown').catch(() => undefined);
  await connection.sendNotification('exit').catch(() => undefined);
  connection.dispose();
  child.kill();
  rmSync(dir, { recursive: true, force: true });
});

const waitFor = async (predicate: () => boolean): Promise<void> => {
  for (let i = 0; i < 400 && !predicate(); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(predicate(), 'condition not reached in time');
};

test('agent/status reports the scripted backend, and the options were accepted', { skip }, async () => {
  const status = await connection.sendRequest<StatusResult>(Methods.status, {});
  assert.equal(status.backend, 'scripted');
  assert.equal(status.sandbox.minLevel, 'none');
  assert.ok(['strong', 'standard', 'limits-only', 'none'].includes(status.sandbox.level));
});

test('a turn with an approved command: card, live output, tool end, streamed answer', { skip }, async () => {
  const turn = chat.send('say hello');
  await waitFor(() => approvals.cards.size === 1);
  const [card] = [...approvals.cards.values()];
  assert.equal(card!.view.code, 'echo hello-from-gatehouse');
  assert.equal(card!.view.tool, 'terminal');
  assert.equal(ui.tools.size, 1);
  card!.answer.resolve({ choice: 'allow_once' });
  await turn;
  const [tool] = [...ui.tools.values()];
  assert.equal(tool!.start.awaitingConfirmation, true);
  assert.equal(tool!.end?.status, 'completed');
  assert.match(tool!.output + (tool!.end?.result ?? ''), /hello-from-gatehouse/);
  assert.equal(ui.content, 'Let me look. It printed hello.');
  assert.equal(ui.error, '');
  assert.equal(approvals.closed.at(-1)?.[1], 'allow_once');
});

test('an unanswered approval is withdrawn: the card closes and nothing runs', { skip }, async () => {
  const turn = chat.send('again');
  await waitFor(() => approvals.cards.size === 1);
  await waitFor(() => approvals.cards.size === 0);
  assert.equal(approvals.closed.at(-1)?.[1], 'withdrawn');
  await turn;
  const ended = [...ui.tools.values()].map((t) => t.end?.status);
  assert.equal(ended.at(-1), 'timed_out');
  assert.ok(chat.currentSessionId?.startsWith('s_'));
});
