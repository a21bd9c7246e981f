/** A jsdom window for the webview's code (markdown, the transcript view) in node --test. */
import { JSDOM } from 'jsdom';
import type { FromView } from '../../webview/view';
import { ChatView } from '../../webview/view';

export function domWindow(): Window & typeof globalThis {
  const dom = new JSDOM('<!DOCTYPE html><html><body></body></html>', { pretendToBeVisual: true });
  return dom.window as unknown as Window & typeof globalThis;
}

/** The chat view's transcript in jsdom, with everything it posts to the host recorded. */
export function chatView(): { win: Window & typeof globalThis; view: ChatView; transcript: HTMLElement; posted: FromView[] } {
  const win = domWindow();
  const doc = win.document;
  const transcript = doc.createElement('div');
  const statusLine = doc.createElement('div');
  const errorBox = doc.createElement('div');
  doc.body.append(transcript, statusLine, errorBox);
  const posted: FromView[] = [];
  const view = new ChatView(win, { transcript, statusLine, errorBox }, { postMessage: (m) => posted.push(m) });
  return { win, view, transcript, posted };
}
