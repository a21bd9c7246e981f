import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultPathCommands, findInterpreter, probeImportServer, type InterpreterSources } from '../../src/interpreter';

function sources(setting: string, extension: string | undefined, working: string[], probed: string[]): InterpreterSources {
  return {
    setting: () => setting,
    pythonExtension: () => Promise.resolve(extension),
    pathCommands: ['python3'],
    probe: (command) => {
      probed.push(command);
      return Promise.resolve({ ok: working.includes(command), detail: working.includes(command) ? 'ok' : 'No module named server' });
    },
  };
}

test('the setting comes first', async () => {
  const probed: string[] = [];
  const result = await findInterpreter(sources('/venv/bin/python', '/ext/python', ['/venv/bin/python', '/ext/python', 'python3'], probed));
  assert.deepEqual(result.ok && [result.command, result.source], ['/venv/bin/python', 'setting']);
  assert.deepEqual(probed, ['/venv/bin/python']);
});

test('then the Python extension, then python3 on PATH', async () => {
  const probed: string[] = [];
  const ext = await findInterpreter(sources('', '/ext/python', ['/ext/python', 'python3'], probed));
  assert.deepEqual(ext.ok && [ext.command, ext.source], ['/ext/python', 'python extension']);
  const path = await findInterpreter(sources('  ', undefined, ['python3'], []));
  assert.deepEqual(path.ok && [path.command, path.source], ['python3', 'PATH']);
});

test('a candidate that cannot import server is skipped', async () => {
  const probed: string[] = [];
  const result = await findInterpreter(sources('/bad/python', '/ext/python', ['python3'], probed));
  assert.deepEqual(probed, ['/bad/python', '/ext/python', 'python3']);
  assert.ok(result.ok);
  assert.deepEqual(result.attempts.map((a) => a.ok), [false, false, true]);
});

test('none works: an actionable message naming what was tried', async () => {
  const result = await findInterpreter(sources('/bad/python', undefined, [], []));
  assert.equal(result.ok, false);
  if (!result.ok) {
    assert.match(result.message, /gatehouse\.server\.pythonCommand/);
    assert.match(result.message, /\/bad\/python \(setting\)/);
    assert.match(result.message, /python3 \(PATH\)/);
  }
});

test('a failing Python extension or probe is just a miss', async () => {
  const result = await findInterpreter({
    setting: () => '',
    pythonExtension: () => Promise.reject(new Error('boom')),
    pathCommands: ['python3'],
    probe: () => Promise.reject(new Error('spawn failed')),
  });
  assert.equal(result.ok, false);
  assert.equal(result.attempts.length, 1);
});

test('the same command is probed once', async () => {
  const probed: string[] = [];
  await findInterpreter(sources('python3', 'python3', [], probed));
  assert.deepEqual(probed, ['python3']);
});

test('PATH commands per platform', () => {
  assert.deepEqual(defaultPathCommands('linux'), ['python3']);
  assert.ok(defaultPathCommands('win32').includes('python'));
});

test('probeImportServer: a missing executable fails without throwing', async () => {
  const result = await probeImportServer('/nonexistent/python-xyz', '/');
  assert.equal(result.ok, false);
});
