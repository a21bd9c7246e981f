import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StatusResult } from '../../src/protocol';
import { formatStatus } from '../../src/statusBar';

const status = (level: StatusResult['sandbox']['level'], network = false): StatusResult => ({
  version: '0.1.0',
  backend: 'scripted',
  model: '/home/me/scripts/demo-script.json',
  modelLoaded: true,
  workspace: '/ws',
  sandbox: { level, network, minLevel: 'standard', reason: 'because' },
  sessions: [],
});

test('strong isolation: model, engine and level, no warning', () => {
  const view = formatStatus({ state: 'running', status: status('strong'), bypass: false });
  assert.equal(view.text, '$(shield) demo-script.json · scripted · strong');
  assert.equal(view.warning, false);
  assert.equal(view.error, false);
  assert.match(view.tooltip, /Model: \/home\/me\/scripts\/demo-script.json/);
  assert.match(view.tooltip, /Engine: scripted/);
  assert.match(view.tooltip, /Isolation: strong, network off/);
});

test('below strong is a warning', () => {
  for (const level of ['standard', 'limits-only', 'none'] as const) {
    const view = formatStatus({ state: 'running', status: status(level), bypass: false });
    assert.equal(view.warning, true, level);
    assert.ok(view.text.startsWith('$(warning)'));
    assert.ok(view.text.endsWith(`· ${level}`));
  }
});

test('bypass is a warning even under strong isolation, and says so', () => {
  const view = formatStatus({ state: 'running', status: status('strong'), bypass: true });
  assert.equal(view.warning, true);
  assert.ok(view.text.endsWith('· bypass'));
  assert.match(view.tooltip, /BYPASSED/);
});

test('an unset model reads "default model"', () => {
  const view = formatStatus({ state: 'running', status: { ...status('strong'), model: null }, bypass: false });
  assert.ok(view.text.includes('default model'));
});

test('starting and error states', () => {
  assert.match(formatStatus({ state: 'starting', bypass: false }).text, /starting/);
  const error = formatStatus({ state: 'error', bypass: false, detail: 'no python' });
  assert.equal(error.error, true);
  assert.equal(error.command, 'gatehouse.showLogs');
  assert.match(error.tooltip, /no python/);
});

test('approvals waiting: the status bar says so, and a click opens the approval', () => {
  const view = formatStatus({ state: 'running', status: status('strong'), bypass: false, waiting: 1 });
  assert.equal(view.text, '$(bell-dot) Gatehouse: 1 approval waiting');
  assert.equal(view.command, 'gatehouse.showApproval');
  assert.equal(view.warning, true);
  assert.match(view.tooltip, /nothing runs until you answer/);
  assert.match(view.tooltip, /Engine: scripted/, 'the server facts stay in the tooltip');
  assert.equal(formatStatus({ state: 'running', status: status('strong'), bypass: false, waiting: 2 }).text, '$(bell-dot) Gatehouse: 2 approvals waiting');
  assert.equal(formatStatus({ state: 'running', status: status('strong'), bypass: false, waiting: 0 }).command, 'gatehouse.openChat');
});
