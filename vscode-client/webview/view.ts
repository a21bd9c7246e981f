/**
 * The chat webview's transcript: applies the host's messages to its copy of the transcript model
 * (src/transcript.ts) and renders each change in place, in the order things happened. Streamed
 * text is re-rendered at most once per frame, and only its last markdown block
 * (streaming.ts). Takes the window and a poster, so it runs in jsdom for tests and benchmarks.
 */
import type { FileChangeView } from '../src/memory';
import { Transcript, type Change, type ToView, type TurnEntry, type TurnItem } from '../src/transcript';
import { el, syncApproval, toolCard, updateToolCard, type ApprovalPoster } from './cards';
import { Markdown, SAFE_LINK } from './markdown';
import { StreamingMarkdown } from './streaming';

/** Webview -> host. */
export type FromView =
  | { type: 'ready' }
  | { type: 'send'; prompt: string }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'approve'; approvalId: string; choice: string; message: string }
  | { type: 'openDiff'; approvalId: string; path: string }
  | { type: 'openTurnDiff'; turnId: string; path: string }
  | { type: 'undoTurn'; turnId: string }
  | { type: 'openLink'; href: string }
  | { type: 'copy'; text: string }
  | { type: 'insert'; text: string };

/** A turn's footer: its note, its changed files, the undone note (items go before them). */
const FOOTER = ':scope > .turn-note, :scope > .turn-changes';
const ACTIONS: Readonly<Record<string, string>> = { created: 'A', modified: 'M', deleted: 'D' };

export interface Poster {
  postMessage(message: FromView): void;
}

interface ItemNode {
  el: HTMLElement;
  kind: TurnItem['kind'];
  text?: StreamingMarkdown;
}
interface EntryNode {
  el: HTMLElement;
  items: ItemNode[];
}

export interface ChatElements {
  transcript: HTMLElement;
  statusLine: HTMLElement;
  errorBox: HTMLElement;
  send?: HTMLButtonElement;
  stop?: HTMLButtonElement;
}

export class ChatView {
  readonly model = new Transcript();
  readonly markdown: Markdown;
  private nodes: EntryNode[] = [];
  private readonly dirty = new Set<StreamingMarkdown>();
  private frame: number | undefined;
  private readonly doc: Document;
  private readonly approvals: ApprovalPoster;
  private readonly poster: Poster;

  constructor(
    private readonly win: Window & typeof globalThis,
    private readonly ui: ChatElements,
    poster: Poster,
  ) {
    this.doc = win.document;
    this.poster = poster;
    this.markdown = new Markdown(win, {
      copy: (text) => poster.postMessage({ type: 'copy', text }),
      insert: (text) => poster.postMessage({ type: 'insert', text }),
    });
    this.approvals = {
      approve: (approvalId, choice, message) => poster.postMessage({ type: 'approve', approvalId, choice, message }),
      openDiff: (approvalId, path) => poster.postMessage({ type: 'openDiff', approvalId, path }),
    };
    const openLink = (event: MouseEvent): void => {
      const link = (event.target as Element | null)?.closest?.('a');
      if (!link) return;
      // Never navigate the webview, and keep the click from VS Code's own link handler in the
      // webview's host page (a window listener that opens links without this check): only the
      // extension opens a link, through vscode.env.openExternal and its confirmation.
      event.preventDefault();
      event.stopPropagation();
      const href = link.getAttribute('href') ?? '';
      if (event.type === 'click' && SAFE_LINK.test(href)) poster.postMessage({ type: 'openLink', href });
    };
    ui.transcript.addEventListener('click', openLink);
    ui.transcript.addEventListener('auxclick', openLink);
  }

  /** One message from the host. */
  handle(message: ToView): void {
    if (typeof message !== 'object' || message === null) return;
    if (message.type === 'reveal') {
      this.reveal(message.approvalId);
      return;
    }
    const stick = this.atBottom();
    for (const change of this.model.apply(message)) this.render(change);
    if (message.type === 'approval') this.reveal(message.view.approvalId, false);
    if (stick) this.scrollToBottom();
  }

  /** Renders pending text now (normally done on the next animation frame). */
  flush(): void {
    if (this.frame !== undefined) {
      this.win.cancelAnimationFrame(this.frame);
      this.frame = undefined;
    }
    const stick = this.atBottom();
    for (const text of this.dirty) text.update();
    this.dirty.clear();
    if (stick) this.scrollToBottom();
  }

  // --- rendering ----------------------------------------------------------------------------------

  private render(change: Change): void {
    switch (change.kind) {
      case 'reset':
        this.dirty.clear();
        this.nodes = [];
        this.ui.transcript.replaceChildren();
        this.model.state.entries.forEach((_entry, index) => this.addEntry(index));
        this.renderChrome();
        break;
      case 'chrome':
        this.renderChrome();
        break;
      case 'entryAdded':
        this.addEntry(change.entry);
        break;
      case 'itemAdded':
        this.addItem(change.entry, change.item);
        break;
      case 'itemChanged':
        this.updateItem(change.entry, change.item);
        break;
      case 'itemReplaced': {
        const node = this.nodes[change.entry]?.items[change.item];
        const fresh = this.itemNode(change.entry, change.item);
        if (node !== undefined && fresh !== undefined) {
          if (node.text) this.dirty.delete(node.text);
          node.el.replaceWith(fresh.el);
          (this.nodes[change.entry] as EntryNode).items[change.item] = fresh;
        }
        break;
      }
      case 'itemRemoved': {
        const entry = this.nodes[change.entry];
        const [node] = entry?.items.splice(change.item, 1) ?? [];
        if (node?.text) this.dirty.delete(node.text);
        node?.el.remove();
        break;
      }
      case 'turnChanged':
        this.renderNote(change.entry);
        break;
    }
  }

  private renderChrome(): void {
    const s = this.model.state;
    if (this.ui.stop) this.ui.stop.disabled = !s.running;
    if (this.ui.send) this.ui.send.disabled = s.running;
    this.doc.body.classList.toggle('running', s.running);
    this.ui.statusLine.textContent = s.status;
    this.ui.errorBox.textContent = s.error;
    this.ui.errorBox.hidden = s.error === '';
  }

  private addEntry(index: number): void {
    const entry = this.model.state.entries[index];
    if (entry === undefined) return;
    if (entry.kind === 'user') {
      const node = el(this.doc, 'div', 'message user', entry.text);
      this.ui.transcript.append(node);
      this.nodes[index] = { el: node, items: [] };
      return;
    }
    const node: EntryNode = { el: el(this.doc, 'div', 'message assistant'), items: [] };
    this.nodes[index] = node;
    this.ui.transcript.append(node.el);
    entry.items.forEach((_item, i) => this.addItem(index, i));
    this.renderNote(index);
  }

  private addItem(entry: number, index: number): void {
    const parent = this.nodes[entry];
    const node = this.itemNode(entry, index);
    if (parent === undefined || node === undefined) return;
    const next = parent.items[index]?.el ?? parent.el.querySelector(FOOTER);
    parent.el.insertBefore(node.el, next ?? null);
    parent.items.splice(index, 0, node);
  }

  private itemNode(entry: number, index: number): ItemNode | undefined {
    const item = (this.model.state.entries[entry] as TurnEntry | undefined)?.items[index];
    if (item === undefined) return undefined;
    switch (item.kind) {
      case 'text': {
        const box = el(this.doc, 'div', 'content markdown');
        box.dir = 'auto';
        const text = new StreamingMarkdown(box, this.markdown);
        text.set(item.text, !item.open);
        return { el: box, kind: item.kind, text };
      }
      case 'reasoning': {
        const details = el(this.doc, 'details', 'reasoning');
        details.append(el(this.doc, 'summary', null, 'Reasoning'), el(this.doc, 'div', 'reasoning-text', item.text));
        return { el: details, kind: item.kind };
      }
      case 'preview': {
        const pre = el(this.doc, 'pre', 'tool-preview', item.text);
        pre.title = 'The model is writing a tool call; nothing runs yet';
        return { el: pre, kind: item.kind };
      }
      case 'tool':
        return { el: toolCard(this.doc, item, this.approvals), kind: item.kind };
      case 'approval': {
        const box = el(this.doc, 'div', 'orphan-approval');
        syncApproval(this.doc, box, null, item.approvalId, item.approval, item.approvalNote, this.approvals, item.approvalOutcome);
        return { el: box, kind: item.kind };
      }
    }
  }

  private updateItem(entry: number, index: number): void {
    const node = this.nodes[entry]?.items[index];
    const item = (this.model.state.entries[entry] as TurnEntry | undefined)?.items[index];
    if (node === undefined || item === undefined) return;
    if (node.kind !== item.kind) {
      this.render({ kind: 'itemReplaced', entry, item: index });
      return;
    }
    switch (item.kind) {
      case 'text': {
        const text = node.text as StreamingMarkdown;
        if (!item.text.startsWith(text.text)) {
          text.set(item.text, !item.open);
          this.dirty.delete(text);
        } else {
          text.append(item.text.slice(text.text.length));
          if (item.open) this.schedule(text);
          else {
            this.dirty.delete(text);
            text.finish();
          }
        }
        break;
      }
      case 'reasoning':
        (node.el.querySelector('.reasoning-text') as HTMLElement).textContent = item.text;
        break;
      case 'preview':
        node.el.textContent = item.text;
        break;
      case 'tool':
        updateToolCard(this.doc, node.el, item, this.approvals);
        break;
      case 'approval':
        syncApproval(this.doc, node.el, null, item.approvalId, item.approval, item.approvalNote, this.approvals, item.approvalOutcome);
        break;
    }
  }

  /** What follows a turn's items: its note, the files it changed with Undo, and the undone note. */
  private renderNote(index: number): void {
    const entry = this.model.state.entries[index];
    const node = this.nodes[index];
    if (entry === undefined || entry.kind !== 'turn' || node === undefined) return;
    if (entry.turnId !== undefined) node.el.setAttribute('data-turn-id', entry.turnId);
    node.el.classList.toggle('undone', entry.undone !== undefined);
    for (const old of Array.from(node.el.querySelectorAll(FOOTER))) old.remove();
    if (entry.note !== '') node.el.append(el(this.doc, 'div', 'turn-note', entry.note));
    if (entry.turnId !== undefined && entry.changes !== undefined && entry.changes.length > 0) {
      node.el.append(this.changesBox(entry.turnId, entry.changes, entry.undone === undefined));
    }
    if (entry.undone !== undefined) node.el.append(el(this.doc, 'div', 'turn-note undone-note', entry.undone));
  }

  /** The files a turn changed (a click opens the diff) and "Undo this turn". */
  private changesBox(turnId: string, files: FileChangeView[], undoable: boolean): HTMLElement {
    const box = el(this.doc, 'div', 'turn-changes');
    box.append(el(this.doc, 'div', 'turn-changes-title', files.length === 1 ? '1 file changed' : `${files.length} files changed`));
    const list = el(this.doc, 'ul', 'turn-files');
    for (const file of files) {
      const item = el(this.doc, 'li', 'turn-file');
      // Its own click handler runs first; the transcript's link handler then keeps "#" from
      // navigating (it opens only http(s) and mailto links).
      const link = el(this.doc, 'a', 'turn-file-link', file.path) as HTMLAnchorElement;
      link.href = '#';
      link.title = 'Show the diff';
      link.setAttribute('data-path', file.path);
      link.addEventListener('click', () => this.poster.postMessage({ type: 'openTurnDiff', turnId, path: file.path }));
      const action = el(this.doc, 'span', 'turn-file-action', ACTIONS[file.action] ?? '?');
      action.title = file.action;
      action.dataset.action = file.action;
      item.append(action, link);
      list.append(item);
    }
    box.append(list);
    if (undoable) {
      const undo = el(this.doc, 'button', 'undo-turn', 'Undo this turn') as HTMLButtonElement;
      undo.type = 'button';
      undo.addEventListener('click', () => this.poster.postMessage({ type: 'undoTurn', turnId }));
      box.append(undo);
    }
    return box;
  }

  private schedule(text: StreamingMarkdown): void {
    this.dirty.add(text);
    if (this.frame === undefined) this.frame = this.win.requestAnimationFrame(() => {
      this.frame = undefined;
      this.flush();
    });
  }

  // --- scrolling ----------------------------------------------------------------------------------

  private atBottom(): boolean {
    const t = this.ui.transcript;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 40;
  }

  private scrollToBottom(): void {
    this.ui.transcript.scrollTop = this.ui.transcript.scrollHeight;
  }

  private reveal(approvalId: string, focus = true): void {
    for (const card of Array.from(this.doc.querySelectorAll<HTMLElement>('.approval-card'))) {
      if (card.getAttribute('data-approval-id') !== approvalId) continue;
      card.scrollIntoView?.({ block: 'nearest' }); // (absent in jsdom)
      if (focus) card.querySelector<HTMLButtonElement>('button.deny')?.focus();
      return;
    }
  }
}
