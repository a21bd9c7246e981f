/**
 * The Gatehouse chat webview's entry point (bundled to dist/webview.js; no framework). Runs under
 * a strict Content Security Policy: one nonce'd script, no inline code or styles, no eval.
 * The DOM is a contract for the end-to-end tests: see README.md, "Chat view DOM".
 */
import type { ToView } from '../src/transcript';
import { ChatView, type FromView } from './view';

declare function acquireVsCodeApi(): { postMessage(message: FromView): void };

const vscode = acquireVsCodeApi();
const $ = (selector: string): HTMLElement => document.querySelector(selector) as HTMLElement;
const prompt = $('#prompt') as HTMLTextAreaElement;
const send = $('#send') as HTMLButtonElement;
const stop = $('#stop') as HTMLButtonElement;

const view = new ChatView(window, {
  transcript: $('#transcript'),
  statusLine: $('#status-line'),
  errorBox: $('#error'),
  send,
  stop,
}, vscode);

window.addEventListener('message', (event: MessageEvent<ToView>) => view.handle(event.data));

function submit(): void {
  if (send.disabled) return;
  const text = prompt.value;
  if (text.trim() === '') return;
  prompt.value = '';
  vscode.postMessage({ type: 'send', prompt: text });
}

send.addEventListener('click', submit);
prompt.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    submit();
  }
});
stop.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
$('#new-session').addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));

vscode.postMessage({ type: 'ready' });

// For the e2e layer's benchmark in the real webview (window.gatehouseWebview).
export { ChatView } from './view';
