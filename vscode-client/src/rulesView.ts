/**
 * The Rules view (a tree in Gatehouse's side bar) and the "Gatehouse: Remove a Rule…" quick pick.
 * The view lists every rule in force with where it came from; a removable rule (yours, or a
 * session's grant) has a remove button. The logic is in rules.ts.
 */
import * as vscode from 'vscode';
import { RulesModel, removeRuleWithPicker, type RuleItem, type RulesPickerUi, type RulesSource } from './rules';

export const RULES_VIEW_ID = 'gatehouse.rules';

type Node = RuleItem | { problem: string } | { message: string };

export class RulesViewProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  readonly model: RulesModel;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(source: RulesSource) {
    this.model = new RulesModel(source);
  }

  async refresh(): Promise<void> {
    await this.model.refresh();
    this.changed.fire();
  }

  async remove(item: RuleItem | undefined): Promise<void> {
    if (item === undefined || !item.removable) return;
    try {
      const removed = await this.model.remove(item.ruleId);
      void vscode.window.showInformationMessage(`Gatehouse: removed ${removed.label}.`);
    } catch (error) {
      void vscode.window.showErrorMessage(`Gatehouse: could not remove the rule (${error instanceof Error ? error.message : String(error)}).`);
    }
    this.changed.fire();
  }

  async pickAndRemove(): Promise<void> {
    await removeRuleWithPicker(this.model, quickPickRulesUi());
    this.changed.fire();
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if ('ruleId' in node) {
      const item = new vscode.TreeItem(node.label);
      item.id = node.ruleId;
      item.description = node.description;
      item.tooltip = node.tooltip;
      item.contextValue = node.removable ? 'gatehouseRule.removable' : 'gatehouseRule';
      item.iconPath = new vscode.ThemeIcon(node.label.startsWith('deny') ? 'circle-slash' : node.label.startsWith('ask') ? 'question' : 'pass');
      return item;
    }
    if ('problem' in node) {
      const item = new vscode.TreeItem(node.problem);
      item.iconPath = new vscode.ThemeIcon('warning');
      item.tooltip = node.problem;
      return item;
    }
    return new vscode.TreeItem(node.message);
  }

  getChildren(node?: Node): Node[] {
    if (node !== undefined) return [];
    if (this.model.error !== undefined) return [{ message: `The rules could not be listed: ${this.model.error}` }];
    return [...this.model.items, ...this.model.problems.map((problem) => ({ problem }))];
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export function quickPickRulesUi(): RulesPickerUi {
  interface PickItem extends vscode.QuickPickItem {
    item: RuleItem;
  }
  return {
    pick: async (items, placeHolder) => {
      // A label holds model-written text: `$(` would be read as an icon, so it is escaped.
      const picks: PickItem[] = items.map((item) => ({ label: `$(trash) ${item.label.replace(/\$\(/g, '\\$(')}`, description: item.description, item }));
      const chosen = await vscode.window.showQuickPick(picks, { placeHolder, matchOnDescription: true });
      return chosen?.item;
    },
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    showError: (message) => void vscode.window.showErrorMessage(message),
  };
}
