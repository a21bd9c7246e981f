/**
 * Model text as markdown, safely: markdown-it with raw HTML off, then DOMPurify with an allow-list,
 * then our own elements (code block toolbars) built with the DOM, never from strings.
 *
 * - The text has already been through the display rule (src/display.ts): control, bidi and
 *   zero-width characters arrive written out (`<U+202E>`), so markdown cannot hide them.
 * - Raw HTML is text. Links: only http(s) and mailto survive (markdown-it's validateLink and
 *   DOMPurify's URI allow-list); the target is in the title, and a click never navigates the
 *   webview: main.ts asks the host, which opens it through VS Code's own confirmation.
 * - Images are never loaded (a model could leak data in an image URL): they become links.
 * - Classes: only `hljs*` and `language-*` (model-written text cannot borrow the view's classes).
 * - Code blocks are highlighted by highlight.js (a small language set) and get Copy and
 *   "Insert at cursor" buttons that act on exactly the text shown.
 */
import createDOMPurify, { type DOMPurify } from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import plaintext from 'highlight.js/lib/languages/plaintext';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';

type Token = MarkdownIt.Token;

const LANGUAGES = { bash, c, cpp, css, diff, go, ini, java, javascript, json, markdown, plaintext, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['js', 'mjs', 'cjs', 'jsx'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['toml'], { languageName: 'ini' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['text', 'txt'], { languageName: 'plaintext' });

export const SAFE_LINK = /^(?:https?:|mailto:)/i;

const ALLOWED_TAGS = [
  'a', 'blockquote', 'br', 'code', 'del', 'div', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'li', 'ol', 'p', 'pre', 's',
  'span', 'strong', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul',
];
const ALLOWED_ATTR = ['href', 'title', 'class', 'start'];
const SAFE_CLASS = /^(?:hljs[\w-]*|language-[\w+#.-]+)$/;

/** What a code block's buttons do; the host does the copying and inserting. */
export interface CodeActions {
  copy(text: string): void;
  insert(text: string): void;
}

export class Markdown {
  readonly md: MarkdownIt.MarkdownIt;
  private readonly purify: DOMPurify;
  private readonly doc: Document;
  private readonly inert: Document;

  constructor(private readonly win: Window & typeof globalThis, private readonly actions?: CodeActions) {
    this.doc = win.document;
    this.inert = this.doc.implementation.createHTMLDocument('');
    this.md = new MarkdownIt({
      html: false,
      linkify: true,
      typographer: false,
      highlight: (code, lang) => highlight(this.md, code, lang),
    });
    this.md.validateLink = (url: string): boolean => SAFE_LINK.test(url.trim());
    // An image becomes a link to it, with its alt text: nothing is fetched.
    this.md.renderer.rules.image = (tokens: Token[], index: number): string => {
      const token = tokens[index];
      if (token === undefined) return '';
      const src = String(token.attrGet('src') ?? '');
      const alt = this.md.utils.escapeHtml(token.content || 'image');
      return `<a href="${this.md.utils.escapeHtml(src)}">[image: ${alt}]</a>`;
    };
    this.purify = createDOMPurify(win);
    this.purify.addHook('uponSanitizeAttribute', (_node, data) => {
      if (data.attrName === 'class') {
        const kept = data.attrValue.split(/\s+/).filter((c) => SAFE_CLASS.test(c));
        if (kept.length === 0) data.keepAttr = false;
        else data.attrValue = kept.join(' ');
      }
    });
  }

  /** Block tokens of `source` (markdown-it's parse). */
  parse(source: string): Token[] {
    return this.md.parse(source, {});
  }

  /** Sanitized, decorated DOM for `tokens`. */
  renderTokens(tokens: Token[]): DocumentFragment {
    return this.sanitize(this.md.renderer.render(tokens, this.md.options, {}));
  }

  /** Sanitized, decorated DOM for a whole markdown text. */
  render(source: string): DocumentFragment {
    return this.sanitize(this.md.render(source));
  }

  /** The sanitized HTML as a string (for tests). */
  html(source: string): string {
    const box = this.doc.createElement('div');
    box.append(this.render(source));
    return box.innerHTML;
  }

  private sanitize(html: string): DocumentFragment {
    // Parsed in an inert document (no browsing context: nothing runs, nothing loads) and
    // sanitized there in place (cheaper than a new document per call). The clean HTML is then
    // parsed in the view's own document: moving nodes between documents costs far more.
    const box = this.inert.createElement('div');
    box.innerHTML = html;
    this.purify.sanitize(box, {
      ALLOWED_TAGS,
      ALLOWED_ATTR,
      ALLOWED_URI_REGEXP: SAFE_LINK,
      ALLOW_DATA_ATTR: false,
      IN_PLACE: true,
    });
    const holder = this.doc.createElement('div');
    holder.innerHTML = box.innerHTML; // only allow-listed tags and attributes are left
    const fragment = this.doc.createDocumentFragment();
    fragment.append(...Array.from(holder.childNodes));
    this.decorate(fragment);
    return fragment;
  }

  private decorate(fragment: DocumentFragment): void {
    for (const link of Array.from(fragment.querySelectorAll('a'))) {
      const href = link.getAttribute('href') ?? '';
      if (!SAFE_LINK.test(href)) {
        link.removeAttribute('href');
        continue;
      }
      link.title = href; // the real target, whatever the link text says
      link.classList.add('md-link');
    }
    for (const pre of Array.from(fragment.querySelectorAll('pre'))) this.codeBlock(pre);
  }

  private codeBlock(pre: HTMLPreElement): void {
    const code = pre.querySelector('code');
    const language = /language-([\w+#.-]+)/.exec(code?.className ?? '')?.[1] ?? '';
    const block = this.doc.createElement('div');
    block.className = 'code-block';
    const bar = this.doc.createElement('div');
    bar.className = 'code-toolbar';
    const label = this.doc.createElement('span');
    label.className = 'code-language';
    label.textContent = language;
    const copy = this.button('code-copy', 'Copy', 'Copy this code to the clipboard');
    const insert = this.button('code-insert', 'Insert at cursor', 'Insert this code at the cursor of the active editor');
    const text = (): string => (code ?? pre).textContent ?? '';
    copy.addEventListener('click', () => {
      this.actions?.copy(text());
      copy.textContent = 'Copied';
      this.win.setTimeout(() => (copy.textContent = 'Copy'), 1500);
    });
    insert.addEventListener('click', () => this.actions?.insert(text()));
    bar.append(label, copy, insert);
    pre.replaceWith(block);
    block.append(bar, pre);
  }

  private button(className: string, label: string, title: string): HTMLButtonElement {
    const button = this.doc.createElement('button');
    button.type = 'button';
    button.className = `secondary ${className}`;
    button.textContent = label;
    button.title = title;
    return button;
  }
}

function highlight(md: MarkdownIt.MarkdownIt, code: string, lang: string): string {
  const name = lang.trim().toLowerCase();
  if (name !== '' && hljs.getLanguage(name) !== undefined) {
    try {
      return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
    } catch {
      // Fall through to plain, escaped text.
    }
  }
  return md.utils.escapeHtml(code);
}
