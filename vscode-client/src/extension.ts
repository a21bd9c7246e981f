/** Gatehouse for VS Code: wires the server, the chat session, the chat view and the status bar. */
import * as vscode from 'vscode';
import { askApproval } from './approvals';
import { ChatSession } from './chatSession';
import { ChatViewProvider, VIEW_ID } from './chatView';
import { ServerManager } from './client';
import { Memory } from './memory';
import { memoryShell } from './memoryShell';
import { modelSetting, watchSettings } from './config';
import { selectModel } from './modelPicker';
import { quickPickUi } from './modelPickerUi';
import { StatusBar } from './statusBar';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Gatehouse', { log: true });
  const view = new ChatViewProvider(context.extensionUri);
  const statusBar = new StatusBar();
  let workspace: string | undefined;
  const folder = (): string => workspace ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '(the server\'s current folder)';

  const manager = new ServerManager(context, log, {
    onStream: (event) => chat.handleEvent(event),
    onToolConfirm: (params, token) => askApproval(params, token, view, folder(), (m) => log.warn(m)),
    onStateChange: (state, detail) => statusBar.show({ state, detail, bypass: false }),
    onReady: () => {
      chat.serverRestarted();
      void refreshStatus();
    },
  });
  server = manager;
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
    statusBar,
    vscode.window.registerWebviewViewProvider(VIEW_ID, view, { webviewOptions: { retainContextWhenHidden: true } }),
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
