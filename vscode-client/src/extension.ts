/** Gatehouse for VS Code: wires the server, the chat session, the chat view and the status bar. */
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
import type { RuleItem } from './rules';
import { RULES_VIEW_ID, RulesViewProvider } from './rulesView';
import { StatusBar } from './statusBar';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Gatehouse', { log: true });
  const statusBar = new StatusBar();
  let workspace: string | undefined;
  const folder = (): string => workspace ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '(the server\'s current folder)';
  // Proposed edits open in VS Code's diff editor: the current file (read-only) and the proposal.
  const originals = new MemoryFs();
  const proposalFiles = new MemoryFs();
  const proposals = new ProposalEditors(originals, proposalFiles, folder);
  const view = new ChatViewProvider(context.extensionUri, proposals, (m) => log.warn(m));

  const manager = new ServerManager(context, log, {
    onStream: (event) => {
      chat.handleEvent(event);
      // A call decided by a rule, or an answer that made one: the Rules view shows it at once.
      if (event.type === 'tool_end') void rules.refresh();
    },
    onToolConfirm: (params, token) => {
      proposals.register(params.approvalId, params.edits);
      return askApproval(params, token, view, folder(), (m) => log.warn(m));
    },
    onStateChange: (state, detail) => statusBar.show({ state, detail, bypass: false }),
    onReady: () => {
      chat.serverRestarted();
      void refreshStatus();
      void rules.refresh();
    },
  });
  server = manager;
  const rules = new RulesViewProvider(manager);
  const chat = new ChatSession(manager, view, {
    onTurnEnd: (result) => {
      void refreshStatus();
      void memory.afterTurn(result);
    },
  });
  const memory = new Memory(manager, view, memoryShell(), chat);
  const refreshStatus = async (): Promise<void> => {
    try {
      const status = await manager.status();
      workspace = status.workspace;
      statusBar.show({ state: 'running', status, bypass: manager.options?.bypassPermissions === true });
    } catch (error) {
      log.warn(`agent/status failed: ${String(error)}`);
    }
  };
  view.setActions({
    send: (prompt) => void chat.send(prompt),
    stop: () => void chat.stop(),
    newSession: () => chat.newSession(),
    openDiff: (turnId, path) => void memory.openDiff(turnId, path),
    undoTurn: (turnId) => void memory.undo(turnId),
  });

  const command = (id: string, run: () => unknown): vscode.Disposable => vscode.commands.registerCommand(id, run);
  context.subscriptions.push(
    log,
    view,
    proposals,
    vscode.workspace.registerFileSystemProvider(ORIGINAL_SCHEME, originals, { isCaseSensitive: true, isReadonly: true }),
    vscode.workspace.registerFileSystemProvider(PROPOSAL_SCHEME, proposalFiles, { isCaseSensitive: true }),
    statusBar,
    vscode.window.registerWebviewViewProvider(VIEW_ID, view, { webviewOptions: { retainContextWhenHidden: true } }),
    rules,
    vscode.window.registerTreeDataProvider(RULES_VIEW_ID, rules),
    command('gatehouse.refreshRules', () => rules.refresh()),
    command('gatehouse.showRules', async () => {
      await vscode.commands.executeCommand(`${RULES_VIEW_ID}.focus`);
      await rules.refresh();
    }),
    command('gatehouse.removeRule', (item?: RuleItem) => (item === undefined ? rules.pickAndRemove() : rules.remove(item))),
    watchSettings(() => void manager.restartIfChanged(), log),
    command('gatehouse.openChat', () => vscode.commands.executeCommand(`${VIEW_ID}.focus`)),
    command('gatehouse.newSession', () => chat.newSession()),
    command('gatehouse.openSession', () => memory.openSession()),
    command('gatehouse.stop', () => chat.stop()),
    command('gatehouse.restartServer', () => manager.restart()),
    command('gatehouse.showLogs', () => log.show()),
    command('gatehouse.selectModel', () => selectModel(manager, modelSetting(), quickPickUi())),
  );
  void manager.restart();
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
}
