/**
 * "Gatehouse: Select Model": lists what `agent/models` returns (the embedded model, the models
 * folder, Ollama, LM Studio, the Hugging Face cache) and writes the chosen name to the
 * `gatehouse.model` setting (which restarts the server on it). Through a small UI interface, so
 * it is unit-tested without VS Code. A model whose files cannot be read is shown with the reason
 * and cannot be chosen.
 */
import type { ModelInfo, ModelsResult } from './protocol';

export interface ModelItem {
  label: string;
  description: string;
  detail: string;
  /** The value written to `gatehouse.model` ('' = the default, the embedded model). */
  value: string;
  current: boolean;
  /** Why it cannot be used, when its files cannot be read. */
  problem?: string;
}

export interface ModelPickerUi {
  /** Resolves with the chosen item, or undefined when the picker was dismissed. */
  pick(items: ModelItem[], placeholder: string): Promise<ModelItem | undefined>;
  showInfo(message: string): void;
  showError(message: string): void;
}

export interface ModelSource {
  models(): Promise<ModelsResult>;
}

export interface ModelSetting {
  get(): string;
  set(value: string): Promise<void>;
}

const SOURCES: Record<string, string> = {
  embedded: 'embedded',
  configured: 'configured',
  'models folder': 'models folder',
  ollama: 'Ollama',
  lmstudio: 'LM Studio',
  hf: 'Hugging Face cache',
};

export function humanSize(bytes: number): string {
  const units: Array<[string, number]> = [['GB', 1e9], ['MB', 1e6], ['KB', 1e3]];
  for (const [unit, scale] of units) {
    if (bytes >= scale) return `${(bytes / scale).toFixed(bytes < 10 * scale ? 1 : 0)} ${unit}`;
  }
  return `${bytes} B`;
}

export function humanCount(count: number | null): string | undefined {
  if (count === null) return undefined;
  const units: Array<[string, number]> = [['B', 1e9], ['M', 1e6], ['K', 1e3]];
  for (const [unit, scale] of units) {
    if (count >= scale) return `${(count / scale).toFixed(count < 10 * scale ? 1 : 0)}${unit}`;
  }
  return String(count);
}

function describe(model: ModelInfo): string {
  const parts = [
    SOURCES[model.source] ?? model.source,
    humanSize(model.sizeBytes),
    humanCount(model.parameters),
    model.quantization ?? undefined,
    model.contextLength !== null ? `${model.contextLength} ctx` : undefined,
    model.chatTemplate === false ? 'no chat template' : undefined,
  ];
  return parts.filter((p): p is string => p !== undefined && p !== '').join(' · ');
}

/** The picker's items: the default first, then every model, the current one marked. */
export function modelItems(result: ModelsResult, setting: string): ModelItem[] {
  const current = setting !== '' ? setting : result.current ?? '';
  const items: ModelItem[] = [
    {
      label: 'Default',
      description: 'the embedded model (SmolLM2-135M-Instruct)',
      detail: 'Clears gatehouse.model.',
      value: '',
      current: setting === '',
    },
  ];
  for (const model of result.models) {
    const problem = model.error ?? undefined;
    items.push({
      label: model.name,
      description: describe(model),
      detail: problem !== undefined ? `Cannot be used: ${problem}` : model.path,
      value: model.name,
      current: model.name === current && setting !== '',
      ...(problem !== undefined ? { problem } : {}),
    });
  }
  return items;
}

/** Runs the command; resolves with the value written, or undefined when nothing changed. */
export async function selectModel(source: ModelSource, setting: ModelSetting, ui: ModelPickerUi): Promise<string | undefined> {
  let result: ModelsResult;
  try {
    result = await source.models();
  } catch (error) {
    ui.showError(`Gatehouse could not list the models: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  const items = modelItems(result, setting.get());
  const chosen = await ui.pick(items, `${result.models.length} model(s) on this machine; the choice is saved in gatehouse.model`);
  if (chosen === undefined) return undefined;
  if (chosen.problem !== undefined) {
    ui.showError(`${chosen.label} cannot be used: ${chosen.problem}`);
    return undefined;
  }
  if (chosen.value === setting.get()) return undefined;
  await setting.set(chosen.value);
  ui.showInfo(chosen.value === '' ? 'Gatehouse: using the default model.' : `Gatehouse: using ${chosen.value}.`);
  return chosen.value;
}
