/**
 * The Gatehouse wire protocol as the extension sees it: every method name and message shape.
 * docs/protocol.md is the contract; server/protocol.py is the server's copy of the same shapes.
 * No imports: this module is shared by the glue modules and their unit tests.
 */

export const Methods = {
  chat: 'agent/chat',
  cancel: 'agent/cancel',
  status: 'agent/status',
  models: 'agent/models',
  stream: 'agent/stream',
  toolConfirm: 'toolConfirm',
} as const;

/** JSON-RPC error codes the extension treats specially. */
export const ErrorCodes = {
  invalidRequest: -32600,
  invalidParams: -32602,
  requestCancelled: -32800,
} as const;

export type IsolationLevel = 'strong' | 'standard' | 'limits-only' | 'none';
export const ISOLATION_LEVELS: readonly IsolationLevel[] = ['strong', 'standard', 'limits-only', 'none'];

export type Backend = 'llama_cpp' | 'transformers' | 'openai' | 'scripted';
export type StopReason = 'end_turn' | 'max_tokens' | 'tool_limit' | 'cancelled';
export type ToolStatus = 'completed' | 'failed' | 'denied' | 'timed_out' | 'cancelled';
export type ConfirmReason = 'code_execution' | 'all_tools';
export type Decision = 'allow' | 'allow_session' | 'deny';

// --- initialize --------------------------------------------------------------------------------

/** `initializationOptions`; every field optional, absent means the server default. */
export interface InitializationOptions {
  backend?: Backend;
  model?: string;
  script?: string;
  threads?: number;
  contextSize?: number;
  /** Absent or null: the model's default (on for models of at most 1B parameters). */
  toolGrammar?: boolean | null;
  modelDefaults?: boolean;
  openai?: { baseUrl?: string; model?: string; apiKeyEnv?: string };
  confirmToolCalls?: boolean;
  confirmCodeExecution?: boolean;
  bypassPermissions?: boolean;
  confirmTimeoutSeconds?: number;
  toolTimeoutSeconds?: number;
  sandbox?: { network?: boolean; minLevel?: IsolationLevel };
}

export interface SandboxInfo {
  level: IsolationLevel;
  network: boolean;
  minLevel?: IsolationLevel;
  reason?: string;
}

/** `capabilities.experimental.gatehouse` in the initialize result. */
export interface GatehouseServerCapabilities {
  version: string;
  tools: string[];
  sandbox: SandboxInfo;
}

// --- agent/chat --------------------------------------------------------------------------------

export interface ChatParams {
  prompt: string;
  sessionId?: string;
  enableTools?: boolean;
  enabledTools?: string[];
  maxToolCalls?: number;
  confirmToolCalls?: boolean;
  confirmCodeExecution?: boolean;
  bypassPermissions?: boolean;
  maxTokens?: number;
  temperature?: number;
  seed?: number;
  model?: string;
}

export interface ToolCallSummary {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  status: ToolStatus;
  exitCode: number | null;
}

export interface ChatResult {
  sessionId: string;
  turnId: string;
  stopReason: StopReason;
  text: string;
  toolCalls: ToolCallSummary[];
}

// --- agent/cancel, agent/status ----------------------------------------------------------------

export interface CancelParams {
  sessionId: string;
}

export interface CancelResult {
  cancelled: boolean;
}

export interface SessionSummary {
  sessionId: string;
  turns: number;
  running: boolean;
  allowedTools: string[];
}

export interface StatusResult {
  version: string;
  backend: string;
  model: string | null;
  workspace: string;
  sandbox: SandboxInfo;
  sessions: SessionSummary[];
  modelLoaded?: boolean;
}

// --- agent/models ------------------------------------------------------------------------------

export type ModelSource = 'embedded' | 'configured' | 'models folder' | 'ollama' | 'lmstudio' | 'hf';

export interface ModelInfo {
  /** What `model` accepts: `ollama:qwen2.5:0.5b`, `lmstudio:…`, `hf:org/repo/file.gguf`, … */
  name: string;
  source: ModelSource;
  kind: 'gguf' | 'safetensors';
  path: string;
  sizeBytes: number;
  architecture: string | null;
  displayName: string | null;
  parameters: number | null;
  quantization: string | null;
  contextLength: number | null;
  chatTemplate: boolean | null;
  /** Set when the model's files cannot be read. */
  error: string | null;
}

export interface ModelsResult {
  models: ModelInfo[];
  current: string | null;
  modelsFolder: string;
}

// --- agent/stream ------------------------------------------------------------------------------

interface StreamBase {
  sessionId: string;
  turnId: string;
}

export interface ContentEvent extends StreamBase { type: 'content'; text: string }
export interface ReasoningEvent extends StreamBase { type: 'reasoning'; text: string }
export interface ToolArgsEvent extends StreamBase { type: 'tool_args'; index: number; text: string }
export interface ToolStartEvent extends StreamBase {
  type: 'tool_start';
  toolCallId: string;
  name: string;
  arguments: Record<string, unknown>;
  awaitingConfirmation: boolean;
}
export interface ToolOutputEvent extends StreamBase { type: 'tool_output'; toolCallId: string; text: string }
export interface ToolEndEvent extends StreamBase {
  type: 'tool_end';
  toolCallId: string;
  name: string;
  status: ToolStatus;
  exitCode: number | null;
  result: string;
  sandbox?: { level: IsolationLevel; network: boolean };
}
export interface StatusEvent extends StreamBase { type: 'status'; text: string }

export type StreamEvent =
  | ContentEvent
  | ReasoningEvent
  | ToolArgsEvent
  | ToolStartEvent
  | ToolOutputEvent
  | ToolEndEvent
  | StatusEvent;

// --- toolConfirm (server -> client) ------------------------------------------------------------

export interface ToolConfirmParams {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  approvalId: string;
  name: string;
  arguments: Record<string, unknown>;
  reason: ConfirmReason;
  sandbox: { level: IsolationLevel; network: boolean };
}

export interface ToolConfirmResult {
  decision: Decision;
  message?: string;
}
