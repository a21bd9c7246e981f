/**
 * One text item of a turn, rendered as markdown while it streams, at a cost that does not grow
 * with the answer: the blocks before the last top-level block cannot change any more (markdown
 * blocks only grow at the end), so they are rendered once and kept; each update re-parses and
 * re-renders only the last block. When the item is final (`finish`), the whole text is rendered
 * once more, so constructs that span blocks (reference links) come out exactly as markdown says.
 */
import type { Markdown } from './markdown';

export class StreamingMarkdown {
  private source = '';
  /** Characters of `source` already rendered into `stable`. */
  private stableEnd = 0;
  private readonly stable: HTMLElement;
  private readonly live: HTMLElement;
  private finished = false;

  constructor(
    readonly element: HTMLElement,
    private readonly markdown: Markdown,
  ) {
    const doc = element.ownerDocument;
    this.stable = doc.createElement('div');
    this.stable.className = 'md-stable';
    this.live = doc.createElement('div');
    this.live.className = 'md-live';
    element.replaceChildren(this.stable, this.live);
  }

  get text(): string {
    return this.source;
  }

  /** Adds a delta; call `update` (now or on the next frame) to show it. */
  append(delta: string): void {
    this.source += delta;
  }

  /** Re-renders the last block (and moves finished blocks into the kept part). */
  update(): void {
    if (this.finished) return;
    const tail = this.source.slice(this.stableEnd);
    const tokens = this.markdown.parse(tail);
    // Top-level blocks: opening or self-contained tokens at nesting level 0, with their lines.
    const starts: Array<{ token: number; line: number }> = [];
    tokens.forEach((token, index) => {
      if (token.level === 0 && token.nesting !== -1 && token.map !== null) starts.push({ token: index, line: token.map[0] });
    });
    const last = starts[starts.length - 1];
    if (last !== undefined && starts.length >= 2 && last.line > 0) {
      this.stable.append(this.markdown.renderTokens(tokens.slice(0, last.token)));
      this.stableEnd += offsetOfLine(tail, last.line);
      this.live.replaceChildren(this.markdown.renderTokens(tokens.slice(last.token)));
    } else {
      this.live.replaceChildren(this.markdown.renderTokens(tokens));
    }
  }

  /** The text is complete: one last render of all of it. */
  finish(): void {
    this.stable.replaceChildren(this.markdown.render(this.source));
    this.live.replaceChildren();
    this.stableEnd = this.source.length;
    this.finished = true;
  }

  /** Replaces the whole text (a snapshot), rendered at once. */
  set(text: string, final: boolean): void {
    this.source = text;
    this.finished = false;
    this.stableEnd = 0;
    this.stable.replaceChildren();
    if (final) this.finish();
    else this.update();
  }
}

/** The index in `text` where line `line` (0-based) starts. */
function offsetOfLine(text: string, line: number): number {
  let offset = 0;
  for (let i = 0; i < line; i++) {
    const next = text.indexOf('\n', offset);
    if (next < 0) return text.length;
    offset = next + 1;
  }
  return offset;
}
