// End-to-end: the built Gatehouse .vsix in a real VS Code (code-server) in a real headless
// Chromium, talking to the real Python server with the scripted backend. A person's view of each
// step is saved to vscode-client/test-results/e2e-*.png.
//
//   bash scripts/setup-vscode-e2e.sh && node --test vscode-client/test/e2e/
//
// Environment: GATEHOUSE_VSIX (default: the newest vscode-client/*.vsix), GATEHOUSE_PYTHON
// (default: <repo>/.venv/bin/python), and those harness.mjs reads.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  Fatal, REPO_DIR, RESULTS_DIR, addUserSettings, collectLogs, findFrame, findVsix, launch, log, runCommand, screenshot,
  since, sleep, waitFor, writeJson,
} from './harness.mjs';

const PYTHON = process.env.GATEHOUSE_PYTHON || path.join(REPO_DIR, '.venv', 'bin', 'python');

const ANSWER = 'Hello from the scripted model. Every word of this answer streams into the chat view piece by piece.';
const call = (command) => `<tool_call>${JSON.stringify({ name: 'terminal', arguments: { command } })}</tool_call>`;
// One cursor for the whole server: each model call takes the next turn, across sessions.
const SCRIPT = {
  turns: [
    // (a) a plain streamed answer, slow enough to be seen growing.
    { text: ANSWER, chunkDelayMs: 60 },
    // (b) Allow: the call, then the model's answer after the tool result.
    `I will create the file.\n${call('touch allowed.txt')}`,
    'Done: allowed.txt was created.',
    // (c) Deny: the call, then the model's answer after the denial.
    `I will create another file.\n${call('touch denied.txt')}`,
    'Understood: denied.txt was not created.',
    // (e) a command that hides terminal escapes: shown written out, with a warning; denied.
    `Just listing.\n${call('touch hidden_ran.txt #\u001b[2K\u001b[1G  $ ls -la')}`,
    'Understood: nothing ran.',
    // (d) Stop while the approval is pending: the turn ends there, so the next turn is never used.
    `One more file.\n${call('touch stopped.txt')}`,
    'THIS TURN MUST NEVER BE STREAMED.',
  ],
};

const timings = [];
let failed = false;
let session;
let page;
let frame;
let workspace;

/** Run one scenario, timing it and saving a screenshot of the page if it fails. */
function scenario(name, fn) {
  test(name, { timeout: 120000 }, async () => {
    const start = Date.now();
    try {
      await fn();
    } catch (error) {
      failed = true;
      if (page) await screenshot(page, `e2e-FAILED-${name.replace(/\W+/g, '-')}`).catch(() => {});
      throw error;
    } finally {
      timings.push([name, Date.now() - start]);
      log(`${name}: ${since(start)}`);
    }
  });
}

/** The webview's document; found again if VS Code recreated the frame. */
async function view() {
  if (!frame || frame.isDetached()) frame = await findFrame(page, '#prompt');
  return frame;
}

/** Stop waiting at once when the chat view shows an error. */
async function noError() {
  const box = (await view()).locator('#error');
  if (await box.isVisible()) throw new Fatal(`the chat view shows an error: ${(await box.textContent()).trim()}`);
}

const onDisk = (name) => fs.existsSync(path.join(workspace, name));

async function text(selector) {
  return (await (await view()).locator(selector).last().textContent())?.trim() ?? '';
}

async function startNewSession() {
  const f = await view();
  await f.click('#new-session');
  await waitFor('an empty transcript', async () => await f.locator('.message').count() === 0);
}

async function send(prompt) {
  const f = await view();
  await f.fill('#prompt', prompt);
  await f.click('#send');
  await f.locator('.message.user', { hasText: prompt }).waitFor({ timeout: 10000 });
}

/** The turn is over when Send is enabled and Stop disabled again. */
async function turnEnded(timeout = 30000) {
  const f = await view();
  await waitFor('the turn to end', async () => {
    await noError();
    return await f.locator('#send').isEnabled() && await f.locator('#stop').isDisabled();
  }, { timeout });
}

async function approvalCard() {
  const card = (await view()).locator('.approval-card');
  await waitFor('an approval card', async () => {
    await noError();
    return card.isVisible();
  }, { timeout: 30000 });
  await card.scrollIntoViewIfNeeded();
  return card;
}

describe('Gatehouse in VS Code (code-server + Chromium)', () => {
  before(async () => {
    const start = Date.now();
    if (!fs.existsSync(PYTHON)) throw new Error(`no Python at ${PYTHON}: run \`make test\` (or set GATEHOUSE_PYTHON)`);
    const vsix = findVsix();
    // Screenshots of an earlier run would mislead whoever looks at this one.
    if (fs.existsSync(RESULTS_DIR)) {
      for (const name of fs.readdirSync(RESULTS_DIR)) {
        if (/^e2e-.*\.png$/.test(name) || name === 'logs') fs.rmSync(path.join(RESULTS_DIR, name), { recursive: true });
      }
    }
    log(`vsix ${vsix}`);
    session = await launch({
      vsix,
      prepare: (sandbox) => {
        workspace = sandbox.workspace;
        const script = path.join(sandbox.root, 'script.json');
        writeJson(script, SCRIPT);
        fs.writeFileSync(path.join(workspace, 'README.md'), '# e2e workspace\n');
        // All `machine`-scoped (what the unsandboxed server runs and opens): user settings only. A
        // workspace's .vscode/settings.json naming them is ignored, which this run relies on: it
        // says the opposite, and the scripted model must still be the one that answers.
        writeJson(path.join(workspace, '.vscode', 'settings.json'), {
          'gatehouse.backend': 'llama_cpp',
          'gatehouse.script': path.join(workspace, 'planted.json'),
        });
        addUserSettings(sandbox, {
          'gatehouse.server.pythonCommand': PYTHON,
          'gatehouse.backend': 'scripted',
          'gatehouse.script': script,
        });
      },
    });
    page = session.page;
    failed = true; // until the chat view is open
    await screenshot(page, 'e2e-0-workbench');
    await runCommand(page, 'Gatehouse: Open Chat');
    frame = await findFrame(page, '#prompt');
    await (await view()).locator('#send').waitFor({ state: 'visible' });
    await screenshot(page, 'e2e-1-chat-open');
    log(`setup (vsix install, code-server, Chromium, workbench, chat view): ${since(start)}`);
    timings.push(['setup', Date.now() - start]);
    failed = false;
  });

  after(async () => {
    if (failed && session) log(`logs of the failed run:\n${collectLogs(session.sandbox)}`);
    if (session) await session.stop();
    if (timings.length) {
      log('timings:');
      for (const [name, ms] of timings) log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${name}`);
    }
  });

  scenario('a: a prompt streams an answer', async () => {
    const f = await view();
    await send('Say hello');
    const content = f.locator('.message.assistant .content').last();
    // Watch the answer grow: a streamed answer is seen part-written before it is whole.
    const seen = new Set();
    await waitFor('the whole answer', async () => {
      await noError();
      const now = (await content.textContent()) ?? '';
      if (now) seen.add(now.length);
      return now.trim() === ANSWER;
    }, { timeout: 30000, interval: 50 });
    await turnEnded();
    await screenshot(page, 'e2e-a-streamed-answer');
    assert.ok(seen.size >= 3, `the answer should stream in pieces; lengths seen: ${[...seen].join(', ')}`);
    assert.equal(await text('.message.user'), 'Say hello');
    assert.equal(await f.locator('#error').isVisible(), false, `error shown: ${await text('#error')}`);
  });

  scenario('b: Allow once runs the command', async () => {
    await startNewSession();
    const f = await view();
    await send('Create allowed.txt');
    const card = await approvalCard();
    assert.match(await card.getAttribute('data-approval-id'), /\S/, 'the card carries data-approval-id');
    assert.equal(await f.locator('.tool-card[data-tool-call-id]').count(), 1, 'one tool card with data-tool-call-id');
    assert.equal(await text('.tool-card .tool-status'), 'awaiting approval');
    assert.equal(await f.locator('#stop').isEnabled(), true, 'Stop is enabled while the turn runs');
    assert.equal((await card.locator('.approval-tool').textContent()).trim(), 'terminal');
    assert.match(await card.locator('pre.approval-code').textContent(), /touch allowed\.txt/);
    assert.notEqual((await card.locator('.approval-isolation').textContent()).trim(), '');
    assert.equal((await card.locator('.approval-folder').textContent()).trim(), workspace);
    assert.notEqual((await card.locator('.approval-reason').textContent()).trim(), '');
    for (const selector of ['textarea.approval-message', 'button.approve-once', 'button.approve-session', 'button.deny']) {
      assert.equal(await card.locator(selector).isVisible(), true, `${selector} should be visible`);
    }
    assert.equal(onDisk('allowed.txt'), false, 'nothing may run before the approval');
    await screenshot(page, 'e2e-b1-approval-card');
    await card.locator('button.approve-once').click();
    await waitFor('allowed.txt on disk', () => onDisk('allowed.txt'), { timeout: 20000 });
    await waitFor('the approval card to go', async () => await f.locator('.approval-card').count() === 0);
    await turnEnded();
    assert.equal(await text('.tool-card .tool-status'), 'completed');
    assert.equal(await text('.tool-card .tool-name'), 'terminal');
    assert.match(await text('.tool-card pre.tool-args'), /touch allowed\.txt/);
    assert.match(await text('.message.assistant .content'), /Done: allowed\.txt was created\./);
    await screenshot(page, 'e2e-b2-allowed-ran');
  });

  scenario('c: Deny runs nothing', async () => {
    await startNewSession();
    const f = await view();
    await send('Create denied.txt');
    const card = await approvalCard();
    assert.match(await card.locator('pre.approval-code').textContent(), /touch denied\.txt/);
    await screenshot(page, 'e2e-c1-approval-card');
    await card.locator('button.deny').click();
    await waitFor('the tool status to say denied', async () => (await text('.tool-card .tool-status')) === 'denied',
      { timeout: 20000 });
    await waitFor('the approval card to go', async () => await f.locator('.approval-card').count() === 0);
    await turnEnded();
    assert.match(await text('.message.assistant .content'), /Understood: denied\.txt was not created\./);
    await sleep(1000);
    assert.equal(onDisk('denied.txt'), false, 'denied.txt must never appear');
    await screenshot(page, 'e2e-c2-denied');
  });

  scenario('e: a command hiding escape codes is shown written out, with a warning', async () => {
    await startNewSession();
    const f = await view();
    await send('List the files');
    const card = await approvalCard();
    const shown = await card.locator('pre.approval-code').textContent();
    assert.equal(shown, 'touch hidden_ran.txt #\\x1b[2K\\x1b[1G  $ ls -la');
    assert.ok(!shown.includes('\u001b'), 'no raw escape character may reach the card');
    assert.match(await card.locator('.approval-warning').textContent(), /hidden or control characters/);
    assert.equal(await card.locator('button').first().textContent(), 'Deny', 'Deny comes first');
    await screenshot(page, 'e2e-e1-hidden-characters');
    await card.locator('button.deny').click();
    await waitFor('the approval card to go', async () => await f.locator('.approval-card').count() === 0,
      { timeout: 20000 });
    await turnEnded();
    assert.equal(onDisk('hidden_ran.txt'), false, 'hidden_ran.txt must never appear');
  });

  scenario('d: Stop while the approval is pending runs nothing', async () => {
    await startNewSession();
    const f = await view();
    await send('Create stopped.txt');
    const card = await approvalCard();
    assert.match(await card.locator('pre.approval-code').textContent(), /touch stopped\.txt/);
    assert.equal(await f.locator('#stop').isEnabled(), true, 'Stop should be enabled while the turn runs');
    await screenshot(page, 'e2e-d1-pending');
    await f.click('#stop');
    await waitFor('the approval card to go', async () => await f.locator('.approval-card').count() === 0,
      { timeout: 15000 });
    await turnEnded(15000);
    await sleep(2000);
    assert.equal(onDisk('stopped.txt'), false, 'stopped.txt must never appear');
    // The turn ended cancelled: the tool call says so, and so do the turn's note and the status line.
    assert.equal(await text('.tool-card .tool-status'), 'cancelled');
    assert.match(await text('.message.assistant .turn-note'), /stopped/i);
    assert.match(await text('#status-line'), /stopped/i);
    assert.doesNotMatch(await text('.message.assistant .content'), /MUST NEVER/);
    await screenshot(page, 'e2e-d2-stopped');
  });
});
