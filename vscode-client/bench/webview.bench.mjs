// Streaming markdown in the chat webview, measured in jsdom (the real webview is measured by the
// e2e layer, vscode-client/test/e2e): a 2,000-token answer with 10 code blocks, every delta
// rendered at once (the worst case: the view normally renders at most once per frame), against
// the real alternative: re-rendering the whole answer's markdown on every delta.
//   npm run bench   (prints updates/s for both, and the ratio)
// A measurement, not a test: nothing fails. jsdom's HTML parser (parse5, in JavaScript) is many
// times slower than Chromium's, so absolute figures here are far below the real webview's.
import { JSDOM } from 'jsdom';
import { ChatView } from '../webview/view';
import { answerDeltas } from './answer.mjs';

const RUNS = 3;
const SAMPLE = 20;
const deltas = answerDeltas(2000, 10);

function window() {
  return new JSDOM('<!DOCTYPE html><html><body></body></html>', { pretendToBeVisual: true }).window;
}

/** Updates per second when each delta is applied and rendered before the next. */
function incremental() {
  const win = window();
  const doc = win.document;
  const [transcript, statusLine, errorBox] = ['div', 'div', 'div'].map((t) => doc.body.appendChild(doc.createElement(t)));
  const view = new ChatView(win, { transcript, statusLine, errorBox }, { postMessage() {} });
  view.handle({ type: 'beginTurn' });
  const start = performance.now();
  for (const text of deltas) {
    view.handle({ type: 'content', text });
    view.flush();
  }
  const seconds = (performance.now() - start) / 1000;
  view.handle({ type: 'endTurn', note: '' });
  if (transcript.querySelectorAll('.code-block').length !== 10) throw new Error('the answer did not render 10 code blocks');
  return deltas.length / seconds;
}

/**
 * Updates per second when every delta re-renders the whole answer. That is quadratic (minutes
 * in jsdom), so it is timed at every SAMPLE-th delta, which averages its cost over the answer's
 * lengths exactly as rendering them all would.
 */
function wholeRender() {
  const win = window();
  const doc = win.document;
  const box = doc.body.appendChild(doc.createElement('div'));
  const view = new ChatView(win, { transcript: box, statusLine: box, errorBox: box }, { postMessage() {} });
  let text = '';
  let spent = 0;
  let renders = 0;
  deltas.forEach((delta, index) => {
    text += delta;
    if (index % SAMPLE !== SAMPLE - 1) return;
    const start = performance.now();
    box.replaceChildren(view.markdown.render(text));
    spent += performance.now() - start;
    renders++;
  });
  return renders / (spent / 1000);
}

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fast = median(Array.from({ length: RUNS }, incremental));
const slow = median(Array.from({ length: RUNS }, wholeRender));
console.log(`webview markdown streaming (jsdom, ${deltas.length} deltas, 10 code blocks, median of ${RUNS}; whole re-render timed at every ${SAMPLE}th delta):`);
console.log(`  last-block re-render: ${fast.toFixed(0)} updates/s`);
console.log(`  whole re-render:      ${slow.toFixed(0)} updates/s`);
console.log(`  ratio:                ${(fast / slow).toFixed(1)}x`);
