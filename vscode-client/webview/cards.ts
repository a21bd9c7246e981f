/**
 * The tool card and the approval card, built with the DOM (model and tool text only ever goes in
 * as text). The DOM is a contract for the end-to-end tests: see README.md, "Chat view DOM".
 */
import type { ApprovalView } from '../src/approvals';
import type { ToolItem } from '../src/transcript';

export interface ApprovalPoster {
  /** `choice` is the id of one of the view's choices. */
  approve(approvalId: string, choice: string, message: string): void;
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

export function approvalCard(doc: Document, view: ApprovalView, poster: ApprovalPoster): HTMLElement {
  const card = el(doc, 'div', 'approval-card');
  card.setAttribute('data-approval-id', view.approvalId);
  card.setAttribute('role', 'group');
  card.setAttribute('aria-label', 'Approval request for ' + view.tool);
  if (view.weakIsolation) card.classList.add('weak');

  const title = el(doc, 'div', 'approval-title');
  title.append(doc.createTextNode('Allow '), el(doc, 'span', 'approval-tool', view.tool), doc.createTextNode(' to run?'));
  const lines = view.code.split('\n').length;
  const label = el(doc, 'div', 'approval-label', `${view.codeLabel} (${lines}${lines === 1 ? ' line' : ' lines'}, shown in full)`);
  const code = el(doc, 'pre', 'approval-code', view.code);
  code.tabIndex = 0;
  const dl = el(doc, 'dl', 'approval-facts');
  row(doc, dl, 'Working folder', 'approval-folder', view.folder);
  row(doc, dl, 'Why you are asked', 'approval-reason', view.reason);
  row(doc, dl, 'Isolation', 'approval-isolation', view.isolation);
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
    const button = el(doc, 'button', CHOICE_CLASSES[choice.kind] ?? 'approve-other', choice.label) as HTMLButtonElement;
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
  }
}

