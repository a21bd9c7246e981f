import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RemoveRuleResult, RulesResult, RuleView } from '../../src/protocol';
import { RulesModel, removeRuleWithPicker, ruleItem, type RuleItem, type RulesPickerUi, type RulesSource } from '../../src/rules';

const rule = (extra: Partial<RuleView>): RuleView => ({
  ruleId: 'u-1',
  action: 'allow',
  tool: 'terminal',
  pattern: 'pytest *',
  source: 'user',
  where: 'your rules.toml rule 1',
  scope: '/ws',
  removable: true,
  ...extra,
});

class FakeSource implements RulesSource {
  list: RuleView[];
  removed: string[] = [];
  constructor(list: RuleView[]) {
    this.list = list;
  }
  rules(): Promise<RulesResult> {
    return Promise.resolve({ rules: [...this.list], problems: ['.gatehouse/rules.toml rule 1: `allow` is ignored'], userFile: '/d/rules.toml', workspaceFile: '/ws/.gatehouse/rules.toml' });
  }
  removeRule(ruleId: string): Promise<RemoveRuleResult> {
    const found = this.list.find((r) => r.ruleId === ruleId);
    if (found === undefined) return Promise.reject(new Error('no such rule'));
    this.removed.push(ruleId);
    this.list = this.list.filter((r) => r.ruleId !== ruleId);
    return Promise.resolve({ rule: found });
  }
}

class FakePicker implements RulesPickerUi {
  offered: RuleItem[] = [];
  infos: string[] = [];
  errors: string[] = [];
  constructor(private readonly choose: (items: RuleItem[]) => RuleItem | undefined) {}
  pick(items: RuleItem[]): Promise<RuleItem | undefined> {
    this.offered = items;
    return Promise.resolve(this.choose(items));
  }
  showInfo(message: string): void {
    this.infos.push(message);
  }
  showError(message: string): void {
    this.errors.push(message);
  }
}

test('a rule reads as what it does and where it came from', () => {
  assert.deepEqual(
    [ruleItem(rule({})).label, ruleItem(rule({})).description],
    ['allow terminal `pytest *`', 'yours · this workspace'],
  );
  const builtin = ruleItem(rule({ ruleId: 'b-1', action: 'ask', pattern: 'git push *', source: 'builtin', scope: undefined, removable: false, where: 'built-in' }));
  assert.equal(builtin.description, 'built-in');
  assert.equal(builtin.removable, false);
  assert.match(builtin.tooltip, /Part of Gatehouse/);
  const session = ruleItem(rule({ source: 'session', pattern: 'echo \u202e *' }));
  assert.equal(session.label, 'allow terminal `echo <U+202E> *`', 'model-written text through the display rule');
  assert.equal(ruleItem(rule({ tool: 'python', pattern: undefined })).label, 'allow python (every call)');
});

test('the model lists the rules and the problems of the rules files', async () => {
  const model = new RulesModel(new FakeSource([rule({}), rule({ ruleId: 'w-1', source: 'workspace', action: 'deny', removable: false })]));
  await model.refresh();
  assert.deepEqual(model.items.map((i) => i.ruleId), ['u-1', 'w-1']);
  assert.deepEqual(model.problems, ['.gatehouse/rules.toml rule 1: `allow` is ignored']);
});

test('the quick pick offers only removable rules and removes the one chosen', async () => {
  const source = new FakeSource([rule({ ruleId: 'b-1', source: 'builtin', removable: false }), rule({}), rule({ ruleId: 's-1', source: 'session' })]);
  const model = new RulesModel(source);
  const ui = new FakePicker((items) => items.find((i) => i.ruleId === 'u-1'));
  await removeRuleWithPicker(model, ui);
  assert.deepEqual(ui.offered.map((i) => i.ruleId), ['u-1', 's-1']);
  assert.deepEqual(source.removed, ['u-1']);
  assert.deepEqual(model.items.map((i) => i.ruleId), ['b-1', 's-1'], 'the list is fresh after the removal');
  assert.match(ui.infos[0] ?? '', /removed allow terminal `pytest \*`/);
});

test('a dismissed pick removes nothing; nothing removable is said so; a failure is shown', async () => {
  const source = new FakeSource([rule({})]);
  await removeRuleWithPicker(new RulesModel(source), new FakePicker(() => undefined));
  assert.deepEqual(source.removed, []);
  const none = new FakePicker(() => undefined);
  await removeRuleWithPicker(new RulesModel(new FakeSource([rule({ removable: false, source: 'builtin' })])), none);
  assert.match(none.infos[0] ?? '', /no rule of yours/);
  const failing = new FakeSource([rule({})]);
  failing.removeRule = () => Promise.reject(new Error('server gone'));
  const ui = new FakePicker((items) => items[0]);
  await removeRuleWithPicker(new RulesModel(failing), ui);
  assert.match(ui.errors[0] ?? '', /server gone/);
});
