// The golden transcripts (tests/golden/transcripts/*.json), replayed message by message against the
// real Python server, with vscode-jsonrpc's own framing (StreamMessageReader/Writer): the same files
// the Python suite replays, so both sides of the contract are held to one message sequence.
// The placeholder rules are those of tests/golden/transcript.py.
//
// Run: cd vscode-client/test/contract && npm ci && node --test golden.test.mjs
// Env: GATEHOUSE_PYTHON, GATEHOUSE_ROOT (see protocol.test.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { StreamMessageReader, StreamMessageWriter } = require('vscode-jsonrpc/node');

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = process.env.GATEHOUSE_ROOT ?? path.resolve(HERE, '..', '..', '..');
const PYTHON = process.env.GATEHOUSE_PYTHON ?? path.join(REPO_ROOT, '.venv', 'bin', 'python');
const TRANSCRIPTS = path.join(REPO_ROOT, 'tests', 'golden', 'transcripts');
const READ_TIMEOUT_MS = 20_000;
const QUIET_MS = 300;
const MERGEABLE = new Set(['content', 'reasoning', 'tool_output', 'tool_args']);
const PLACEHOLDER = /<(session|call|approval|request|content|rule):(\d+)>|<workspace>|<level>|<any>|<time>|<commit>/g;
const FIXED = { '<time>': '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ', '<commit>': '[0-9a-f]{40}' };
const LEVELS = ['strong', 'standard', 'limits-only', 'none'];

const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What each placeholder stands for in this run. */
class Bindings {
  constructor(workspace) {
    this.values = new Map();
    this.workspace = workspace;
  }

  substitute(data) {
    if (typeof data === 'string') {
      let text = data.split('<workspace>').join(this.workspace);
      for (const [name, value] of this.values) text = text.split(name).join(value);
      return text;
    }
    if (Array.isArray(data)) return data.map((v) => this.substitute(v));
    if (data !== null && typeof data === 'object') {
      return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, this.substitute(v)]));
    }
    return data;
  }

  match(expected, actual, where = '$') {
    if (typeof expected === 'string' && typeof actual === 'string') {
      const names = [];
      let source = '';
      let last = 0;
      for (const found of expected.matchAll(PLACEHOLDER)) {
        source += escapeRegex(expected.slice(last, found.index));
        const token = found[0];
        if (token === '<workspace>') source += escapeRegex(this.workspace);
        else if (token in FIXED) source += FIXED[token];
        else if (token === '<any>') source += '[\\s\\S]*';
        else if (this.values.has(token)) source += escapeRegex(this.values.get(token));
        else {
          source += token === '<level>' ? `(${LEVELS.join('|')})` : '([\\s\\S]+?)';
          names.push(token);
        }
        last = found.index + token.length;
      }
      source += escapeRegex(expected.slice(last));
      const found = new RegExp(`^${source}$`).exec(actual);
      assert.ok(found, `${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
      names.forEach((name, i) => {
        const value = found[i + 1];
        if (!this.values.has(name)) this.values.set(name, value);
        assert.equal(this.values.get(name), value, `${where}: ${name} changed`);
      });
      return;
    }
    if (Array.isArray(expected) && Array.isArray(actual)) {
      assert.equal(actual.length, expected.length, `${where}: number of items`);
      expected.forEach((e, i) => this.match(e, actual[i], `${where}[${i}]`));
      return;
    }
    if (expected !== null && actual !== null && typeof expected === 'object' && typeof actual === 'object') {
      assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${where}: keys`);
      for (const key of Object.keys(expected)) this.match(expected[key], actual[key], `${where}.${key}`);
      return;
    }
    assert.deepEqual(actual, expected, where);
  }
}

function mergeKey(message) {
  if (message?.method !== 'agent/stream') return null;
  const p = message.params ?? {};
  if (!MERGEABLE.has(p.type)) return null;
  return `${p.type}|${p.toolCallId ?? ''}|${p.index ?? ''}`;
}

/** The server's messages, as vscode-jsonrpc's reader delivers them, in a queue. */
class Inbox {
  constructor(reader) {
    this.items = [];
    this.waiters = [];
    this.held = null;
    reader.listen((message) => {
      const waiter = this.waiters.shift();
      if (waiter) waiter(message);
      else this.items.push(message);
    });
  }

  next(ms = READ_TIMEOUT_MS) {
    if (this.held !== null) {
      const message = this.held;
      this.held = null;
      return Promise.resolve(message);
    }
    if (this.items.length > 0) return Promise.resolve(this.items.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no message within ${ms} ms`));
      }, ms);
      const waiter = (message) => {
        clearTimeout(timer);
        resolve(message);
      };
      this.waiters.push(waiter);
    });
  }

  /** The next message; text deltas are merged until they hold the golden text. */
  async nextMerged(expected) {
    const message = await this.next();
    const key = mergeKey(message);
    if (key === null || mergeKey(expected) !== key) return message;
    const want = expected.params.text;
    while (message.params.text.length < want.length) {
      const following = await this.next();
      if (mergeKey(following) !== key) {
        this.held = following;
        break;
      }
      message.params.text += following.params.text;
    }
    return message;
  }
}

/** Put `files` (relative path -> text) into the workspace. */
function writeFiles(workspace, files) {
  for (const [relative, content] of Object.entries(files ?? {})) {
    const file = path.join(workspace, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, 'utf8');
  }
}

async function replay(transcript) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-golden-')));
  const workspace = path.join(tmp, 'ws');
  fs.mkdirSync(workspace);
  writeFiles(workspace, transcript.files);
  const script = path.join(tmp, 'script.json');
  fs.writeFileSync(script, JSON.stringify({ turns: transcript.turns }));
  const child = spawn(
    PYTHON,
    ['-P', '-m', 'server', '--backend', 'scripted', '--script', script, '--workspace', workspace, '--log-level', 'WARNING'],
    {
      cwd: REPO_ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, PYTHONUNBUFFERED: '1', GATEHOUSE_DATA_DIR: path.join(tmp, 'gatehouse-data') },
    },
  );
  const writer = new StreamMessageWriter(child.stdin);
  const inbox = new Inbox(new StreamMessageReader(child.stdout));
  const bindings = new Bindings(workspace);
  try {
    const params = { processId: null, rootUri: pathToFileURL(workspace).href, capabilities: transcript.capabilities };
    if (transcript.initializationOptions !== undefined) params.initializationOptions = transcript.initializationOptions;
    await writer.write({ jsonrpc: '2.0', id: 'init', method: 'initialize', params });
    for (;;) {
      if ((await inbox.next()).id === 'init') break;
    }
    await writer.write({ jsonrpc: '2.0', method: 'initialized', params: {} });
    for (const [index, step] of transcript.steps.entries()) {
      if ('send' in step) {
        await writer.write(bindings.substitute(step.send));
      } else if ('writeFile' in step) {
        writeFiles(workspace, { [step.writeFile.path]: step.writeFile.content });
      } else if ('sendRaw' in step) {
        const body = Buffer.from(step.sendRaw, 'utf8');
        child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]));
      } else {
        const actual = await inbox.nextMerged(step.expect);
        bindings.match(step.expect, actual, `step ${index}`);
      }
    }
    const extra = await inbox.next(QUIET_MS).then(
      (message) => message,
      () => null,
    );
    assert.equal(extra, null, `a message the golden transcript does not have: ${JSON.stringify(extra)}`);
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const files = fs.readdirSync(TRANSCRIPTS).filter((f) => f.endsWith('.json')).sort();

test('there are golden transcripts to replay', () => {
  assert.ok(files.length >= 15, `only ${files.length} transcripts in ${TRANSCRIPTS}`);
});

for (const file of files) {
  const transcript = JSON.parse(fs.readFileSync(path.join(TRANSCRIPTS, file), 'utf8'));
  test(`golden transcript: ${transcript.flow}`, { timeout: 60_000 }, async () => {
    await replay(transcript);
  });
}
