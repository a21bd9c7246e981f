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
import { answerDeltas } from '../../bench/answer.mjs';
import {
  Fatal, REPO_DIR, RESULTS_DIR, addUserSettings, collectLogs, findFrame, findVsix, launch, log, runCommand, screenshot,
  since, sleep, waitFor, writeJson,
} from './harness.mjs';
import { askNative, openNativeChat, responseButton, responseButtons, responseDone, responseText } from './nativeChat.mjs';

const PYTHON = process.env.GATEHOUSE_PYTHON || path.join(REPO_DIR, '.venv', 'bin', 'python');

const ANSWER = 'Hello from the scripted model. Every word of this answer streams into the chat view piece by piece.';
const MARKDOWN = 'Here is **the script**:\n\n```python\nprint("copied from Gatehouse")\n```\n\nRun it with `python script.py`; see [the docs](https://example.com/docs).';
const NATIVE_ANSWER = 'Hello from Gatehouse in the Chat view: this answer streams **piece by piece** into VS Code\'s own chat.';
const call = (command) => `<tool_call>${JSON.stringify({ name: 'terminal', arguments: { command } })}</tool_call>`;
// One cursor for the whole server: each model call takes the next turn, across sessions, in the
// order of the scenarios below.
const SCRIPT = {
  turns: [
    // (a) a plain streamed answer, slow enough to be seen growing.
    { text: ANSWER, chunkDelayMs: 60 },
    // (b) Allow: text, the call, then the model's answer after the tool result.
    `I will create the file.\n${call('touch allowed.txt')}`,
    'Done: allowed.txt was created.',
    // (c) Deny: the call, then the model's answer after the denial.
    `I will create another file.\n${call('touch denied.txt')}`,
    'Understood: denied.txt was not created.',
    // (e) a command that hides terminal escapes: shown written out, with a warning; denied.
    `Just listing.\n${call('touch hidden_ran.txt #\u001b[2K\u001b[1G  $ ls -la')}`,
    'Understood: nothing ran.',
    // (f) Always allow: a rule is made, the next note runs unasked, removing the rule asks again.
    `I will write a note.\n${call('echo NOTE-1 >> notes.txt')}`,
    'Noted.',
    `Another note.\n${call('echo NOTE-2 >> notes.txt')}`,
    'Noted again.',
    `A third note.\n${call('echo NOTE-3 >> notes.txt')}`,
    'Understood: the third note was not written.',
    // (m) markdown with a code block.
    { text: MARKDOWN, chunkDelayMs: 20 },
    // (w) an approval while the view is hidden: slow enough to switch away first.
    { text: `Preparing the file, slowly, so you can look elsewhere.\n${call('touch hidden.txt')}`, chunkDelayMs: 120 },
    'Understood: hidden.txt was not created.',
    // (g) @gatehouse in VS Code's Chat view: a streamed answer.
    { text: NATIVE_ANSWER, chunkDelayMs: 60 },
    // (h) @gatehouse: Allow.
    `I will create native-allowed.txt.\n${call('touch native-allowed.txt')}`,
    'Done: native-allowed.txt was created.',
    // (i) @gatehouse: Deny.
    `I will create native-denied.txt.\n${call('touch native-denied.txt')}`,
    'Understood: native-denied.txt was not created.',
    // (j) @gatehouse: Stop while the approval is pending: the turn ends there (if the model were
    // called again it would take (d)'s turn and (d) would fail).
    `One more, natively.\n${call('touch native-stopped.txt')}`,
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

/** The newest answer's parts as the person sees them, top to bottom: text, tool cards, notes. */
async function turnOrder() {
  // The files a turn changed (.turn-changes, issue 11) follow the turn once the server has listed them.
  return (await view()).locator('.message.assistant').last().evaluate((message) => Array.from(message.children).filter((node) => !node.classList.contains('turn-changes')).map((node) => {
    if (node.classList.contains('content')) return `text: ${node.textContent.trim()}`;
    if (node.classList.contains('tool-card')) return `tool: ${node.querySelector('.tool-status').textContent}`;
    return node.className;
  }));
}

/** The notification toasts on screen, as text. */
async function toasts() {
  return page.locator('.notifications-toasts .notification-toast').allInnerTexts();
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
    // The turn reads as it happened: the sentence, the command, then the answer after it ran.
    const ORDER = ['text: I will create the file.', 'tool: completed', 'text: Done: allowed.txt was created.'];
    assert.deepEqual(await turnOrder(), ORDER);
    // Under the turn, the file the command created (issue 11), with Undo this turn.
    const created = f.locator('.message.assistant').last().locator('.turn-changes li.turn-file', { has: f.locator('a.turn-file-link[data-path="allowed.txt"]') });
    await waitFor('the turn\'s changed files', () => created.isVisible(), { timeout: 20000 });
    assert.equal(await created.locator('.turn-file-action').getAttribute('data-action'), 'created');
    assert.equal(await f.locator('.message.assistant').last().locator('button.undo-turn').count(), 1);
    await screenshot(page, 'e2e-b2-allowed-ran');
    // A reloaded view gets the same turn, in the same order, from the extension host.
    // (a mark in the old document tells the reloaded one apart, whether VS Code swaps the frame or reloads it)
    await (await view()).evaluate(() => { window.beforeReload = true; });
    await runCommand(page, 'Developer: Reload Webviews');
    await waitFor('the reloaded view to show the turn', async () => {
      frame = undefined;
      const f = await view();
      if (await f.evaluate(() => window.beforeReload === true)) return false;
      return JSON.stringify(await turnOrder()) === JSON.stringify(ORDER);
    }, { timeout: 30000 });
    assert.deepEqual(await turnOrder(), ORDER);
    assert.equal(await text('.tool-card .approval-note'), 'Allowed once');
    await screenshot(page, 'e2e-b3-after-reload');
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

  scenario('f: Always allow makes a rule; the Rules view lists it and removes it', async () => {
    await startNewSession();
    const f = await view();
    await send('Write a note');
    const card = await approvalCard();
    const labels = (await card.locator('.approval-buttons button').allTextContents()).map((t) => t.trim());
    assert.deepEqual(labels, [
      'Deny',
      'Allow once',
      'Allow `echo *` in this session',
      'Always allow `echo *` in this workspace',
    ], 'the scoped choices, Deny first');
    await screenshot(page, 'e2e-f1-scoped-choices');
    await card.locator('button.approve-always').click();
    await waitFor('the first note on disk', () => onDisk('notes.txt'), { timeout: 20000 });
    await turnEnded();
    assert.match(await text('.approval-note'), /Always allow `echo \*` in this workspace/);

    // The rule is in the Rules view, with where it came from.
    await runCommand(page, 'Gatehouse: Show Rules');
    const row = page.locator('.monaco-list-row', { hasText: 'allow terminal `echo *`' });
    await waitFor('the rule in the Rules view', () => row.first().isVisible(), { timeout: 20000 });
    assert.match(await row.first().textContent(), /yours · this workspace/);
    await screenshot(page, 'e2e-f2-rules-view-lists-the-rule');

    // The rule answers the next prompt: the second note is written without a card.
    await startNewSession();
    await send('Write another note');
    await waitFor('the second note on disk', () => fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8').includes('NOTE-2'),
      { timeout: 20000 });
    await turnEnded();
    assert.equal(await f.locator('.approval-card').count(), 0, 'no card: the rule allowed it');
    assert.equal(await text('.tool-card .tool-status'), 'completed');

    // Removed from the view (its inline remove button), the prompt comes back.
    await row.first().hover();
    await row.first().locator('.action-label[aria-label*="Remove a Rule"]').click();
    await waitFor('the rule to leave the Rules view', async () => await row.count() === 0, { timeout: 20000 });
    await screenshot(page, 'e2e-f3-rule-removed');
    await startNewSession();
    await send('Write a third note');
    const again = await approvalCard();
    await screenshot(page, 'e2e-f4-asked-again');
    await again.locator('button.deny').click();
    await turnEnded();
    assert.doesNotMatch(fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8'), /NOTE-3/);
  });

  scenario('m: markdown with a code block renders, and Copy and Insert at cursor work', async () => {
    await startNewSession();
    const f = await view();
    await send('Show me a script');
    await turnEnded();
    const content = f.locator('.message.assistant .content').last();
    assert.equal(await content.locator('strong').textContent(), 'the script');
    assert.equal(await content.locator('p code').last().textContent(), 'python script.py');
    assert.doesNotMatch(await content.textContent(), /\*\*|```/, 'no raw markdown shows');
    const block = content.locator('.code-block');
    assert.equal(await block.count(), 1);
    assert.equal(await block.locator('.code-language').textContent(), 'python');
    assert.equal((await block.locator('pre code').textContent()).trim(), 'print("copied from Gatehouse")');
    assert.ok(await block.locator('pre code [class^="hljs-"]').count() > 0, 'the code is highlighted');
    await screenshot(page, 'e2e-m1-markdown');
    // Copy: the host puts exactly the code on the clipboard.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(page.url()).origin }).catch(() => {});
    await page.evaluate(() => navigator.clipboard.writeText('(nothing copied yet)')).catch(() => {});
    await block.locator('button.code-copy').click();
    await waitFor('the Copy button to say Copied', async () => (await block.locator('button.code-copy').textContent()) === 'Copied');
    await waitFor('the code on the clipboard', async () =>
      (await page.evaluate(() => navigator.clipboard.readText())).trim() === 'print("copied from Gatehouse")', { timeout: 10000 });
    // Insert at cursor: into README.md, opened with Quick Open.
    await page.locator('.monaco-workbench').focus().catch(() => {});
    await page.keyboard.press('F1');
    const quick = page.locator('.quick-input-widget .quick-input-box input');
    await quick.fill('README.md');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'README.md' }).first().waitFor({ timeout: 10000 });
    await page.keyboard.press('Enter');
    const editor = page.locator('.editor-instance .monaco-editor .view-lines').first();
    await editor.waitFor({ state: 'visible', timeout: 10000 });
    await (await view()).locator('.code-block button.code-insert').last().click();
    // (the editor shows spaces as U+00A0)
    const editorText = async () => (await editor.innerText()).replace(/\u00a0/g, ' ');
    await waitFor('the code in the editor', async () => (await editorText()).includes('print("copied from Gatehouse")'),
      { timeout: 10000 });
    assert.match(await editorText(), /# e2e workspace/, 'inserted at the cursor, the file kept');
    await screenshot(page, 'e2e-m2-inserted');
    // A link opens only after VS Code's own confirmation (here: cancelled, nothing opens).
    const link = (await view()).locator('.message.assistant .content a.md-link', { hasText: 'the docs' }).last();
    assert.equal(await link.getAttribute('title'), 'https://example.com/docs', 'the real target is shown');
    const pagesBefore = page.context().pages().length;
    await link.click();
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await dialog.innerText(), /external website/i);
    assert.match(await dialog.innerText(), /example\.com\/docs/);
    await screenshot(page, 'e2e-m3-link-confirmation');
    await dialog.locator('.monaco-button', { hasText: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden', timeout: 5000 });
    await sleep(500);
    assert.equal(page.context().pages().length, pagesBefore, 'no page was opened');
    await runCommand(page, 'View: Revert and Close Editor');
  });

  scenario('w: an approval while the view is hidden raises a notification that opens the card', async () => {
    await startNewSession();
    await send('Create hidden.txt');
    // Look elsewhere while the model writes: the Explorer replaces the Gatehouse view.
    await runCommand(page, 'View: Show Explorer');
    await page.locator('.part.sidebar .composite.title .title-label', { hasText: /explorer/i }).waitFor({ timeout: 10000 });
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Gatehouse is waiting for your approval' });
    await waitFor('the waiting notification', () => toast.isVisible(), { timeout: 30000 });
    assert.match(await toast.innerText(), /run terminal/);
    const badge = page.locator('.activitybar .action-item .badge-content').filter({ hasText: /^1$/ });
    assert.ok(await badge.count() > 0, 'the view\'s badge counts the waiting approval');
    assert.match(await page.locator('.part.statusbar').innerText(), /1 approval waiting/);
    assert.equal(onDisk('hidden.txt'), false);
    await screenshot(page, 'e2e-w1-notification');
    await toast.locator('.monaco-button', { hasText: 'Open Approval' }).click();
    frame = undefined;
    const card = await approvalCard();
    assert.match(await card.locator('pre.approval-code').textContent(), /touch hidden\.txt/);
    await screenshot(page, 'e2e-w2-card-opened');
    await card.locator('button.deny').click();
    await turnEnded();
    assert.equal(await text('.tool-card .tool-status'), 'denied');
    assert.equal(onDisk('hidden.txt'), false, 'hidden.txt must never appear');
    assert.doesNotMatch(await page.locator('.part.statusbar').innerText(), /approval waiting/);
    assert.equal((await toasts()).filter((t) => /waiting for your approval/.test(t)).length, 0, 'the notification is gone once opened');
  });

  scenario('k: streaming markdown in the real webview (benchmark, figures in the log)', async () => {
    const f = await view();
    const figures = await f.evaluate(async (deltas) => {
      const { ChatView } = window.gatehouseWebview;
      const host = document.createElement('div');
      host.style.cssText = 'position:absolute;left:0;top:0;width:300px;height:400px;overflow:auto;visibility:hidden';
      document.body.append(host);
      const parts = ['div', 'div', 'div'].map((t) => host.appendChild(document.createElement(t)));
      const bench = new ChatView(window, { transcript: parts[0], statusLine: parts[1], errorBox: parts[2] }, { postMessage() {} });
      bench.handle({ type: 'beginTurn' });
      let start = performance.now();
      for (const text of deltas) {
        bench.handle({ type: 'content', text });
        bench.flush();
        void parts[0].offsetHeight; // layout too, as the person would see it
      }
      const incremental = deltas.length / ((performance.now() - start) / 1000);
      bench.handle({ type: 'endTurn', note: '' });
      const blocks = parts[0].querySelectorAll('.code-block').length;
      // The alternative, the whole answer re-rendered on every delta, is quadratic: timed at every
      // 100th delta (its cost averaged over the answer's lengths, as rendering them all would).
      const box = document.createElement('div');
      host.append(box);
      let source = '';
      let spent = 0;
      let renders = 0;
      deltas.forEach((delta, index) => {
        source += delta;
        if (index % 100 !== 99) return;
        const t = performance.now();
        box.replaceChildren(bench.markdown.render(source));
        void box.offsetHeight;
        spent += performance.now() - t;
        renders++;
      });
      const whole = renders / (spent / 1000);
      host.remove();
      return { incremental, whole, blocks };
    }, answerDeltas(2000, 10));
    log(`webview streaming benchmark (real webview, 2000 deltas, 10 code blocks): last-block re-render ${figures.incremental.toFixed(0)} updates/s, whole re-render ${figures.whole.toFixed(0)} updates/s (${(figures.incremental / figures.whole).toFixed(1)}x)`);
    assert.equal(figures.blocks, 10, 'the benchmark answer rendered its 10 code blocks');
  });

  scenario('g: @gatehouse in VS Code\'s Chat view streams an answer', async () => {
    await openNativeChat(page);
    await screenshot(page, 'e2e-g0-native-chat');
    await askNative(page, 'say hello');
    const seen = new Set();
    await waitFor('the whole answer in the Chat view', async () => {
      const now = await responseText(page);
      if (/Hello from Gatehouse/.test(now)) seen.add(now.length);
      return /into VS Code.s own chat\./.test(now) && await responseDone(page);
    }, { timeout: 30000, interval: 50 });
    assert.ok(seen.size >= 3, `the answer should stream in pieces; lengths seen: ${[...seen].join(', ')}`);
    assert.equal(await page.locator('.interactive-item-container.interactive-response').last().locator('strong', { hasText: 'piece by piece' }).count(), 1,
      'the answer is markdown');
    await screenshot(page, 'e2e-g1-native-answer');
  });

  /** Asks @gatehouse for a gated call; resolves when Gatehouse's own approval is in the response. */
  async function nativeApproval(prompt, file) {
    await askNative(page, prompt);
    await waitFor('Gatehouse\'s approval in the Chat view', async () => (await responseButtons(page)).includes('Allow once'), { timeout: 30000 });
    // The command is in a code block, which the Chat view renders as an editor a moment later.
    await waitFor('the full command in the approval', async () => (await responseText(page)).includes(`touch ${file}`), { timeout: 10000 });
    const shown = await responseText(page);
    assert.match(shown, /Working folder/);
    assert.match(shown, /Why you are asked/);
    assert.match(shown, /Isolation/);
    // The server's choices, Deny first, then Stop.
    const buttons = await responseButtons(page);
    assert.deepEqual(buttons.slice(0, 3), ['Deny', 'Deny with a message…', 'Allow once']);
    assert.equal(buttons.at(-1), 'Stop');
    assert.ok(buttons.some((b) => /in this session/.test(b)), `a scoped choice: ${buttons.join(' | ')}`);
    assert.equal(await page.locator('.chat-confirmation-widget-buttons').count(), 0, 'VS Code\'s own tool confirmation is never the gate');
    assert.equal(onDisk(file), false, 'nothing may run before the approval');
  }

  scenario('h: @gatehouse: Allow (Gatehouse\'s own button) runs the command', async () => {
    await nativeApproval('create native-allowed.txt', 'native-allowed.txt');
    await screenshot(page, 'e2e-h1-native-approval');
    await responseButton(page, 'Allow once').click();
    await waitFor('native-allowed.txt on disk', () => onDisk('native-allowed.txt'), { timeout: 20000 });
    await waitFor('the response to end', () => responseDone(page), { timeout: 20000 });
    const shown = await responseText(page);
    assert.match(shown, /Allowed once\./);
    assert.match(shown, /terminal · completed · exit code 0/);
    assert.match(shown, /Done: native-allowed\.txt was created\./);
    assert.ok(shown.indexOf('I will create native-allowed.txt') < shown.indexOf('terminal · completed'), 'text, then the tool');
    assert.ok(shown.indexOf('terminal · completed') < shown.indexOf('Done: native-allowed.txt'), 'the tool, then the text');
    await screenshot(page, 'e2e-h2-native-allowed');
  });

  scenario('i: @gatehouse: Deny runs nothing', async () => {
    await nativeApproval('create native-denied.txt', 'native-denied.txt');
    await screenshot(page, 'e2e-i0-native-approval');
    await responseButton(page, 'Deny').click();
    await waitFor('the response to end', () => responseDone(page), { timeout: 20000 });
    const shown = await responseText(page);
    assert.match(shown, /Denied\./);
    assert.match(shown, /terminal · denied/);
    assert.match(shown, /Understood: native-denied\.txt was not created\./);
    await sleep(1000);
    assert.equal(onDisk('native-denied.txt'), false, 'native-denied.txt must never appear');
    await screenshot(page, 'e2e-i1-native-denied');
  });

  scenario('j: @gatehouse: Stop while the approval is pending runs nothing', async () => {
    await nativeApproval('create native-stopped.txt', 'native-stopped.txt');
    await screenshot(page, 'e2e-j0-native-approval');
    await responseButton(page, 'Stop').click();
    await waitFor('the response to end', () => responseDone(page), { timeout: 20000 });
    await sleep(2000);
    const shown = await responseText(page);
    assert.match(shown, /Approval withdrawn\./);
    assert.match(shown, /Stopped\./);
    assert.equal(onDisk('native-stopped.txt'), false, 'native-stopped.txt must never appear');
    await screenshot(page, 'e2e-j1-native-stopped');
    // Back to the Gatehouse view for (d).
    await runCommand(page, 'Gatehouse: Open Chat');
    frame = undefined;
    await (await view()).locator('#send').waitFor({ state: 'visible' });
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
