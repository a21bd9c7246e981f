/**
 * `gatehouse.*` settings -> `initializationOptions` (docs/protocol.md, "initialize").
 * Pure functions: the VS Code side passes a getter, so the mapping is unit-tested without VS Code.
 */
import type { Backend, InitializationOptions, IsolationLevel } from './protocol';

export const SECTION = 'gatehouse';

export interface GatehouseSettings {
  backend: Backend;
  model: string;
  script: string;
  threads: number | null;
  contextSize: number;
  /** null: the model's default (on for models of at most 1B parameters). */
  toolGrammar: boolean | null;
  modelDefaults: boolean;
  confirmCodeExecution: boolean;
  confirmToolCalls: boolean;
  confirmFileEdits: boolean;
  bypassPermissions: boolean;
  sandboxNetwork: boolean;
  sandboxMinLevel: IsolationLevel;
  memorySessions: boolean;
  memoryCheckpoints: boolean;
  memoryCheckpointMaxFileBytes: number;
  confirmTimeoutSeconds: number;
  toolTimeoutSeconds: number;
  openaiBaseUrl: string;
  openaiModel: string;
  openaiApiKeyEnv: string;
  pythonCommand: string;
  traceServer: 'off' | 'messages' | 'verbose';
}

/** Keys relative to the `gatehouse` section, with the defaults package.json declares. */
export const DEFAULTS: { readonly [K in keyof GatehouseSettings]: readonly [string, GatehouseSettings[K]] } = {
  backend: ['backend', 'llama_cpp'],
  model: ['model', ''],
  script: ['script', ''],
  threads: ['threads', null],
  contextSize: ['contextSize', 4096],
  toolGrammar: ['toolGrammar', null],
  modelDefaults: ['modelDefaults', true],
  confirmCodeExecution: ['confirmCodeExecution', true],
  confirmToolCalls: ['confirmToolCalls', false],
  confirmFileEdits: ['confirmFileEdits', true],
  bypassPermissions: ['bypassPermissions', false],
  sandboxNetwork: ['sandbox.network', false],
  sandboxMinLevel: ['sandbox.minLevel', 'standard'],
  memorySessions: ['memory.sessions', true],
  memoryCheckpoints: ['memory.checkpoints', true],
  memoryCheckpointMaxFileBytes: ['memory.checkpointMaxFileBytes', 10485760],
  confirmTimeoutSeconds: ['confirmTimeoutSeconds', 300],
  toolTimeoutSeconds: ['toolTimeoutSeconds', 120],
  openaiBaseUrl: ['openai.baseUrl', ''],
  openaiModel: ['openai.model', ''],
  openaiApiKeyEnv: ['openai.apiKeyEnv', ''],
  pythonCommand: ['server.pythonCommand', ''],
  traceServer: ['trace.server', 'off'],
};

/** Settings whose change needs no server restart (vscode-languageclient applies the trace live). */
export const LIVE_KEYS: readonly string[] = ['trace.server'];

/** Read every setting through `get(key, default)` (a `WorkspaceConfiguration.get` of the section). */
export function readSettings(get: <T>(key: string, fallback: T) => T): GatehouseSettings {
  const out: Record<string, unknown> = {};
  for (const [field, [key, fallback]] of Object.entries(DEFAULTS)) {
    out[field] = get(key, fallback);
  }
  return out as unknown as GatehouseSettings;
}

export interface PathContext {
  /** The first workspace folder, if any. */
  workspaceFolder?: string;
  home?: string;
}

/** `${workspaceFolder}` and a leading `~` are expanded; a relative path is taken from the workspace folder. */
export function resolvePath(value: string, ctx: PathContext, relativeToWorkspace: boolean): string {
  let out = value.trim();
  if (ctx.workspaceFolder !== undefined) out = out.split('${workspaceFolder}').join(ctx.workspaceFolder);
  if (ctx.home !== undefined && (out === '~' || out.startsWith('~/'))) out = ctx.home + out.slice(1);
  const isAbsolute = out.startsWith('/') || /^[A-Za-z]:[\\/]/.test(out) || out.startsWith('\\\\');
  if (relativeToWorkspace && !isAbsolute && ctx.workspaceFolder !== undefined && out !== '') {
    out = `${ctx.workspaceFolder.replace(/[\\/]+$/, '')}/${out.replace(/^\.[\\/]/, '')}`;
  }
  return out;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * The `initializationOptions` for these settings. Empty strings and an unset thread count are
 * left out (the server would report them as invalid), so the server's own defaults apply.
 */
export function toInitializationOptions(s: GatehouseSettings, ctx: PathContext = {}): InitializationOptions {
  const options: InitializationOptions = {
    backend: s.backend,
    contextSize: s.contextSize,
    ...(typeof s.toolGrammar === 'boolean' ? { toolGrammar: s.toolGrammar } : {}),
    modelDefaults: s.modelDefaults,
    confirmCodeExecution: s.confirmCodeExecution,
    confirmToolCalls: s.confirmToolCalls,
    confirmFileEdits: s.confirmFileEdits,
    bypassPermissions: s.bypassPermissions,
    confirmTimeoutSeconds: s.confirmTimeoutSeconds,
    toolTimeoutSeconds: s.toolTimeoutSeconds,
    sandbox: { network: s.sandboxNetwork, minLevel: s.sandboxMinLevel },
    memory: {
      sessions: s.memorySessions,
      checkpoints: s.memoryCheckpoints,
      checkpointMaxFileBytes: s.memoryCheckpointMaxFileBytes,
    },
  };
  const model = text(s.model);
  if (model !== undefined) {
    // A model name ("smollm2-135m-instruct") stays as it is; "./x.gguf" is a workspace path.
    options.model = resolvePath(model, ctx, /^\.\.?[\\/]/.test(model));
  }
  const script = text(s.script);
  if (script !== undefined) options.script = resolvePath(script, ctx, true);
  if (typeof s.threads === 'number' && s.threads >= 1) options.threads = s.threads;
  const openai: NonNullable<InitializationOptions['openai']> = {};
  const baseUrl = text(s.openaiBaseUrl);
  const openaiModel = text(s.openaiModel);
  const apiKeyEnv = text(s.openaiApiKeyEnv);
  if (baseUrl !== undefined) openai.baseUrl = baseUrl;
  if (openaiModel !== undefined) openai.model = openaiModel;
  if (apiKeyEnv !== undefined) openai.apiKeyEnv = apiKeyEnv;
  if (Object.keys(openai).length > 0) options.openai = openai;
  return options;
}
