/** The model picker's UI in VS Code: a quick pick (the current model checked) and notifications. */
import * as vscode from 'vscode';
import type { ModelItem, ModelPickerUi } from './modelPicker';

interface PickItem extends vscode.QuickPickItem {
  item: ModelItem;
}

export function quickPickUi(): ModelPickerUi {
  return {
    pick: async (items, placeHolder) => {
      const picks: PickItem[] = items.map((item) => ({
        label: `${item.current ? '$(check)' : item.problem !== undefined ? '$(warning)' : '$(blank)'} ${item.label}`,
        description: item.description,
        detail: item.detail,
        item,
      }));
      const chosen = await vscode.window.showQuickPick(picks, { placeHolder, matchOnDescription: true, matchOnDetail: true });
      return chosen?.item;
    },
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    showError: (message) => void vscode.window.showErrorMessage(message),
  };
}
