/**
 * The rules the server has in force (`agent/rules`), as the Rules view and the "Gatehouse: Remove
 * a Rule…" quick pick show them, and their removal (`agent/rules/remove`). Through small
 * interfaces, so it is unit-tested without VS Code. Every piece of text goes through the display
 * rule: a pattern made from an approval is model-written text.
 */
import { visible } from './display';
import type { RemoveRuleResult, RulesResult, RuleView } from './protocol';

export interface RuleItem {
  ruleId: string;
  /** e.g. "allow terminal `pytest *`". */
  label: string;
  /** Where it came from, e.g. "yours · this workspace". */
  description: string;
  tooltip: string;
  removable: boolean;
  source: RuleView['source'];
}

export interface RulesSource {
  rules(): Promise<RulesResult>;
  removeRule(ruleId: string): Promise<RemoveRuleResult>;
}

export interface RulesPickerUi {
  /** Resolves with the chosen item, or undefined when the picker was dismissed. */
  pick(items: RuleItem[], placeholder: string): Promise<RuleItem | undefined>;
  showInfo(message: string): void;
  showError(message: string): void;
}

const SOURCES: Readonly<Record<RuleView['source'], string>> = {
  builtin: 'built-in',
  user: 'yours',
  workspace: 'workspace file',
  session: 'this session',
};

export function ruleItem(rule: RuleView): RuleItem {
  const pattern = rule.pattern === undefined || rule.pattern === null ? '(every call)' : `\`${rule.pattern}\``;
  let description = SOURCES[rule.source] ?? rule.source;
  if (rule.source === 'user') description += typeof rule.scope === 'string' ? ' · this workspace' : ' · every workspace';
  const tooltip = [
    `${rule.action} ${rule.tool} ${pattern}`,
    `From: ${rule.where}`,
    ...(typeof rule.approvedSha256 === 'string' ? [`Made from the approval of SHA-256 ${rule.approvedSha256.slice(0, 16)}…`] : []),
    rule.removable ? 'Can be removed here.' : rule.source === 'workspace' ? 'Edit .gatehouse/rules.toml to change it.' : 'Part of Gatehouse.',
  ].join('\n');
  return {
    ruleId: rule.ruleId,
    label: visible(`${rule.action} ${rule.tool} ${pattern}`),
    description: visible(description),
    tooltip: visible(tooltip),
    removable: rule.removable,
    source: rule.source,
  };
}

/** What the Rules view shows: the rules, then what was wrong in the rules files. */
export class RulesModel {
  items: RuleItem[] = [];
  problems: string[] = [];
  error: string | undefined;

  constructor(private readonly source: RulesSource) {}

  async refresh(): Promise<void> {
    try {
      const result = await this.source.rules();
      this.items = result.rules.map(ruleItem);
      this.problems = result.problems.map((p) => visible(p));
      this.error = undefined;
    } catch (error) {
      this.items = [];
      this.problems = [];
      this.error = error instanceof Error ? error.message : String(error);
    }
  }

  async remove(ruleId: string): Promise<RuleItem> {
    const removed = await this.source.removeRule(ruleId);
    await this.refresh();
    return ruleItem(removed.rule);
  }
}

/** "Gatehouse: Remove a Rule…": pick one of the removable rules, and it is removed. */
export async function removeRuleWithPicker(model: RulesModel, ui: RulesPickerUi): Promise<void> {
  await model.refresh();
  if (model.error !== undefined) {
    ui.showError(`Gatehouse: could not list the rules (${model.error}).`);
    return;
  }
  const removable = model.items.filter((i) => i.removable);
  if (removable.length === 0) {
    ui.showInfo('Gatehouse: there is no rule of yours or of a session to remove.');
    return;
  }
  const chosen = await ui.pick(removable, 'Choose a rule to remove (the prompt comes back for what it allowed)');
  if (chosen === undefined) return;
  try {
    const removed = await model.remove(chosen.ruleId);
    ui.showInfo(`Gatehouse: removed ${removed.label}.`);
  } catch (error) {
    ui.showError(`Gatehouse: could not remove the rule (${error instanceof Error ? error.message : String(error)}).`);
  }
}
