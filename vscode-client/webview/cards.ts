/**
 * The tool card and the approval card, built with the DOM (model and tool text only ever goes in
 * as text). The DOM is a contract for the end-to-end tests: see README.md, "Chat view DOM".
 */
import type { ApprovalView, EditView } from '../src/approvals';
import type { ToolItem } from '../src/transcript';

export interface ApprovalPoster {
  /** `choice` is the id of one of the view's choices. */
  approve(approvalId: string, choice: string, message: string): void;
  /** An edit's "Open diff": VS Code's diff editor on the proposal of `path`. */
  openDiff(approvalId: string, path: string): void;
}

/** The button class of each kind of choice (the e2e tests and the CSS use them). */
const CHOICE_CLASSES: Readonly<Record<string, string>> = {
  deny: 'deny',
  allow_once: 'approve-once',
  allow_session: 'approve-session',
  allow_always: 'approve-always',
};

export function el(doc: Document, tag: string, className?: string | null, text?: string | null): HTMLElement {
  const node = doc.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function row(doc: Document, dl: HTMLElement, label: string, className: string, value: string): void {
  dl.append(el(doc, 'dt', null, label), el(doc, 'dd', className, value));
}

const SIGNS: Readonly<Record<string, string>> = { add: '+', del: '-', context: ' ', hunk: '', note: '', header: '' };

/** One file of an edit: its path and counts, Open diff, and the whole diff with line numbers. */
function editBlock(doc: Document, view: ApprovalView, edit: EditView, poster: ApprovalPoster): HTMLElement {
  const box = el(doc, 'div', 'approval-edit');
  box.setAttribute('data-path', edit.path);
  const head = el(doc, 'div', 'edit-head');
  const open = el(doc, 'button', 'open-diff secondary', 'Open diff') as HTMLButtonElement;
  open.type = 'button';
  open.title = "Open VS Code's diff editor: the file now on the left, the proposal on the right (you can edit it; Accept writes it as it is then)";
  open.addEventListener('click', () => poster.openDiff(view.approvalId, edit.path));
  head.append(
    el(doc, 'span', 'edit-path', edit.shownPath),
    el(doc, 'span', 'edit-action', edit.action),
    el(doc, 'span', 'edit-stat', `+${edit.added} \u2212${edit.removed}`),
    open,
  );
  box.append(head);
  if (edit.protected !== undefined) box.append(el(doc, 'div', 'edit-protected', `Protected: ${edit.protected}`));
  const table = el(doc, 'table', 'diff');
  table.tabIndex = 0;
  for (const line of edit.rows) {
    if (line.kind === 'header') continue; // the path is above
    const tr = el(doc, 'tr', `diff-row diff-${line.kind}`);
    if (line.kind === 'hunk' || line.kind === 'note') {
      const td = el(doc, 'td', 'diff-text', line.text) as HTMLTableCellElement;
      td.colSpan = 4;
      tr.append(td);
    } else {
      tr.append(
        el(doc, 'td', 'ln ln-old', line.oldLine === undefined ? '' : String(line.oldLine)),
        el(doc, 'td', 'ln ln-new', line.newLine === undefined ? '' : String(line.newLine)),
        el(doc, 'td', 'diff-sign', SIGNS[line.kind] ?? ''),
        el(doc, 'td', 'diff-text', line.text),
      );
    }
    table.append(tr);
  }
  box.append(table);
  return box;
}

export function approvalCard(doc: Document, view: ApprovalView, poster: ApprovalPoster): HTMLElement {
  const card = el(doc, 'div', 'approval-card');
  card.setAttribute('data-approval-id', view.approvalId);
  card.setAttribute('role', 'group');
  card.setAttribute('aria-label', 'Approval request for ' + view.tool);
  if (view.weakIsolation) card.classList.add('weak');
  // An edit shows each file's diff instead of code, and its "allow once" is Accept.
  const edits = Array.isArray(view.edits) ? view.edits : undefined;
  if (edits !== undefined) card.classList.add('edit');

  const title = el(doc, 'div', 'approval-title');
  if (edits !== undefined) {
    const what = edits.length === 1 ? (edits[0]?.shownPath ?? '1 file') : `${edits.length} files`;
    title.append(doc.createTextNode('Allow '), el(doc, 'span', 'approval-tool', view.tool), doc.createTextNode(` to change ${what}?`));
  } else {
    title.append(doc.createTextNode('Allow '), el(doc, 'span', 'approval-tool', view.tool), doc.createTextNode(' to run?'));
  }
  const lines = view.code.split('\n').length;
  const label = edits !== undefined
    ? el(doc, 'div', 'approval-label', `${view.codeLabel} (the whole diff)`)
    : el(doc, 'div', 'approval-label', `${view.codeLabel} (${lines}${lines === 1 ? ' line' : ' lines'}, shown in full)`);
  let code: HTMLElement;
  if (edits !== undefined) {
    code = el(doc, 'div', 'approval-edits');
    for (const edit of edits) code.append(editBlock(doc, view, edit, poster));
  } else {
    code = el(doc, 'pre', 'approval-code', view.code);
    code.tabIndex = 0;
  }
  const dl = el(doc, 'dl', 'approval-facts');
  row(doc, dl, 'Working folder', 'approval-folder', view.folder);
  row(doc, dl, 'Why you are asked', 'approval-reason', view.reason);
  // An edit runs nothing: the isolation level does not apply to it.
  if (edits === undefined) row(doc, dl, 'Isolation', 'approval-isolation', view.isolation);
  const message = el(doc, 'textarea', 'approval-message') as HTMLTextAreaElement;
  message.rows = 2;
  message.placeholder = 'Optional message to the model (sent with Deny)';
  message.setAttribute('aria-label', 'Message to the model');
  const buttons = el(doc, 'div', 'approval-buttons');
  // One button per choice the server offers, Deny first (describeApproval orders them so): it
  // is the default of every prompt. Labels say the scope ("Allow `npm test *` in this session").
  const all: HTMLButtonElement[] = [];
  const answer = (choice: string): void => {
    for (const b of all) b.disabled = true;
    poster.approve(view.approvalId, choice, message.value);
  };
  for (const choice of view.choices) {
    // An edit's "allow once" writes the proposal (or the user's version from Open diff).
    const text = edits !== undefined && choice.kind === 'allow_once' ? 'Accept' : choice.label;
    const button = el(doc, 'button', CHOICE_CLASSES[choice.kind] ?? 'approve-other', text) as HTMLButtonElement;
    button.type = 'button';
    button.setAttribute('data-choice-id', choice.id);
    button.setAttribute('data-choice-kind', choice.kind);
    button.addEventListener('click', () => answer(choice.id));
    all.push(button);
    buttons.append(button);
  }
  card.append(title, label);
  if (view.hiddenWarning) card.append(el(doc, 'div', 'approval-warning', view.hiddenWarning));
  if (view.unclear !== undefined && view.unclear.length > 0) {
    card.append(el(doc, 'div', 'approval-unclear', `Rules cannot allow this command: it ${view.unclear.join('; it ')}.`));
  }
  card.append(code, dl, message, buttons);
  return card;
}

function approvalNote(doc: Document, approvalId: string, text: string, outcome: string | undefined): HTMLElement {
  const note = el(doc, 'div', 'approval-note', text);
  note.setAttribute('data-approval-id', approvalId);
  if (outcome !== undefined) note.setAttribute('data-outcome', outcome);
  return note;
}

/**
 * Puts an approval (or what became of it) in `host` before `before`: keeps a waiting card as it
 * is (so a half-typed message survives), swaps it for its note once answered.
 */
export function syncApproval(
  doc: Document,
  host: HTMLElement,
  before: Node | null,
  approvalId: string | undefined,
  view: ApprovalView | undefined,
  note: string | undefined,
  poster: ApprovalPoster,
  outcome?: string,
): void {
  const card = host.querySelector(':scope > .approval-card');
  if (view !== undefined) {
    if (card?.getAttribute('data-approval-id') === view.approvalId) return;
    const fresh = approvalCard(doc, view, poster);
    if (card) card.replaceWith(fresh);
    else host.insertBefore(fresh, before);
    host.querySelector(':scope > .approval-note')?.remove();
    return;
  }
  if (note !== undefined && approvalId !== undefined) {
    const existing = host.querySelector(':scope > .approval-note');
    if (existing?.textContent === note) return;
    const fresh = approvalNote(doc, approvalId, note, outcome);
    if (card) card.replaceWith(fresh);
    else if (existing) existing.replaceWith(fresh);
    else host.insertBefore(fresh, before);
  } else {
    card?.remove();
  }
}

function setStatus(card: HTMLElement, text: string): void {
  const status = card.querySelector<HTMLElement>('.tool-status');
  if (status === null) return;
  if (status.textContent !== text) {
    status.textContent = text;
    status.dataset.status = text.replace(/\s+/g, '_');
  }
}

export function toolCard(doc: Document, item: ToolItem, poster: ApprovalPoster): HTMLElement {
  const card = el(doc, 'div', 'tool-card');
  card.setAttribute('data-tool-call-id', item.tool.id);
  const header = el(doc, 'div', 'tool-header');
  header.append(el(doc, 'span', 'tool-name', item.tool.name), el(doc, 'span', 'tool-status'));
  card.append(header, el(doc, 'pre', 'tool-args', item.tool.args), el(doc, 'pre', 'tool-output'));
  updateToolCard(doc, card, item, poster);
  return card;
}

/** Brings a card up to date with its item, touching only what changed. */
export function updateToolCard(doc: Document, card: HTMLElement, item: ToolItem, poster: ApprovalPoster): void {
  setStatus(card, item.status);
  const output = card.querySelector('pre.tool-output');
  if (output !== null) {
    const shown = output.textContent ?? '';
    if (item.output.startsWith(shown)) {
      if (item.output.length > shown.length) output.append(doc.createTextNode(item.output.slice(shown.length)));
    } else {
      output.textContent = item.output;
    }
  }
  syncApproval(doc, card, output, item.approvalId, item.approval, item.approvalNote, poster, item.approvalOutcome);
  if (item.end !== undefined && card.dataset.final !== 'true') {
    card.dataset.final = 'true';
    const meta: string[] = [];
    if (item.end.exitCode !== null && item.end.exitCode !== undefined) meta.push(`exit code ${item.end.exitCode}`);
    if (item.end.isolation) meta.push(`ran under ${item.end.isolation}`);
    if (meta.length) card.append(el(doc, 'div', 'tool-meta', meta.join(' · ')));
    for (const line of item.end.protected ?? []) card.append(el(doc, 'div', 'tool-protected', `Protected path: ${line}`));
    for (const line of item.end.edits ?? []) card.append(el(doc, 'div', 'tool-edit', `Changed ${line}`));
  }
}

