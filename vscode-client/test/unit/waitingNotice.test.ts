import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPEN_BUTTON, WaitingNotice, approvalSeen, type NoticeUi, type Waiting } from '../../src/waitingNotice';
import { tick } from './fakes';

class FakeNoticeUi implements NoticeUi {
  notes: Array<{ message: string; button: string; press(pressed: boolean): void }> = [];
  count = 0;
  opened: Waiting[] = [];
  constructor(public seen: boolean) {}
  isSeen(): boolean {
    return this.seen;
  }
  notify(message: string, button: string): Promise<boolean> {
    return new Promise<boolean>((resolve) => this.notes.push({ message, button, press: resolve }));
  }
  setCount(count: number): void {
    this.count = count;
  }
  open(w: Waiting): void {
    this.opened.push(w);
  }
}

function setup(seen: boolean) {
  const ui = new FakeNoticeUi(seen);
  return { ui, notice: new WaitingNotice(ui) };
}
const A1: Waiting = { approvalId: 'A1', tool: 'terminal', frontEnd: 'view' };

test('an approval while the view is hidden raises a notification whose button opens the card', async () => {
  const { ui, notice } = setup(false);
  notice.add(A1);
  assert.equal(ui.count, 1, 'the badge counts it');
  assert.equal(ui.notes.length, 1);
  assert.match(ui.notes[0]!.message, /Gatehouse is waiting for your approval to run terminal/);
  assert.equal(ui.notes[0]!.button, OPEN_BUTTON);
  ui.notes[0]!.press(true);
  await tick();
  assert.deepEqual(ui.opened, [A1]);
  notice.remove('A1');
  assert.equal(ui.count, 0, 'answered: the badge goes');
});

test('a card the person can see raises no notification; hiding the view (or leaving the window) then does, once', () => {
  const { ui, notice } = setup(true);
  notice.add(A1);
  assert.equal(ui.notes.length, 0);
  ui.seen = false;
  notice.check();
  notice.check();
  assert.equal(ui.notes.length, 1);
});

test('a late press opens the approval still waiting, or nothing', async () => {
  const { ui, notice } = setup(false);
  notice.add(A1);
  notice.add({ approvalId: 'A2', tool: 'python', frontEnd: 'native' });
  notice.remove('A1');
  ui.notes[0]!.press(true);
  await tick();
  assert.deepEqual(ui.opened.map((w) => w.approvalId), ['A2']);
  notice.remove('A2');
  ui.notes[1]!.press(true);
  ui.notes[1]!.press(false);
  await tick();
  assert.equal(ui.opened.length, 1);
});

test('in doubt whether the card is seen, the person is told', () => {
  const { ui, notice } = setup(true);
  ui.isSeen = () => {
    throw new Error('no window state');
  };
  notice.add(A1);
  assert.equal(ui.notes.length, 1);
});

test('who sees a waiting approval: the Gatehouse view only while it is shown, either front end only in a focused window', () => {
  const N1: Waiting = { approvalId: 'N1', tool: 'terminal', frontEnd: 'native' };
  const seen = (w: Waiting, windowFocused: boolean, viewVisible: boolean): boolean => approvalSeen(w, { windowFocused, viewVisible });
  assert.equal(seen(A1, true, true), true);
  assert.equal(seen(A1, true, false), false, 'the Gatehouse view hidden: notify');
  assert.equal(seen(A1, false, true), false, 'the window unfocused: notify');
  assert.equal(seen(N1, false, true), false, '@gatehouse, the window unfocused: notify');
  // VS Code cannot tell an extension whether its Chat view is open: the response the person just
  // asked for is taken as seen while the window is focused (the badge and status bar still count it).
  assert.equal(seen(N1, true, false), true);
});
