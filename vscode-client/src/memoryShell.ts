/** The memory's VS Code side: the session quick pick (with a delete button), modal questions and
 * the diff of a changed file (a read-only unified diff). */
import * as vscode from 'vscode';
import type { MemoryShell, SessionPickItem } from './memory';

interface PickItem extends vscode.QuickPickItem {
  item: SessionPickItem;
}

const DELETE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Delete this session' };

export function memoryShell(): MemoryShell {
  return {
    pickSession: (items, remove) =>
      new Promise((resolve) => {
        const pick = vscode.window.createQuickPick<PickItem>();
        pick.placeholder = 'Reopen a Gatehouse session of this workspace';
        pick.matchOnDescription = true;
        pick.matchOnDetail = true;
        pick.items = items.map((item) => ({ label: item.label, description: item.description, detail: item.detail, item, buttons: [DELETE] }));
        let chosen: SessionPickItem | undefined;
        pick.onDidTriggerItemButton(async ({ item }) => {
          await remove(item.item);
          pick.items = pick.items.filter((i) => i.item.sessionId !== item.item.sessionId);
        });
        pick.onDidAccept(() => {
          chosen = pick.selectedItems[0]?.item;
          pick.hide();
        });
        pick.onDidHide(() => {
          pick.dispose();
          resolve(chosen);
        });
        pick.show();
      }),
    confirm: async (message, detail, action) =>
      (await vscode.window.showWarningMessage(message, { modal: true, detail }, action)) === action,
    openDiff: async (title, diff) => {
      const document = await vscode.workspace.openTextDocument({ content: `# ${title}\n${diff}`, language: 'diff' });
      await vscode.window.showTextDocument(document, { preview: true });
    },
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    showError: (message) => void vscode.window.showErrorMessage(message),
  };
}
