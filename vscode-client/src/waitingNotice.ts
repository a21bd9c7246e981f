/**
 * The blocked-on-approval notice. While an approval waits where the person cannot see it — the
 * Gatehouse view hidden, or the VS Code window not focused — a notification says Gatehouse is
 * waiting, with a button that opens the card; the view's badge and the status bar count the
 * approvals waiting in both front ends. Nothing is decided here: the card (or the Chat view's
 * buttons) stays the only place to answer, and an unanswered approval times out as denied.
 * Pure (a small UI interface), unit-tested without VS Code.
 */
import type { FrontEnd } from './sessionRouter';

export interface Waiting {
  approvalId: string;
  tool: string;
  frontEnd: FrontEnd;
}

export interface NoticeUi {
  /** Whether the person can see this approval's card now. */
  isSeen(waiting: Waiting): boolean;
  /** Shows a notification; resolves true when its button was pressed. */
  notify(message: string, button: string): Promise<boolean>;
  /** The number of approvals waiting (the badge, the status bar). */
  setCount(count: number): void;
  /** Opens the card (its view, scrolled to it). */
  open(waiting: Waiting): void;
}

export const OPEN_BUTTON = 'Open Approval';

/**
 * Whether a person can see a waiting approval: the window is focused and, for the Gatehouse
 * view, the view is visible. VS Code gives extensions no way to read whether its own Chat view is
 * open, so an `@gatehouse` approval (asked in the response the person just requested) counts as
 * seen while the window is focused; the badge and the status bar count it either way.
 */
export function approvalSeen(waiting: Waiting, state: { windowFocused: boolean; viewVisible: boolean }): boolean {
  if (!state.windowFocused) return false;
  return waiting.frontEnd === 'native' || state.viewVisible;
}

export function noticeText(waiting: Waiting): string {
  return `Gatehouse is waiting for your approval to run ${waiting.tool}. Nothing runs until you answer.`;
}

export class WaitingNotice {
  private readonly waiting = new Map<string, Waiting & { notified: boolean }>();

  constructor(private readonly ui: NoticeUi) {}

  get count(): number {
    return this.waiting.size;
  }

  /** The approval waiting longest, if any. */
  first(): Waiting | undefined {
    return this.waiting.values().next().value;
  }

  add(waiting: Waiting): void {
    this.waiting.set(waiting.approvalId, { ...waiting, notified: false });
    this.ui.setCount(this.waiting.size);
    this.check();
  }

  remove(approvalId: string): void {
    if (this.waiting.delete(approvalId)) this.ui.setCount(this.waiting.size);
  }

  /** The view was shown or hidden, or the window gained or lost focus. */
  check(): void {
    for (const waiting of this.waiting.values()) {
      if (waiting.notified || this.safeSeen(waiting)) continue;
      waiting.notified = true; // once per approval: the badge stays until it is answered
      const { approvalId, tool, frontEnd } = waiting;
      this.ui.notify(noticeText(waiting), OPEN_BUTTON).then(
        (pressed) => {
          if (!pressed) return;
          // That approval may be gone by now: open the one waiting longest instead.
          const target = this.waiting.has(approvalId) ? { approvalId, tool, frontEnd } : this.first();
          if (target !== undefined) this.ui.open(target);
        },
        () => undefined,
      );
    }
  }

  private safeSeen(waiting: Waiting): boolean {
    try {
      return this.ui.isSeen(waiting);
    } catch {
      return false; // in doubt, tell the person
    }
  }
}
