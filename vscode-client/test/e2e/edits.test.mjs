// End-to-end: edits reviewed as diffs in a real VS Code (code-server) in a real headless Chromium,
// with the real Python server and the scripted backend. Screenshots go to
// vscode-client/test-results/edits-*.png.
//
//   bash scripts/setup-vscode-e2e.sh && node --test vscode-client/test/e2e/edits.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  Fatal, REPO_DIR, RESULTS_DIR, addUserSettings, collectLogs, findFrame, findVsix, launch, log, runCommand,
  screenshot, since, sleep, waitFor, writeJson,
} from './harness.mjs';
import { askNative, openNativeChat, responseButton, responseButtons, responseDone, responseText } from './nativeChat.mjs';

const PYTHON = process.env.GATEHOUSE_PYTHON || path.join(REPO_DIR, '.venv', 'bin', 'python');
const NOTES = 'one\ntwo\nthree\n';
const call = (name, args) => `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`;
const read = call('read_file', { path: 'notes.txt' });
// One cursor for the whole server: each model call takes the next turn, across sessions.
const SCRIPT = {
  turns: [
    // (a) the card's diff, Open diff, Accept.
    read, `I will change two to 2.\n${call('edit_file', { path: 'notes.txt', old_text: 'two', new_text: '2' })}`, 'Changed it.',
    // (b) Deny.
    read, call('edit_file', { path: 'notes.txt', old_text: 'three', new_text: '3' }), 'Left it as it was.',
    // (c) the user edits the proposal in the diff editor, then accepts.
    read, call('edit_file', { path: 'notes.txt', old_text: 'one', new_text: '1' }), 'I see your version.',
    // (d) the file has unsaved changes in an editor: refused, no prompt.
    read, call('edit_file', { path: 'notes.txt', old_text: 'three', new_text: '3' }), 'It has unsaved changes.',
    // (e) @gatehouse in VS Code's Chat view: the diff in the response, Open diff, Accept.
    read, call('edit_file', { path: 'notes.txt', old_text: 'three', new_text: '3' }), 'Changed it from the Chat view.',
    // (f) the Gatehouse view lists the files a turn changed; its diff; Undo this turn (issue 11).
    read, call('edit_file', { path: 'notes.txt', old_text: 'four, added by me', new_text: 'four' }), 'Shortened it.',
  ],
};

const timings = [];
let failed = false;
let session;
let page;
let frame;
let workspace;

function scenario(name, fn) {
  test(name, { timeout: 120000 }, async () => {
    const start = Date.now();
    try {
      await fn();
    } catch (error) {
      failed = true;
      if (page) await screenshot(page, `edits-FAILED-${name.replace(/\W+/g, '-')}`).catch(() => {});
      throw error;
    } finally {
      timings.push([name, Date.now() - start]);
      log(`${name}: ${since(start)}`);
    }
  });
}

async function view() {
  if (!frame || frame.isDetached()) frame = await findFrame(page, '#prompt');
  return frame;
}

async function noError() {
  const box = (await view()).locator('#error');
  if (await box.isVisible()) throw new Fatal(`the chat view shows an error: ${(await box.textContent()).trim()}`);
}

const notes = () => fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8');

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

/** The rows of a file's diff on the card: [kind, old line, new line, text]. */
async function diffRows(card, file) {
  return card.locator(`.approval-edit[data-path="${file}"] tr.diff-row`).evaluateAll((rows) => rows.map((row) => [
    row.className.replace('diff-row diff-', ''),
    row.querySelector('.ln-old')?.textContent ?? '',
    row.querySelector('.ln-new')?.textContent ?? '',
    row.querySelector('.diff-text')?.textContent ?? '',
  ]));
}

/** VS Code's diff editor on a proposal, once it shows `expected` on its right side. */
async function diffEditor(expected) {
  const editor = page.locator('.monaco-diff-editor').first();
  await waitFor('the diff editor', async () => {
    if (!(await editor.isVisible())) return false;
    // (A narrow editor shows the diff inline: removed lines are view zones of the right side.)
    const right = await editor.locator('.editor.modified .view-lines:not([monaco-view-zone])').textContent();
    return right?.replace(/\u00a0/g, ' ').includes(expected);
  }, { timeout: 20000 });
  return editor;
}

async function diffEditorsOpen() {
  return page.locator('.tab', { hasText: 'Gatehouse proposal' }).count();
}

describe('Edits in VS Code (code-server + Chromium)', () => {
  before(async () => {
    const start = Date.now();
    if (!fs.existsSync(PYTHON)) throw new Error(`no Python at ${PYTHON}: run \`make test\` (or set GATEHOUSE_PYTHON)`);
    if (fs.existsSync(RESULTS_DIR)) {
      for (const name of fs.readdirSync(RESULTS_DIR)) if (/^edits-.*\.png$/.test(name)) fs.rmSync(path.join(RESULTS_DIR, name));
    }
    session = await launch({
      vsix: findVsix(),
      prepare: (sandbox) => {
        workspace = sandbox.workspace;
        const script = path.join(sandbox.root, 'script.json');
        writeJson(script, SCRIPT);
        fs.writeFileSync(path.join(workspace, 'notes.txt'), NOTES);
        // All three are `machine`-scoped (they choose what the unsandboxed server runs): user
        // settings only, a workspace's .vscode/settings.json cannot set them.
        addUserSettings(sandbox, {
          'gatehouse.server.pythonCommand': PYTHON,
          'gatehouse.backend': 'scripted',
          'gatehouse.script': script,
          'files.autoSave': 'off',
        });
      },
    });
    page = session.page;
    failed = true;
    await runCommand(page, 'Gatehouse: Open Chat');
    frame = await findFrame(page, '#prompt');
    await (await view()).locator('#send').waitFor({ state: 'visible' });
    // The server restarts once the workspace's settings (the scripted backend) are read: a turn
    // sent before that would be lost. The status bar names the backend of the running server.
    await waitFor('the server on the scripted backend', async () => /scripted/.test(await page.locator('.part.statusbar').textContent()), { timeout: 60000 });
    await sleep(1000);
    timings.push(['setup', Date.now() - start]);
    failed = false;
  });

  after(async () => {
    if (failed && session) log(`logs of the failed run:\n${collectLogs(session.sandbox)}`);
    if (session) await session.stop();
    for (const [name, ms] of timings) log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${name}`);
  });

  scenario('a: the card shows the diff; Open diff; Accept writes the file', async () => {
    await send('Change two to 2 in notes.txt');
    const card = await approvalCard();
    assert.match(await card.locator('.approval-title').textContent(), /edit_file to change notes\.txt/);
    assert.equal((await card.locator('.edit-path').textContent()).trim(), 'notes.txt');
    assert.equal((await card.locator('.edit-stat').textContent()).trim(), '+1 \u22121');
    assert.deepEqual(await diffRows(card, 'notes.txt'), [
      ['hunk', '', '', '@@ -1,3 +1,3 @@'],
      ['context', '1', '1', 'one'],
      ['del', '2', '', 'two'],
      ['add', '', '2', '2'],
      ['context', '3', '3', 'three'],
    ]);
    // Coloured: added and removed lines have backgrounds of their own.
    const colours = await card.locator('tr.diff-add, tr.diff-del').evaluateAll((rows) => rows.map((r) => getComputedStyle(r).backgroundColor));
    assert.equal(new Set(colours).size, 2, `added and removed lines look different: ${colours}`);
    const buttons = await card.locator('.approval-buttons button').allTextContents();
    assert.deepEqual(buttons.slice(0, 2), ['Deny', 'Accept'], `Deny first, then Accept: ${buttons}`);
    assert.match(buttons[2] ?? '', /edit_file `notes\.txt` in this session/);
    assert.equal(notes(), NOTES, 'nothing is written before Accept');
    await card.locator('.approval-edit').first().scrollIntoViewIfNeeded(); // the diff in the picture
    await screenshot(page, 'edits-a1-card-diff');

    await card.locator('button.open-diff').click();
    const editor = await diffEditor('2');
    assert.match(await editor.locator('.editor.original .view-lines').textContent(), /two/);
    assert.equal(await diffEditorsOpen(), 1);
    await screenshot(page, 'edits-a2-open-diff');

    await card.locator('button.approve-once').click();
    await waitFor('the edit on disk', () => notes() === 'one\n2\nthree\n', { timeout: 20000 });
    await turnEnded();
    await waitFor('the diff editor to close', async () => await diffEditorsOpen() === 0);
    assert.equal(await text('.tool-card .tool-status'), 'completed');
    assert.match(await text('.tool-card .tool-edit'), /notes\.txt: modify \(\+1 -1\)/);
    assert.match(await text('.message.assistant .content'), /Changed it\./);
    await screenshot(page, 'edits-a3-accepted');
  });

  scenario('b: Deny leaves the file unchanged', async () => {
    await startNewSession();
    await send('Change three to 3');
    const card = await approvalCard();
    assert.deepEqual((await diffRows(card, 'notes.txt')).filter(([kind]) => kind === 'del' || kind === 'add'), [
      ['del', '3', '', 'three'],
      ['add', '', '3', '3'],
    ]);
    await card.locator('button.deny').click();
    await waitFor('the tool status to say denied', async () => (await text('.tool-card .tool-status')) === 'denied', { timeout: 20000 });
    await turnEnded();
    await sleep(500);
    assert.equal(notes(), 'one\n2\nthree\n');
    assert.match(await text('.message.assistant .content'), /Left it as it was\./);
    await screenshot(page, 'edits-b-denied');
  });

  scenario('c: a change made in the diff editor before Accept is what is written, and the model is told', async () => {
    await startNewSession();
    await send('Change one to 1');
    const card = await approvalCard();
    await card.locator('button.open-diff').click();
    const editor = await diffEditor('1');
    const right = editor.locator('.editor.modified .view-lines');
    await right.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('four, added by me');
    await waitFor('the typing in the proposal', async () => (await right.textContent())?.replace(/\u00a0/g, ' ').includes('four, added by me'));
    await screenshot(page, 'edits-c1-edited-in-diff-editor');
    assert.equal(notes(), 'one\n2\nthree\n', 'typing in the proposal writes nothing');

    await card.locator('button.approve-once').click();
    await waitFor('the user\'s version on disk', () => notes() === '1\n2\nthree\nfour, added by me', { timeout: 20000 });
    await turnEnded();
    await waitFor('the diff editor to close', async () => await diffEditorsOpen() === 0);
    assert.match(await text('.tool-card .tool-edit'), /your version/);
    const told = await text('.tool-card pre.tool-output');
    assert.match(told, /The user changed your proposal/);
    assert.match(told, /\+four, added by me/);
    assert.match(await text('.message.assistant .content'), /I see your version\./);
    await screenshot(page, 'edits-c2-users-version-written');
  });

  scenario('d: a file with unsaved changes in an editor is not edited, and nobody is asked', async () => {
    await startNewSession();
    // Open notes.txt (Quick Open) and type into it without saving.
    await page.locator('.monaco-workbench').focus().catch(() => {});
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible', timeout: 5000 });
    await input.fill('notes.txt');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'notes.txt' }).first().waitFor({ timeout: 10000 });
    await page.keyboard.press('Enter');
    const editor = page.locator('.editor-instance .monaco-editor .view-lines').first();
    await waitFor('notes.txt in an editor', async () => (await editor.textContent())?.replace(/\u00a0/g, ' ').includes('four, added by me'));
    await editor.click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.type('typed but not saved ');
    await waitFor('the typing in the editor', async () => (await editor.textContent())?.replace(/\u00a0/g, ' ').includes('typed but not saved'));
    await sleep(500); // the change notification reaches the server
    assert.equal(notes(), '1\n2\nthree\nfour, added by me', 'not saved (files.autoSave is off)');
    await send('Change three to 3');
    await turnEnded();
    const f = await view();
    assert.equal(await f.locator('.approval-card').count(), 0, 'no prompt for an edit that cannot be made');
    assert.equal(await text('.tool-card .tool-status'), 'failed');
    assert.match(await text('.tool-card pre.tool-output'), /unsaved changes/);
    assert.equal(notes(), '1\n2\nthree\nfour, added by me', 'the file is unchanged');
    await screenshot(page, 'edits-d-unsaved-changes');
    await runCommand(page, 'File: Revert File');
  });

  scenario('e: @gatehouse: the response shows the whole diff with Accept and Open diff; Accept writes the file', async () => {
    assert.equal(notes(), '1\n2\nthree\nfour, added by me');
    await openNativeChat(page);
    await askNative(page, 'Change three to 3');
    await waitFor('Gatehouse\'s edit approval in the Chat view', async () => (await responseButtons(page)).includes('Accept'), { timeout: 30000 });
    // The diff is a code block, which the Chat view renders as an editor a moment later.
    await waitFor('the diff in the approval', async () => /-three[\s\S]*\+3/.test(await responseText(page)), { timeout: 10000 });
    const shown = await responseText(page);
    assert.match(shown, /allow edit_file to change notes\.txt\?/);
    assert.match(shown, /notes\.txt · modify · \+1 \u22121/);
    assert.match(shown, /Why you are asked/);
    assert.doesNotMatch(shown, /Isolation/, 'an edit runs nothing');
    const buttons = await responseButtons(page);
    assert.deepEqual(buttons.slice(0, 3), ['Deny', 'Deny with a message…', 'Accept'], `Deny first, then Accept: ${buttons.join(' | ')}`);
    assert.deepEqual(buttons.slice(-2), ['Open diff', 'Stop']);
    assert.equal(await page.locator('.chat-confirmation-widget-buttons').count(), 0, 'VS Code\'s own tool confirmation is never the gate');
    assert.equal(notes(), '1\n2\nthree\nfour, added by me', 'nothing is written before Accept');
    await screenshot(page, 'edits-e1-native-approval');

    await responseButton(page, 'Open diff').click();
    await diffEditor('3');
    assert.equal(await diffEditorsOpen(), 1);
    await screenshot(page, 'edits-e2-native-open-diff');

    await responseButton(page, 'Accept').click();
    await waitFor('the edit on disk', () => notes() === '1\n2\n3\nfour, added by me', { timeout: 20000 });
    await waitFor('the response to end', () => responseDone(page), { timeout: 20000 });
    await waitFor('the diff editor to close', async () => await diffEditorsOpen() === 0);
    const after = await responseText(page);
    assert.match(after, /Allowed once\./);
    assert.match(after, /Changed notes\.txt: modify \(\+1 -1\)/);
    assert.match(after, /Changed it from the Chat view\./);
    await screenshot(page, 'edits-e3-native-accepted');
  });

  scenario('f: the Gatehouse view lists the files a turn changed; a click shows the diff; Undo this turn writes it back', async () => {
    const before = '1\n2\n3\nfour, added by me';
    assert.equal(notes(), before);
    await startNewSession();
    await send('Shorten the last line');
    const card = await approvalCard();
    await card.locator('button.approve-once').click();
    await waitFor('the edit on disk', () => notes() === '1\n2\n3\nfour', { timeout: 20000 });
    await turnEnded();
    const f = await view();
    const changes = f.locator('.message.assistant[data-turn-id] .turn-changes').last();
    await waitFor('the turn\'s changed files', () => changes.isVisible(), { timeout: 20000 });
    assert.equal((await changes.locator('.turn-changes-title').textContent())?.trim(), '1 file changed');
    assert.equal(await changes.locator('.turn-file-action').getAttribute('data-action'), 'modified');
    assert.equal(await changes.locator('a.turn-file-link').getAttribute('data-path'), 'notes.txt');
    await screenshot(page, 'edits-f1-turn-changes');

    await changes.locator('a.turn-file-link').click();
    const editor = page.locator('.editor-instance .monaco-editor .view-lines').first();
    await waitFor('the turn\'s diff in an editor', async () => {
      const shown = (await editor.textContent())?.replace(/\u00a0/g, ' ') ?? '';
      return shown.includes('-four, added by me') && shown.includes('+four');
    }, { timeout: 20000 });
    await screenshot(page, 'edits-f2-turn-diff');

    await changes.locator('button.undo-turn').click();
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await dialog.innerText(), /Undo this turn\?/);
    await dialog.locator('.monaco-button', { hasText: /^Undo$/ }).click();
    await waitFor('the file written back', () => notes() === before, { timeout: 20000 });
    const message = f.locator('.message.assistant[data-turn-id]').last();
    await waitFor('the turn marked undone', async () => /undone/.test(await message.getAttribute('class') ?? ''), { timeout: 10000 });
    assert.match(await message.locator('.undone-note').textContent(), /Undone: 1 file\(s\) written back/);
    assert.equal(await message.locator('button.undo-turn').count(), 0);
    await screenshot(page, 'edits-f3-undone');
  });
});
