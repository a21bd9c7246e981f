import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS, readSettings, resolvePath, toInitializationOptions, type GatehouseSettings } from '../../src/settings';

const defaults = (): GatehouseSettings => readSettings((_key, fallback) => fallback);

test('defaults map to the server defaults, with no empty strings', () => {
  assert.deepEqual(toInitializationOptions(defaults()), {
    backend: 'llama_cpp',
    contextSize: 4096,
    modelDefaults: true,
    confirmCodeExecution: true,
    confirmToolCalls: false,
    confirmFileEdits: true,
    bypassPermissions: false,
    confirmTimeoutSeconds: 300,
    toolTimeoutSeconds: 120,
    sandbox: { network: false, minLevel: 'standard' },
    memory: { sessions: true, checkpoints: true, checkpointMaxFileBytes: 10485760 },
  });
});

test('every setting key maps to its initializationOptions name, with nested sandbox, memory and openai', () => {
  const values: Record<string, unknown> = {
    backend: 'openai',
    model: 'qwen2.5-coder',
    script: '/abs/script.json',
    threads: 4,
    contextSize: 8192,
    toolGrammar: true,
    modelDefaults: false,
    confirmCodeExecution: false,
    confirmToolCalls: true,
    confirmFileEdits: false,
    bypassPermissions: true,
    'sandbox.network': true,
    'sandbox.minLevel': 'strong',
    'memory.sessions': false,
    'memory.checkpoints': false,
    'memory.checkpointMaxFileBytes': 1024,
    confirmTimeoutSeconds: 30,
    toolTimeoutSeconds: 10.5,
    'openai.baseUrl': 'http://localhost:8000/v1',
    'openai.model': 'gpt-x',
    'openai.apiKeyEnv': 'MY_KEY',
    'server.pythonCommand': '/venv/bin/python',
    'trace.server': 'verbose',
  };
  const settings = readSettings(<T>(key: string, fallback: T) => (key in values ? (values[key] as T) : fallback));
  assert.equal(settings.pythonCommand, '/venv/bin/python');
  assert.equal(settings.traceServer, 'verbose');
  assert.deepEqual(toInitializationOptions(settings), {
    backend: 'openai',
    model: 'qwen2.5-coder',
    script: '/abs/script.json',
    threads: 4,
    contextSize: 8192,
    toolGrammar: true,
    modelDefaults: false,
    confirmCodeExecution: false,
    confirmToolCalls: true,
    confirmFileEdits: false,
    bypassPermissions: true,
    confirmTimeoutSeconds: 30,
    toolTimeoutSeconds: 10.5,
    sandbox: { network: true, minLevel: 'strong' },
    memory: { sessions: false, checkpoints: false, checkpointMaxFileBytes: 1024 },
    openai: { baseUrl: 'http://localhost:8000/v1', model: 'gpt-x', apiKeyEnv: 'MY_KEY' },
  });
});

test('every declared setting is read', () => {
  const read: string[] = [];
  readSettings(<T>(key: string, fallback: T) => {
    read.push(key);
    return fallback;
  });
  assert.deepEqual(read.sort(), Object.values(DEFAULTS).map(([key]) => key).sort());
  assert.equal(read.length, 23);
});

test('the client-only settings never reach the server', () => {
  const options = toInitializationOptions({ ...defaults(), pythonCommand: '/x/python', traceServer: 'messages' });
  assert.ok(!JSON.stringify(options).includes('/x/python'));
  assert.ok(!('traceServer' in options) && !('pythonCommand' in options));
});

test('partial openai settings send only what is set; blank strings are left out', () => {
  const options = toInitializationOptions({ ...defaults(), openaiModel: ' m ', openaiBaseUrl: '  ', model: '   ' });
  assert.deepEqual(options.openai, { model: 'm' });
  assert.ok(!('model' in options));
});

test('threads below 1 or null are left out', () => {
  assert.ok(!('threads' in toInitializationOptions({ ...defaults(), threads: 0 })));
  assert.ok(!('threads' in toInitializationOptions({ ...defaults(), threads: null })));
});

test('script paths resolve from the workspace folder; model names stay names', () => {
  const ctx = { workspaceFolder: '/ws', home: '/home/me' };
  const options = toInitializationOptions({ ...defaults(), backend: 'scripted', script: 'examples/demo.json', model: 'smollm2' }, ctx);
  assert.equal(options.script, '/ws/examples/demo.json');
  assert.equal(options.model, 'smollm2');
  assert.equal(toInitializationOptions({ ...defaults(), model: './models/a.gguf' }, ctx).model, '/ws/models/a.gguf');
  assert.equal(toInitializationOptions({ ...defaults(), model: '~/m.gguf' }, ctx).model, '/home/me/m.gguf');
  assert.equal(resolvePath('${workspaceFolder}/s.json', ctx, true), '/ws/s.json');
  assert.equal(resolvePath('/abs/s.json', ctx, true), '/abs/s.json');
  assert.equal(resolvePath('rel.json', {}, true), 'rel.json');
});
