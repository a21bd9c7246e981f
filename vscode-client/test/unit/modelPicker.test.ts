import assert from 'node:assert/strict';
import { test } from 'node:test';
import { humanCount, humanSize, modelItems, selectModel, type ModelItem, type ModelPickerUi } from '../../src/modelPicker';
import type { ModelInfo, ModelsResult } from '../../src/protocol';

const model = (name: string, source: ModelInfo['source'], extra: Partial<ModelInfo> = {}): ModelInfo => ({
  name,
  source,
  kind: 'gguf',
  path: `/models/${name}`,
  sizeBytes: 397_807_936,
  architecture: 'qwen2',
  displayName: null,
  parameters: 494_032_768,
  quantization: 'Q4_K_M',
  contextLength: 32768,
  chatTemplate: true,
  error: null,
  ...extra,
});

const RESULT: ModelsResult = {
  models: [
    model('smollm2-135m-instruct', 'embedded', { sizeBytes: 98_000_000, parameters: 134_515_008, quantization: 'Q4_1', contextLength: 8192 }),
    model('ollama:qwen2.5:0.5b', 'ollama'),
    model('hf:acme/tiny/tiny.gguf', 'hf', { chatTemplate: false }),
    model('lmstudio:broken/x/half.gguf', 'lmstudio', { error: 'truncated header (reading a key at byte 200000)' }),
  ],
  current: 'smollm2-135m-instruct',
  modelsFolder: '/home/me/.local/share/gatehouse/models',
};

class FakeUi implements ModelPickerUi {
  shown: ModelItem[] = [];
  placeholder = '';
  infos: string[] = [];
  errors: string[] = [];
  constructor(private readonly choose: (items: ModelItem[]) => ModelItem | undefined) {}
  pick(items: ModelItem[], placeholder: string): Promise<ModelItem | undefined> {
    this.shown = items;
    this.placeholder = placeholder;
    return Promise.resolve(this.choose(items));
  }
  showInfo(message: string): void {
    this.infos.push(message);
  }
  showError(message: string): void {
    this.errors.push(message);
  }
}

class FakeSetting {
  writes: string[] = [];
  constructor(public value = '') {}
  get(): string {
    return this.value;
  }
  set(value: string): Promise<void> {
    this.writes.push(value);
    this.value = value;
    return Promise.resolve();
  }
}

const source = (result: ModelsResult | Error) => ({
  models: () => (result instanceof Error ? Promise.reject(result) : Promise.resolve(result)),
});

test('sizes and parameter counts read like the CLI table', () => {
  assert.equal(humanSize(397_807_936), '398 MB');
  assert.equal(humanSize(4_100_000_000), '4.1 GB');
  assert.equal(humanCount(134_515_008), '135M');
  assert.equal(humanCount(7_615_616_512), '7.6B');
  assert.equal(humanCount(null), undefined);
});

test('items: the default first, every model described, the setting marked current', () => {
  const items = modelItems(RESULT, 'ollama:qwen2.5:0.5b');
  assert.deepEqual(items.map((i) => i.value), ['', ...RESULT.models.map((m) => m.name)]);
  const ollama = items[2];
  assert.equal(ollama?.description, 'Ollama · 398 MB · 494M · Q4_K_M · 32768 ctx');
  assert.equal(ollama?.current, true);
  assert.equal(items.filter((i) => i.current).length, 1);
  assert.match(items[3]?.description ?? '', /Hugging Face cache .* no chat template/);
  assert.equal(items[4]?.problem, 'truncated header (reading a key at byte 200000)');
  assert.match(items[4]?.detail ?? '', /^Cannot be used: truncated header/);
});

test('an empty setting marks the default as current', () => {
  const items = modelItems(RESULT, '');
  assert.deepEqual(items.filter((i) => i.current).map((i) => i.value), ['']);
});

test('choosing a model writes gatehouse.model and says so', async () => {
  const setting = new FakeSetting();
  const ui = new FakeUi((items) => items.find((i) => i.value === 'ollama:qwen2.5:0.5b'));
  assert.equal(await selectModel(source(RESULT), setting, ui), 'ollama:qwen2.5:0.5b');
  assert.deepEqual(setting.writes, ['ollama:qwen2.5:0.5b']);
  assert.deepEqual(ui.infos, ['Gatehouse: using ollama:qwen2.5:0.5b.']);
  assert.match(ui.placeholder, /4 model\(s\)/);
});

test('choosing Default clears the setting', async () => {
  const setting = new FakeSetting('ollama:qwen2.5:0.5b');
  const ui = new FakeUi((items) => items[0]);
  assert.equal(await selectModel(source(RESULT), setting, ui), '');
  assert.deepEqual(setting.writes, ['']);
});

test('dismissing, re-choosing the current model, or an unreadable model writes nothing', async () => {
  const setting = new FakeSetting('ollama:qwen2.5:0.5b');
  assert.equal(await selectModel(source(RESULT), setting, new FakeUi(() => undefined)), undefined);
  assert.equal(await selectModel(source(RESULT), setting, new FakeUi((items) => items[2])), undefined);
  const ui = new FakeUi((items) => items[4]);
  assert.equal(await selectModel(source(RESULT), setting, ui), undefined);
  assert.deepEqual(setting.writes, []);
  assert.match(ui.errors[0] ?? '', /half\.gguf cannot be used: truncated header/);
});

test('a server that cannot list models is an error message, not a throw', async () => {
  const ui = new FakeUi(() => undefined);
  assert.equal(await selectModel(source(new Error('The Gatehouse server is not running.')), new FakeSetting(), ui), undefined);
  assert.deepEqual(ui.errors, ['Gatehouse could not list the models: The Gatehouse server is not running.']);
});
