// Contract tests of the Gatehouse protocol, spoken the way the VS Code extension speaks it:
// vscode-jsonrpc over the stdio of the real Python server (`python -m server`), scripted model.
//
// Run: cd vscode-client/test/contract && npm ci && npm test
// Env: GATEHOUSE_PYTHON (default: <repo root>/.venv/bin/python;
//      it must have the server's dependencies), GATEHOUSE_ROOT (the repo root, the server's cwd;
//      default: three folders up from this file), GATEHOUSE_CONTRACT_CONCURRENCY (default 3),
//      GATEHOUSE_CONTRACT_VERBOSE=1 (per-test init/body/shutdown times and the server's stderr).
// The contract is docs/protocol.md.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';

// Loaded the way the (CommonJS) extension loads it. vscode-jsonrpc 8 has no "exports" map, so an
// ESM `import 'vscode-jsonrpc/node'` fails there (it would need 'node.js'); jsonrpc 10 has one and
// wants 'vscode-jsonrpc/node'. require() resolves 'vscode-jsonrpc/node' for both.
const require = createRequire(import.meta.url);
const {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
} = require('vscode-jsonrpc/node');

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = process.env.GATEHOUSE_ROOT ?? path.resolve(HERE, '..', '..', '..');
// Always this checkout's interpreter: a fallback elsewhere would test another copy of the server.
const PYTHON = process.env.GATEHOUSE_PYTHON ?? path.join(REPO_ROOT, '.venv', 'bin', 'python');

const SANDBOX_LEVELS = ['strong', 'standard', 'limits-only', 'none'];
const DECISION_DEADLINE_MS = 8000;
// Each test starts its own server, and starting one (Python imports, the sandbox probe) is most of
// a test's time, so a few run side by side. GATEHOUSE_CONTRACT_CONCURRENCY=1: one after another.
const CONCURRENCY = Number(process.env.GATEHOUSE_CONTRACT_CONCURRENCY ?? 3);
const TEST_TIMEOUT_MS = 30_000;

/** Hermes-style tool-call markup, as a model writes it. */
function toolCall(name, args) {
  return `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;
}
const touch = (file) => toolCall('terminal', { command: `touch ${file} && echo made ${file}` });

/**
 * The initializationOptions the extension sends with its default settings and the scripted
 * backend (vscode-client/src/settings.ts, toInitializationOptions); `extra` overrides.
 */
function extensionInitializationOptions(script, extra = {}) {
  return {
    backend: 'scripted',
    confirmCodeExecution: true,
    confirmToolCalls: false,
    bypassPermissions: false,
    confirmTimeoutSeconds: 300,
    toolTimeoutSeconds: 120,
    sandbox: { network: false, minLevel: 'standard' },
    script,
    ...extra,
  };
}

/**
 * The initialize params the extension sends (vscode-client/src/client.ts: vscode-languageclient
 * plus its ToolConfirmFeature); only the parts the server reads are reproduced.
 */
function extensionInitializeParams(workspace, initializationOptions) {
  return {
    processId: process.pid,
    clientInfo: { name: 'gatehouse-vscode-contract-test', version: '0.0.0' },
    rootPath: workspace,
    rootUri: pathToFileURL(workspace).href,
    workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: path.basename(workspace) }],
    capabilities: {
      experimental: { toolConfirm: true },
      window: {
        workDoneProgress: true,
        showMessage: { messageActionItem: { additionalPropertiesSupport: true } },
        showDocument: { support: true },
      },
    },
    initializationOptions,
  };
}

/** A reader that remembers every message it delivers, in wire order. */
function recordingReader(readable, wire) {
  const reader = new StreamMessageReader(readable);
  const listen = reader.listen.bind(reader);
  reader.listen = (callback) =>
    listen((message) => {
      wire.push({ dir: 'in', message });
      callback(message);
    });
  return reader;
}

/** A writer that remembers every message the client sends. */
function recordingWriter(writable, wire) {
  const writer = new StreamMessageWriter(writable);
  const write = writer.write.bind(writer);
  writer.write = (message) => {
    wire.push({ dir: 'out', message });
    return write(message);
  };
  return writer;
}

async function waitFor(predicate, what, ms = DECISION_DEADLINE_MS) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/**
 * Start a real server and initialize it as the extension does.
 * `onConfirm(params, token, peer)` answers toolConfirm (default: allow).
 */
async function startServer(t, { turns, options = {}, onConfirm }) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-contract-')));
  const workspace = path.join(tmp, 'workspace');
  fs.mkdirSync(workspace);
  const script = path.join(tmp, 'script.json');
  fs.writeFileSync(script, JSON.stringify({ turns }));

  const timings = { start: Date.now() };
  const child = spawn(PYTHON, ['-P', '-m', 'server'], {
    cwd: REPO_ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONUNBUFFERED: '1', GATEHOUSE_DATA_DIR: path.join(tmp, 'data') },
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  // Resolves when the server is gone, whether it exited or could not be started at all.
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ error }));
  });

  const wire = [];
  const connection = createMessageConnection(
    recordingReader(child.stdout, wire),
    recordingWriter(child.stdin, wire),
  );
  const peer = {
    connection,
    child,
    workspace,
    wire,
    stream: [],
    confirms: [], // {params, token, cancelledAt}
    shownMessages: [],
    initResult: undefined,
    exists: (file) => fs.existsSync(path.join(workspace, file)),
    ofType: (type) => peer.stream.filter((m) => m.type === type),
    // Never sendRequest(method, undefined): vscode-jsonrpc 8 then sends `"params": [null]`
    // (by position), which the server rightly rejects with -32602.
    request: (method, params) =>
      params === undefined ? connection.sendRequest(method) : connection.sendRequest(method, params),
    chat: (params) => connection.sendRequest('agent/chat', params),
    /** Wire ids of the toolConfirm requests, in arrival order. */
    confirmRequestIds: () =>
      wire.filter((w) => w.dir === 'in' && w.message.method === 'toolConfirm').map((w) => w.message.id),
    /** Ids the server withdrew with $/cancelRequest. */
    withdrawnIds: () =>
      wire
        .filter((w) => w.dir === 'in' && w.message.method === '$/cancelRequest')
        .map((w) => w.message.params.id),
  };

  connection.onNotification('agent/stream', (params) => peer.stream.push(params));
  connection.onNotification('window/showMessage', (params) => peer.shownMessages.push(params));
  connection.onNotification('window/logMessage', () => {});
  // window.workDoneProgress is advertised, as vscode-languageclient does: accept progress.
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onNotification('$/progress', () => {});
  connection.onRequest('toolConfirm', (params, token) => {
    const entry = { params, token, cancelledAt: null };
    token.onCancellationRequested(() => {
      entry.cancelledAt = Date.now();
    });
    peer.confirms.push(entry);
    return onConfirm ? onConfirm(params, token, peer) : { decision: 'allow' };
  });
  connection.listen();

  t.after(async () => {
    timings.bodyDone = Date.now();
    await shutdown(peer, exited);
    timings.exited = Date.now();
    if (process.env.GATEHOUSE_CONTRACT_VERBOSE) {
      t.diagnostic(
        `init ${timings.initialized - timings.start} ms, body ${timings.bodyDone - timings.initialized} ms, ` +
          `shutdown ${timings.exited - timings.bodyDone} ms`,
      );
    }
    fs.rmSync(tmp, { recursive: true, force: true });
    if (t.passed === false || process.env.GATEHOUSE_CONTRACT_VERBOSE) {
      t.diagnostic('server stderr (last 40 lines):');
      for (const line of stderr.trimEnd().split('\n').slice(-40)) t.diagnostic(`  ${line}`);
    }
  });

  // A server that dies before answering (bad interpreter, import error) fails the test at once.
  peer.initResult = await Promise.race([
    connection.sendRequest(
      'initialize',
      extensionInitializeParams(workspace, extensionInitializationOptions(script, options)),
    ),
    exited.then((how) => {
      throw new Error(`the server (${PYTHON}) ended before answering initialize: ${JSON.stringify(how)}\n${stderr}`);
    }),
  ]);
  await connection.sendNotification('initialized', {});
  timings.initialized = Date.now();
  return peer;
}

/** shutdown + exit, then kill the server if it is still alive after 5 s. */
async function shutdown(peer, exited) {
  const { connection, child } = peer;
  if (child.exitCode === null && child.signalCode === null) {
    const giveUp = new AbortController(); // a pending timer would keep node (and the run) alive
    try {
      await Promise.race([connection.sendRequest('shutdown'), sleep(3000, null, { signal: giveUp.signal })]);
      await connection.sendNotification('exit');
    } catch {
      // the connection is already gone: the kill below still runs
    } finally {
      giveUp.abort();
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  connection.dispose();
}

function assertNoWarnings(peer) {
  assert.deepEqual(peer.shownMessages, [], 'the server complained about our settings');
}

// ------------------------------------------------------------------------------------------------

describe('Gatehouse protocol over stdio, as the VS Code client speaks it', { concurrency: CONCURRENCY }, () => {
  test('(1) stream: content deltas concatenate to the result text and precede the response', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const answer = 'Hello there. This answer is streamed in several small pieces, word by word.';
    const peer = await startServer(t, { turns: [answer] });

    const result = await peer.chat({ prompt: 'hi' });
    const streamedAtResponse = peer.stream.length;

    assert.equal(result.stopReason, 'end_turn');
    assert.equal(result.text, answer);
    assert.deepEqual(result.toolCalls, []);
    assert.match(result.sessionId, /\S/);
    assert.equal(typeof result.turnId, 'string');

    const content = peer.ofType('content');
    assert.ok(content.length >= 2, `expected several deltas, got ${content.length}`);
    assert.equal(content.map((m) => m.text).join(''), result.text);
    for (const m of peer.stream) {
      assert.equal(m.sessionId, result.sessionId);
      assert.equal(m.turnId, result.turnId);
    }
    // Delivered to the handler before the response resolved, and before it on the wire.
    assert.equal(streamedAtResponse, peer.stream.length);
    const incoming = peer.wire.filter((w) => w.dir === 'in').map((w) => w.message);
    const responseAt = incoming.findIndex((m) => m.result?.turnId === result.turnId);
    const lastStreamAt = incoming.findLastIndex((m) => m.method === 'agent/stream');
    assert.ok(responseAt > lastStreamAt, 'an agent/stream notification came after the response');
    assertNoWarnings(peer);
  });

  test('(2) allow: toolConfirm carries the documented fields and the command runs', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    let fileAtPrompt;
    const peer = await startServer(t, {
      turns: [`Creating it. ${touch('made.txt')}`, 'Done.'],
      onConfirm: (_params, _token, p) => {
        fileAtPrompt = p.exists('made.txt');
        return { decision: 'allow' };
      },
    });

    const result = await peer.chat({ prompt: 'make a file' });

    assert.equal(peer.confirms.length, 1);
    const confirm = peer.confirms[0].params;
    assert.equal(confirm.sessionId, result.sessionId);
    assert.equal(confirm.turnId, result.turnId);
    assert.equal(confirm.toolCallId, result.toolCalls[0].id);
    assert.equal(typeof confirm.approvalId, 'string');
    assert.ok(confirm.approvalId.length >= 22, 'approvalId too short to be unguessable');
    assert.equal(confirm.name, 'terminal');
    assert.deepEqual(confirm.arguments, { command: 'touch made.txt && echo made made.txt' });
    assert.equal(confirm.reason, 'code_execution');
    assert.deepEqual(Object.keys(confirm.sandbox).sort(), ['level', 'network']);
    assert.ok(SANDBOX_LEVELS.includes(confirm.sandbox.level));
    assert.equal(typeof confirm.sandbox.network, 'boolean');

    assert.equal(fileAtPrompt, false, 'the command ran before it was approved');
    assert.ok(peer.exists('made.txt'), 'made.txt is not in the workspace');

    const start = peer.ofType('tool_start')[0];
    assert.equal(start.awaitingConfirmation, true);
    assert.equal(start.toolCallId, confirm.toolCallId);
    const end = peer.ofType('tool_end')[0];
    assert.equal(end.toolCallId, confirm.toolCallId);
    assert.equal(end.status, 'completed');
    assert.equal(end.exitCode, 0);
    assert.match(end.result, /made made\.txt/);
    assert.deepEqual(Object.keys(end.sandbox).sort(), ['level', 'network']);

    assert.equal(result.stopReason, 'end_turn');
    assert.deepEqual(result.toolCalls, [
      { id: confirm.toolCallId, name: 'terminal', arguments: confirm.arguments, status: 'completed', exitCode: 0 },
    ]);
    // Order on the wire: tool_start (awaiting) before toolConfirm; no output before the decision.
    const incoming = peer.wire.filter((w) => w.dir === 'in').map((w) => w.message);
    const confirmAt = incoming.findIndex((m) => m.method === 'toolConfirm');
    const before = incoming.slice(0, confirmAt).filter((m) => m.method === 'agent/stream');
    assert.ok(before.some((m) => m.params.type === 'tool_start'));
    assert.ok(!before.some((m) => ['tool_output', 'tool_end'].includes(m.params.type)));
    assertNoWarnings(peer);
  });

  test('(3) deny with a message: nothing runs and the model hears the message', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const peer = await startServer(t, {
      turns: [`Creating it. ${touch('made.txt')}`, "OK, I won't."],
      onConfirm: () => ({ decision: 'deny', message: 'not in my repo' }),
    });

    const result = await peer.chat({ prompt: 'make a file' });

    assert.equal(peer.confirms.length, 1);
    assert.equal(peer.exists('made.txt'), false);
    const end = peer.ofType('tool_end')[0];
    assert.equal(end.status, 'denied');
    assert.equal(end.exitCode, null);
    assert.match(end.result, /^The user denied this tool call\./);
    assert.ok(end.result.includes('not in my repo'), end.result);
    assert.deepEqual(peer.ofType('tool_output'), []);
    assert.equal(result.toolCalls[0].status, 'denied');
    assert.equal(result.stopReason, 'end_turn');
    assert.ok(result.text.endsWith("OK, I won't."), result.text);
  });

  test('(4) allow for session: a second call the granted rule allows runs without asking', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    // `touch one.txt` proposes `touch *`; the grant is that rule, not the terminal tool.
    const plainTouch = (file) => toolCall('terminal', { command: `touch ${file}` });
    const peer = await startServer(t, {
      turns: [`First. ${plainTouch('one.txt')}`, 'One done.', `Second. ${plainTouch('two.txt')}`, 'Two done.'],
      onConfirm: (params) => {
        assert.equal(params.choices.find((c) => c.kind === 'allow_session').rule.pattern, 'touch *');
        return { decision: 'allow_session' };
      },
    });

    const first = await peer.chat({ prompt: 'one' });
    const second = await peer.chat({ prompt: 'two', sessionId: first.sessionId });

    assert.equal(second.sessionId, first.sessionId);
    assert.equal(peer.confirms.length, 1, 'asked again after allow_session');
    assert.ok(peer.exists('one.txt') && peer.exists('two.txt'));
    assert.deepEqual(
      [...first.toolCalls, ...second.toolCalls].map((c) => c.status),
      ['completed', 'completed'],
    );
    const secondStart = peer.ofType('tool_start').find((m) => m.turnId === second.turnId);
    assert.equal(secondStart.awaitingConfirmation, false);

    const status = await peer.request('agent/status', {});
    const session = status.sessions.find((s) => s.sessionId === first.sessionId);
    assert.deepEqual(session.allowedTools, ['terminal']);
    assert.equal(session.turns, 2);
    assertNoWarnings(peer);
  });

  test('(5) withdrawal on cancel: $/cancelRequest fires the token, a late allow runs nothing', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    let lateAnswer;
    const peer = await startServer(t, {
      // agent/cancel stops the turn before the model is called again, so the next turn is 'Still here.'
      turns: [`Creating it. ${touch('made.txt')}`, 'Still here.'],
      onConfirm: () =>
        new Promise((resolve) => {
          lateAnswer = resolve; // the person has not decided yet
        }),
    });

    const pending = peer.chat({ prompt: 'make a file' });
    await waitFor(() => peer.confirms.length === 1, 'toolConfirm');
    const { params, token } = peer.confirms[0];
    assert.equal(token.isCancellationRequested, false);

    const cancelled = await peer.request('agent/cancel', { sessionId: params.sessionId });
    assert.deepEqual(cancelled, { cancelled: true });
    const result = await pending;

    assert.equal(result.stopReason, 'cancelled');
    assert.equal(result.toolCalls[0].status, 'cancelled');
    assert.equal(peer.ofType('tool_end')[0].status, 'cancelled');
    await waitFor(() => token.isCancellationRequested, 'the toolConfirm token to fire');
    assert.ok(peer.confirms[0].cancelledAt !== null, 'onCancellationRequested did not fire');
    assert.deepEqual(peer.withdrawnIds(), peer.confirmRequestIds());

    // The person clicks Allow after all: the reply goes out and changes nothing.
    lateAnswer({ decision: 'allow' });
    const confirmId = peer.confirmRequestIds()[0];
    await waitFor(
      () => peer.wire.some((w) => w.dir === 'out' && w.message.id === confirmId && 'result' in w.message),
      'the late reply to be written',
    );
    const status = await peer.request('agent/status', {});
    assert.equal(status.sessions.find((s) => s.sessionId === params.sessionId).running, false);
    await sleep(300);
    assert.equal(peer.exists('made.txt'), false);
    assertNoWarnings(peer);

    // The session is still usable.
    const again = await peer.chat({ prompt: 'again', sessionId: params.sessionId });
    assert.equal(again.stopReason, 'end_turn');
    assert.equal(again.text.trim(), 'Still here.');
    assert.equal(peer.confirms.length, 1);
    assert.equal(peer.exists('made.txt'), false);
  });

  test('(6) withdrawal on timeout: the token fires and the call is timed_out', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const peer = await startServer(t, {
      turns: [`Creating it. ${touch('made.txt')}`, 'No answer came.'],
      options: { confirmTimeoutSeconds: 1 },
      // As the extension does: keep the prompt open until the server withdraws it, then close it.
      onConfirm: (_params, token) =>
        new Promise((resolve) => {
          token.onCancellationRequested(() => resolve(new ResponseError(-32800, 'withdrawn')));
        }),
    });

    const startedAt = Date.now();
    const result = await peer.chat({ prompt: 'make a file' });
    const elapsed = Date.now() - startedAt;

    assert.ok(elapsed >= 900, `timed out too early (${elapsed} ms)`);
    assert.equal(result.toolCalls[0].status, 'timed_out');
    assert.equal(result.stopReason, 'end_turn');
    const end = peer.ofType('tool_end')[0];
    assert.equal(end.status, 'timed_out');
    assert.match(end.result, /no approval arrived within 1 seconds/);
    await waitFor(() => peer.confirms[0]?.token.isCancellationRequested, 'the toolConfirm token to fire');
    assert.deepEqual(peer.withdrawnIds(), peer.confirmRequestIds());
    assert.equal(peer.exists('made.txt'), false);
    await peer.request('agent/status', {}); // the server is fine after the late error reply
    assertNoWarnings(peer);
  });

  test('(7) invalid params get -32602 naming the field', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const peer = await startServer(t, { turns: [] });

    const expectInvalid = async (method, params, fields) => {
      const error = await peer.request(method, params).then(
        (value) => assert.fail(`${method} ${JSON.stringify(params)} succeeded: ${JSON.stringify(value)}`),
        (e) => e,
      );
      assert.ok(error instanceof ResponseError, String(error));
      assert.equal(error.code, -32602, `${error.code} ${error.message}`);
      for (const field of fields) assert.ok(error.message.includes(field), `${field} not in: ${error.message}`);
      return error;
    };

    const both = await expectInvalid('agent/chat', { prompt: '  ', maxToolCalls: -1 }, ['prompt', 'maxToolCalls']);
    assert.deepEqual([...both.data.fields].sort(), ['maxToolCalls', 'prompt']);
    const misspelt = await expectInvalid('agent/chat', { prompt: 'x', confirmCodeExecutoin: false }, [
      'confirmCodeExecutoin',
    ]);
    assert.deepEqual(misspelt.data.fields, ['confirmCodeExecutoin']);
    await expectInvalid('agent/chat', { prompt: 'x', enabledTools: ['terminal', 'rm_rf'] }, ['enabledTools']);
    await expectInvalid('agent/cancel', { sessionId: 's_nope' }, ['sessionId']);

    const status = await peer.request('agent/status', {}); // still serving
    assert.deepEqual(status.sessions, []);
  });

  test('(8) agent/status has the documented shape (and initialize advertises gatehouse)', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const peer = await startServer(t, { turns: ['Hi.'] });

    // initialize advertised Gatehouse under capabilities.experimental
    const gatehouse = peer.initResult.capabilities.experimental.gatehouse;
    assert.equal(typeof gatehouse.version, 'string');
    assert.ok(gatehouse.tools.includes('terminal') && gatehouse.tools.includes('python'), gatehouse.tools);
    assert.ok(SANDBOX_LEVELS.includes(gatehouse.sandbox.level), gatehouse.sandbox.level);
    assert.equal(typeof gatehouse.sandbox.network, 'boolean');

    const before = await peer.request('agent/status', {});
    assert.deepEqual(before.sessions, []);
    const result = await peer.chat({ prompt: 'hi' });
    const status = await peer.request('agent/status', {});

    assert.equal(typeof status.version, 'string');
    assert.equal(status.version, gatehouse.version);
    assert.deepEqual(status.sandbox, gatehouse.sandbox);
    assert.equal(status.backend, 'scripted');
    assert.equal(typeof status.model, 'string');
    assert.ok(status.model.length > 0);
    assert.equal(status.workspace, peer.workspace);
    assert.ok(SANDBOX_LEVELS.includes(status.sandbox.level));
    assert.equal(typeof status.sandbox.network, 'boolean');
    assert.ok(SANDBOX_LEVELS.includes(status.sandbox.minLevel));
    assert.equal(typeof status.sandbox.reason, 'string');
    assert.deepEqual(status.sessions, [
      { sessionId: result.sessionId, turns: 1, running: false, allowedTools: [] },
    ]);
    if ('modelLoaded' in status) assert.equal(typeof status.modelLoaded, 'boolean');
    // params omitted works too
    assert.deepEqual((await peer.request('agent/status')).sessions, status.sessions);
    assertNoWarnings(peer); // the extension's full default initializationOptions are all valid
  });
});
