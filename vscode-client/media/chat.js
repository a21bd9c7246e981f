// The Gatehouse chat webview. Plain JS, no framework. Model and tool text only ever goes into
// text nodes (textContent / createTextNode), never into innerHTML.
// The DOM is a contract for the end-to-end tests: see README.md, "Chat view DOM".
(function () {
  'use strict';

  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();
  const $ = (selector) => document.querySelector(selector);
  const transcript = $('#transcript');
  const prompt = $('#prompt');
  const send = $('#send');
  const stop = $('#stop');
  const statusLine = $('#status-line');
  const errorBox = $('#error');

  /** The current turn's `.message.assistant`, and its parts. */
  let turn = null;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function atBottom() {
    return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  }

  function keepScrolled(fn) {
    const stick = atBottom();
    fn();
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  function findById(selector, attribute, id) {
    for (const node of document.querySelectorAll(selector)) {
      if (node.getAttribute(attribute) === id) return node;
    }
    return null;
  }

  function toolCard(id) {
    return findById('.tool-card', 'data-tool-call-id', id);
  }

  function ensureTurn() {
    if (turn === null) beginTurn();
    return turn;
  }

  function beginTurn() {
    const message = el('div', 'message assistant');
    const content = el('div', 'content');
    const tools = el('div', 'tools');
    message.append(content, tools);
    transcript.append(message);
    turn = { message, content, tools, reasoning: null, previews: new Map() };
  }

  function appendReasoning(text) {
    const t = ensureTurn();
    if (t.reasoning === null) {
      const details = el('details', 'reasoning');
      details.append(el('summary', null, 'Reasoning'), el('div', 'reasoning-text'));
      t.message.insertBefore(details, t.content);
      t.reasoning = details;
    }
    t.reasoning.querySelector('.reasoning-text').append(document.createTextNode(text));
  }

  function previewToolArgs(index, text) {
    const t = ensureTurn();
    let pre = t.previews.get(index);
    if (!pre) {
      pre = el('pre', 'tool-preview');
      pre.title = 'The model is writing a tool call; nothing runs yet';
      t.tools.append(pre);
      t.previews.set(index, pre);
    }
    pre.append(document.createTextNode(text));
  }

  function dropOldestPreview(t) {
    const first = t.previews.keys().next();
    if (!first.done) {
      t.previews.get(first.value).remove();
      t.previews.delete(first.value);
    }
  }

  function setToolStatus(card, text, final) {
    if (card.dataset.final === 'true') return;
    const status = card.querySelector('.tool-status');
    status.textContent = text;
    status.dataset.status = text.replace(/\s+/g, '_');
    if (final) card.dataset.final = 'true';
  }

  function startTool(tool) {
    const t = ensureTurn();
    dropOldestPreview(t);
    const card = el('div', 'tool-card');
    card.setAttribute('data-tool-call-id', tool.id);
    const header = el('div', 'tool-header');
    header.append(el('span', 'tool-name', tool.name), el('span', 'tool-status'));
    card.append(header, el('pre', 'tool-args', tool.args), el('pre', 'tool-output'));
    t.tools.append(card);
    setToolStatus(card, tool.awaitingConfirmation ? 'awaiting approval' : 'running', false);
  }

  function appendToolOutput(id, text) {
    const card = toolCard(id);
    if (!card) return;
    setToolStatus(card, 'running', false);
    card.querySelector('pre.tool-output').append(document.createTextNode(text));
  }

  function endTool(end) {
    const card = toolCard(end.id);
    if (!card) return;
    const output = card.querySelector('pre.tool-output');
    if (output.textContent === '' && end.result) output.textContent = end.result;
    const meta = [];
    if (end.exitCode !== null && end.exitCode !== undefined) meta.push('exit code ' + end.exitCode);
    if (end.isolation) meta.push('ran under ' + end.isolation);
    if (meta.length) card.append(el('div', 'tool-meta', meta.join(' · ')));
    for (const line of end.protected || []) card.append(el('div', 'tool-protected', 'Protected path: ' + line));
    for (const line of end.edits || []) card.append(el('div', 'tool-edit', 'Changed ' + line));
    setToolStatus(card, end.status, true);
  }

  function row(dl, label, className, value) {
    dl.append(el('dt', null, label), el('dd', className, value));
  }

  const SIGNS = { add: '+', del: '-', context: ' ', hunk: '', note: '', header: '' };

  /** One file of an edit: its path and counts, Open diff, and the whole diff with line numbers. */
  function editBlock(view, edit) {
    const box = el('div', 'approval-edit');
    box.setAttribute('data-path', edit.path);
    const head = el('div', 'edit-head');
    const open = el('button', 'open-diff secondary', 'Open diff');
    open.type = 'button';
    open.title = "Open VS Code's diff editor: the file now on the left, the proposal on the right (you can edit it; Accept writes it as it is then)";
    open.addEventListener('click', () => vscode.postMessage({ type: 'openDiff', approvalId: view.approvalId, path: edit.path }));
    head.append(
      el('span', 'edit-path', edit.shownPath),
      el('span', 'edit-action', edit.action),
      el('span', 'edit-stat', '+' + edit.added + ' \u2212' + edit.removed),
      open,
    );
    box.append(head);
    if (edit.protected) box.append(el('div', 'edit-protected', 'Protected: ' + edit.protected));
    const table = el('table', 'diff');
    table.tabIndex = 0;
    for (const line of edit.rows) {
      if (line.kind === 'header') continue; // the path is above
      const tr = el('tr', 'diff-row diff-' + line.kind);
      if (line.kind === 'hunk' || line.kind === 'note') {
        const td = el('td', 'diff-text', line.text);
        td.colSpan = 4;
        tr.append(td);
      } else {
        tr.append(
          el('td', 'ln ln-old', line.oldLine === undefined ? '' : line.oldLine),
          el('td', 'ln ln-new', line.newLine === undefined ? '' : line.newLine),
          el('td', 'diff-sign', SIGNS[line.kind]),
          el('td', 'diff-text', line.text),
        );
      }
      table.append(tr);
    }
    box.append(table);
    return box;
  }

  function showApproval(view) {
    const card = el('div', 'approval-card');
    card.setAttribute('data-approval-id', view.approvalId);
    card.setAttribute('role', 'group');
    card.setAttribute('aria-label', 'Approval request for ' + view.tool);
    if (view.weakIsolation) card.classList.add('weak');
    const edits = Array.isArray(view.edits) ? view.edits : null;
    if (edits) card.classList.add('edit');

    const title = el('div', 'approval-title');
    if (edits) {
      const what = edits.length === 1 ? edits[0].shownPath : edits.length + ' files';
      title.append(document.createTextNode('Allow '), el('span', 'approval-tool', view.tool), document.createTextNode(' to change ' + what + '?'));
    } else {
      title.append(document.createTextNode('Allow '), el('span', 'approval-tool', view.tool), document.createTextNode(' to run?'));
    }
    const lines = view.code.split('\n').length;
    const label = edits
      ? el('div', 'approval-label', view.codeLabel + ' (the whole diff)')
      : el('div', 'approval-label', view.codeLabel + ' (' + lines + (lines === 1 ? ' line' : ' lines') + ', shown in full)');
    const code = edits ? el('div', 'approval-edits') : el('pre', 'approval-code', view.code);
    if (edits) for (const edit of edits) code.append(editBlock(view, edit));
    else code.tabIndex = 0;
    const dl = el('dl', 'approval-facts');
    row(dl, 'Working folder', 'approval-folder', view.folder);
    row(dl, 'Why you are asked', 'approval-reason', view.reason);
    if (!edits) row(dl, 'Isolation', 'approval-isolation', view.isolation);
    const message = el('textarea', 'approval-message');
    message.rows = 2;
    message.placeholder = 'Optional message to the model (sent with Deny)';
    message.setAttribute('aria-label', 'Message to the model');
    const buttons = el('div', 'approval-buttons');
    // One button per choice the server offers, Deny first (the host orders them so): it is the
    // default of every prompt. Labels say the scope ("Allow `npm test *` in this session").
    const CLASSES = { deny: 'deny', allow_once: 'approve-once', allow_session: 'approve-session', allow_always: 'approve-always' };
    const all = [];
    for (const choice of view.choices || []) {
      // An edit's "allow once" writes the proposal (or the user's version from Open diff).
      const text = edits && choice.kind === 'allow_once' ? 'Accept' : choice.label;
      const button = el('button', CLASSES[choice.kind] || 'approve-other', text);
      button.type = 'button';
      button.setAttribute('data-choice-id', choice.id);
      button.setAttribute('data-choice-kind', choice.kind);
      button.addEventListener('click', () => answer(choice.id));
      all.push(button);
      buttons.append(button);
    }
    card.append(title, label);
    if (view.hiddenWarning) card.append(el('div', 'approval-warning', view.hiddenWarning));
    if (view.unclear && view.unclear.length) {
      card.append(el('div', 'approval-unclear', 'Rules cannot allow this command: it ' + view.unclear.join('; it ') + '.'));
    }
    card.append(code, dl, message, buttons);

    function answer(choice) {
      for (const b of all) b.disabled = true;
      vscode.postMessage({ type: 'approve', approvalId: view.approvalId, choice, message: message.value });
    }

    const tool = toolCard(view.toolCallId);
    keepScrolled(() => {
      if (tool) tool.insertBefore(card, tool.querySelector('pre.tool-output'));
      else ensureTurn().tools.append(card);
    });
    card.scrollIntoView({ block: 'nearest' });
  }

  const OUTCOME_NOTES = {
    allow_once: 'Allowed once',
    allow_session: 'Allowed for this session',
    allow_always: 'Always allowed in this workspace',
    deny: 'Denied',
    withdrawn: 'Approval withdrawn',
  };

  function closeApproval(approvalId, outcome, label) {
    const card = findById('.approval-card', 'data-approval-id', approvalId);
    if (!card) return;
    const shown = outcome === 'allow_session' || outcome === 'allow_always' ? label : null;
    const note = el('div', 'approval-note', shown ? 'You chose: ' + shown : OUTCOME_NOTES[outcome] || outcome);
    note.setAttribute('data-outcome', outcome);
    note.setAttribute('data-approval-id', approvalId);
    card.replaceWith(note);
    const tool = note.closest('.tool-card');
    if (!tool) return;
    if (outcome === 'allow_once' || outcome === 'allow_session' || outcome === 'allow_always') setToolStatus(tool, 'running', false);
    else if (outcome === 'withdrawn') setToolStatus(tool, 'withdrawn', false);
  }

  function setRunning(running) {
    stop.disabled = !running;
    send.disabled = running;
    document.body.classList.toggle('running', running);
  }

  function endTurn(note) {
    if (turn !== null) {
      for (const pre of turn.previews.values()) pre.remove();
      if (note) turn.message.append(el('div', 'turn-note', note));
    }
    turn = null;
  }

  function turnMessage(turnId) {
    return findById('.message.assistant', 'data-turn-id', turnId);
  }

  function tagTurn(turnId) {
    const messages = transcript.querySelectorAll('.message.assistant');
    const last = messages[messages.length - 1];
    if (last && !last.hasAttribute('data-turn-id')) last.setAttribute('data-turn-id', turnId);
  }

  const ACTIONS = { created: 'A', modified: 'M', deleted: 'D' };

  function showTurnChanges(turnId, files) {
    const message = turnMessage(turnId);
    if (!message) return;
    const old = message.querySelector('.turn-changes');
    if (old) old.remove();
    const box = el('div', 'turn-changes');
    box.append(el('div', 'turn-changes-title', files.length === 1 ? '1 file changed' : files.length + ' files changed'));
    const list = el('ul', 'turn-files');
    for (const file of files) {
      const item = el('li', 'turn-file');
      const link = el('a', 'turn-file-link', file.path);
      link.href = '#';
      link.title = 'Show the diff';
      link.setAttribute('data-path', file.path);
      link.addEventListener('click', (event) => {
        event.preventDefault();
        vscode.postMessage({ type: 'openTurnDiff', turnId, path: file.path });
      });
      const action = el('span', 'turn-file-action', ACTIONS[file.action] || '?');
      action.title = file.action;
      action.dataset.action = file.action;
      item.append(action, link);
      list.append(item);
    }
    const undo = el('button', 'undo-turn', 'Undo this turn');
    undo.type = 'button';
    undo.addEventListener('click', () => vscode.postMessage({ type: 'undoTurn', turnId }));
    box.append(list, undo);
    message.append(box);
  }

  function turnUndone(turnId, note) {
    const message = turnMessage(turnId);
    if (!message) return;
    message.classList.add('undone');
    const undo = message.querySelector('.undo-turn');
    if (undo) undo.remove();
    message.append(el('div', 'turn-note undone-note', note));
  }

  function showError(text) {
    errorBox.textContent = text || '';
    errorBox.hidden = !text;
  }

  function clear() {
    transcript.replaceChildren();
    turn = null;
    showError('');
    statusLine.textContent = '';
  }

  const handlers = {
    setRunning: (m) => setRunning(m.running),
    user: (m) => transcript.append(el('div', 'message user', m.text)),
    beginTurn: () => beginTurn(),
    content: (m) => ensureTurn().content.append(document.createTextNode(m.text)),
    reasoning: (m) => appendReasoning(m.text),
    toolArgs: (m) => previewToolArgs(m.index, m.text),
    toolStart: (m) => startTool(m.tool),
    toolOutput: (m) => appendToolOutput(m.id, m.text),
    toolEnd: (m) => endTool(m.end),
    status: (m) => (statusLine.textContent = m.text),
    error: (m) => showError(m.text),
    endTurn: (m) => endTurn(m.note),
    approval: (m) => showApproval(m.view),
    closeApproval: (m) => closeApproval(m.approvalId, m.outcome, m.label),
    tagTurn: (m) => tagTurn(m.turnId),
    turnChanges: (m) => showTurnChanges(m.turnId, m.files),
    turnUndone: (m) => turnUndone(m.turnId, m.note),
    clear: () => clear(),
  };

  window.addEventListener('message', (event) => {
    const message = event.data;
    const handler = message && Object.prototype.hasOwnProperty.call(handlers, message.type) ? handlers[message.type] : null;
    if (handler) keepScrolled(() => handler(message));
  });

  function submit() {
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
})();
