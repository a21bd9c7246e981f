/**
 * Gatehouse for VS Code: wires the server, the two front ends (the Gatehouse chat view, the
 * default; `@gatehouse` in VS Code's own Chat view), the approvals, the waiting notice and the
 * status bar.
 */
import * as vscode from 'vscode';
import { askApproval } from './approvals';
import { ChatSession } from './chatSession';
import { ChatViewProvider, VIEW_ID } from './chatView';
import { ServerManager } from './client';
import { Memory } from './memory';
import { memoryShell } from './memoryShell';
import { modelSetting, watchSettings } from './config';
import { MemoryFs, ORIGINAL_SCHEME, PROPOSAL_SCHEME, ProposalEditors } from './proposals';
import { selectModel } from './modelPicker';
import { quickPickUi } from './modelPickerUi';
import { NativeChat, NativeTurn } from './nativeChat';
import { ANSWER_COMMAND, OPEN_DIFF_COMMAND } from './nativeChatUi';
import type { ToolConfirmResult } from './protocol';
import type { RuleItem } from './rules';
import { RULES_VIEW_ID, RulesViewProvider } from './rulesView';
import { SessionRouter, type Owner } from './sessionRouter';
import { SECTION } from './settings';
import { StatusBar } from './statusBar';
import { WaitingNotice, approvalSeen, type Waiting } from './waitingNotice';

let server: ServerManager | undefined;

function setting<T>(key: string, fallback: T): T {
  return vscode.workspace.getConfiguration(SECTION).get<T>(key, fallback);
}

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Gatehouse', { log: true });
  const whenHidden = (): 'modal' | 'notify' => (setting<string>('approvals.whenHidden', 'notify') === 'modal' ? 'modal' : 'notify');
  const statusBar = new StatusBar();
  const router = new SessionRouter();
  const viewOwner: Owner = { frontEnd: 'view' };
  let workspace: string | undefined;
  const folder = (): string => workspace ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '(the server\'s current folder)';
  // Proposed edits open in VS Code's diff editor: the current file (read-only) and the proposal.
  const originals = new MemoryFs();
  const proposalFiles = new MemoryFs();
  const proposals = new ProposalEditors(originals, proposalFiles, folder);
  const view = new ChatViewProvider(context.extensionUri, whenHidden, proposals, (m) => log.warn(m));

  const notice = new WaitingNotice({
    isSeen: (w) => approvalSeen(w, { windowFocused: vscode.window.state.focused, viewVisible: view.isVisible() }),
    notify: async (message, button) => (await vscode.window.showInformationMessage(message, button)) === button,
    setCount: (count) => {
      view.setBadge(count, count === 1 ? 'Gatehouse is waiting for your approval' : `${count} approvals waiting`);
      statusBar.setWaiting(count);
    },
    open: (w) => void openApproval(w),
  });
  view.setCardListener({
    cardShown: (card) => notice.add({ approvalId: card.approvalId, tool: card.tool, frontEnd: 'view' }),
    cardClosed: (approvalId) => notice.remove(approvalId),
  });

  const manager: ServerManager = new ServerManager(context, log, {
    onStream: (event) => {
      const owner = router.ownerOf(event.sessionId);
      if (owner instanceof NativeTurn) owner.session?.handleEvent(event);
      else chat.handleEvent(event);
      // A call decided by a rule, or an answer that made one: the Rules view shows it at once.
      if (event.type === 'tool_end') void rules.refresh();
    },
    onToolConfirm: (params, token): Promise<ToolConfirmResult | undefined> => {
      const owner = router.ownerOf(params.sessionId);
      if (owner instanceof NativeTurn) return native.ask(params, token, owner);
      proposals.register(params.approvalId, params.edits);
      return askApproval(params, token, view, folder(), (m) => log.warn(m));
    },
    onStateChange: (state, detail) => statusBar.show({ state, detail, bypass: false }),
    onReady: () => {
      router.reset();
      chat.serverRestarted();
      void refreshStatus();
      void rules.refresh();
    },
  });
  server = manager;
  const rules = new RulesViewProvider(manager);
  const chat = new ChatSession(router.transport(viewOwner, manager), view, {
    onTurnEnd: (result) => {
      void refreshStatus();
      void memory.afterTurn(result);
    },
  });
  const memory = new Memory(manager, view, memoryShell(), chat);
  const native: NativeChat = new NativeChat(context, {
    transport: manager,
    router,
    notice,
    folder,
    log: (m) => log.info(m),
    onTurnEnd: () => void refreshStatus(),
    proposals,
  });
  const refreshStatus = async (): Promise<void> => {
    try {
      const status = await manager.status();
      workspace = status.workspace;
      statusBar.show({ state: 'running', status, bypass: manager.options?.bypassPermissions === true });
    } catch (error) {
      log.warn(`agent/status failed: ${String(error)}`);
    }
  };
  const openApproval = async (w: Waiting | undefined): Promise<void> => {
    if (w?.frontEnd === 'native') await native.reveal();
    else await view.revealCard(w?.approvalId);
  };
  view.setActions({
    send: (prompt) => void chat.send(prompt),
    stop: () => void chat.stop(),
    newSession: () => chat.newSession(),
    openDiff: (turnId, path) => void memory.openDiff(turnId, path),
    undoTurn: (turnId) => void memory.undo(turnId),
  });
  if (setting('nativeChat.enabled', true)) native.register();

  const command = (id: string, run: (...args: unknown[]) => unknown): vscode.Disposable => vscode.commands.registerCommand(id, run);
  context.subscriptions.push(
    log,
    view,
    proposals,
    vscode.workspace.registerFileSystemProvider(ORIGINAL_SCHEME, originals, { isCaseSensitive: true, isReadonly: true }),
    vscode.workspace.registerFileSystemProvider(PROPOSAL_SCHEME, proposalFiles, { isCaseSensitive: true }),
    statusBar,
    native,
    vscode.window.registerWebviewViewProvider(VIEW_ID, view, { webviewOptions: { retainContextWhenHidden: true } }),
    view.onDidChangeVisibility(() => notice.check()),
    vscode.window.onDidChangeWindowState(() => notice.check()),
    rules,
    vscode.window.registerTreeDataProvider(RULES_VIEW_ID, rules),
    command('gatehouse.refreshRules', () => rules.refresh()),
    command('gatehouse.showRules', async () => {
      await vscode.commands.executeCommand(`${RULES_VIEW_ID}.focus`);
      await rules.refresh();
    }),
    // The Rules view passes its row; the palette passes nothing.
    command('gatehouse.removeRule', (item?: unknown) => (item === undefined ? rules.pickAndRemove() : rules.remove(item as RuleItem))),
    watchSettings(() => void manager.restartIfChanged(), log),
    command('gatehouse.openChat', () => vscode.commands.executeCommand(`${VIEW_ID}.focus`)),
    command('gatehouse.openNativeChat', () => native.open()),
    command('gatehouse.newSession', () => chat.newSession()),
    command('gatehouse.openSession', () => memory.openSession()),
    // Stop: the Gatehouse view's turn and every @gatehouse turn; with a session id, only that one.
    command('gatehouse.stop', (sessionId?: unknown) => {
      if (typeof sessionId === 'string') {
        if (chat.currentSessionId === sessionId) void chat.stop();
        native.stop(sessionId);
        return;
      }
      void chat.stop();
      native.stop();
    }),
    command('gatehouse.showApproval', () => openApproval(notice.first())),
    command(ANSWER_COMMAND, (approvalId?: unknown, choice?: unknown) => native.answer(approvalId, choice)),
    command(OPEN_DIFF_COMMAND, (approvalId?: unknown, path?: unknown) => native.openDiff(approvalId, path)),
    command('gatehouse.restartServer', () => manager.restart()),
    command('gatehouse.showLogs', () => log.show()),
    command('gatehouse.selectModel', () => selectModel(manager, modelSetting(), quickPickUi())),
  );
  void manager.restart();
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
}
