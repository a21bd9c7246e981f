/* Generated from docs/schema/gatehouse.schema.json by scripts/generate-protocol.mjs: do not edit.
 * Change the models in server/protocol/, run `python -m server.protocol.schema`, then
 * `npm run generate:protocol`. */

/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ErrorData".
 */
export type ErrorData =
  | InvalidParamsData
  | UnwiredGateData
  | BusySessionData
  | ModelUnavailableData
  | PullFailedData
  | PullCancelledData
  | MemoryUnavailableData;
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "StreamEvent".
 */
export type StreamEvent =
  ContentEvent | ReasoningEvent | ToolArgsEvent | ToolStartEvent | ToolOutputEvent | ToolEndEvent | StatusEvent;

export interface GatehouseProtocol {}
/**
 * `agent/rules/add` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "AddRuleParams".
 */
export interface AddRuleParams {
  /**
   * allow, ask or deny.
   */
  action: 'allow' | 'ask' | 'deny';
  /**
   * A built-in tool's name.
   */
  tool: string;
  /**
   * As in RuleSpec.
   */
  pattern?: string | null;
  /**
   * workspace (default: a user rule for this workspace), everywhere (a user rule for every workspace) or session (a grant of sessionId).
   */
  scope?: 'workspace' | 'everywhere' | 'session';
  /**
   * The session, for scope session.
   */
  sessionId?: string | null;
}
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "AddRuleResult".
 */
export interface AddRuleResult {
  rule: RuleView;
}
/**
 * A rule and where it came from.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RuleView".
 */
export interface RuleView {
  /**
   * allow, ask or deny.
   */
  action: 'allow' | 'ask' | 'deny';
  /**
   * The tool it is about (terminal, python, read_file, ...).
   */
  tool: string;
  /**
   * terminal: a command whose words prefix the parsed command, a final * for any further words (`pytest *`); python: the exact code; other tools: a path glob relative to the workspace (`src/**`). Absent: every call of the tool (terminal rules need one).
   */
  pattern?: string;
  /**
   * Stable id (agent/rules/remove takes it).
   */
  ruleId: string;
  /**
   * builtin, user (your rules file), workspace (.gatehouse/rules.toml) or session (a grant of this session).
   */
  source: 'builtin' | 'user' | 'workspace' | 'session';
  /**
   * Where it is written, for people.
   */
  where: string;
  /**
   * User rules: the workspace folder it applies in; absent: every.
   */
  scope?: string;
  /**
   * Session grants: the session.
   */
  sessionId?: string;
  /**
   * A rule made from an approval: the SHA-256 of the call that was approved.
   */
  approvedSha256?: string;
  /**
   * When it was made (ISO 8601), when known.
   */
  created?: string;
  /**
   * Whether agent/rules/remove can remove it.
   */
  removable: boolean;
}
/**
 * A file an edit call changed, as it is now on disk.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "AppliedFileEdit".
 */
export interface AppliedFileEdit {
  /**
   * Relative to the workspace.
   */
  path: string;
  /**
   * create, modify or delete.
   */
  action: 'create' | 'modify' | 'delete';
  /**
   * The full unified diff of what was written.
   */
  diff: string;
  /**
   * True when the user changed the proposal before accepting it (the diff is then of the user's version).
   */
  userEdited: boolean;
}
/**
 * `data` of -32600 when the session is still running a turn.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "BusySessionData".
 */
export interface BusySessionData {
  /**
   * The busy session.
   */
  sessionId: string;
  reason: 'busy';
}
/**
 * `agent/cancel` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "CancelParams".
 */
export interface CancelParams {
  /**
   * The session whose running turn to stop.
   */
  sessionId: string;
}
/**
 * `agent/cancel` result.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "CancelResult".
 */
export interface CancelResult {
  /**
   * False when nothing was running.
   */
  cancelled: boolean;
}
/**
 * `agent/changes` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ChangesParams".
 */
export interface ChangesParams {
  /**
   * The session.
   */
  sessionId: string;
  /**
   * The turn (from agent/stream or a result).
   */
  turnId: string;
}
/**
 * `agent/changes` result: what the turn changed in the workspace, command effects
 * included.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ChangesResult".
 */
export interface ChangesResult {
  sessionId: string;
  turnId: string;
  /**
   * False when the turn changed nothing (no command or edit ran), or no checkpoint could be taken.
   */
  checkpoint: boolean;
  files: FileChangeInfo[];
}
/**
 * One file a turn changed.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "FileChangeInfo".
 */
export interface FileChangeInfo {
  /**
   * Relative to the workspace, / separated.
   */
  path: string;
  /**
   * created, modified or deleted.
   */
  action: 'created' | 'modified' | 'deleted';
  /**
   * A unified diff (a/ and b/ prefixes), or a line saying why none is shown (binary, too large).
   */
  diff: string;
  /**
   * True for a binary file (no line diff).
   */
  binary: boolean;
}
/**
 * `agent/chat` params: one user message, and how this turn may use tools.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ChatParams".
 */
export interface ChatParams {
  /**
   * The user's message; must not be blank.
   */
  prompt: string;
  /**
   * Continue this session (its history and its allow_session approvals); absent: a new session.
   */
  sessionId?: string | null;
  /**
   * Offer tools to the model at all; when false, tool-call markup is text.
   */
  enableTools?: boolean;
  /**
   * Offer only these built-in tools (default: all).
   */
  enabledTools?: string[] | null;
  /**
   * Tool calls this request may run; a further call ends the turn with tool_limit. 0: no tool runs at all.
   */
  maxToolCalls?: number;
  /**
   * Override of the server's confirmToolCalls for this request.
   */
  confirmToolCalls?: boolean | null;
  /**
   * Override of the server's confirmCodeExecution for this request.
   */
  confirmCodeExecution?: boolean | null;
  /**
   * Override of the server's confirmFileEdits for this request.
   */
  confirmFileEdits?: boolean | null;
  /**
   * Override of the server's bypassPermissions for this request.
   */
  bypassPermissions?: boolean | null;
  /**
   * Token limit of each model turn (backend default).
   */
  maxTokens?: number | null;
  /**
   * Sampling temperature (backend default).
   */
  temperature?: number | null;
  /**
   * Sampling seed (backend default).
   */
  seed?: number | null;
  /**
   * Switch to this model before the turn.
   */
  model?: string | null;
}
/**
 * `agent/chat` result, sent after every notification of the turn.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ChatResult".
 */
export interface ChatResult {
  /**
   * The session the turn belongs to.
   */
  sessionId: string;
  /**
   * This turn's id (as in agent/stream).
   */
  turnId: string;
  /**
   * Why the turn ended.
   */
  stopReason: 'end_turn' | 'max_tokens' | 'tool_limit' | 'cancelled' | 'error';
  /**
   * Exactly the concatenation of the turn's content deltas.
   */
  text: string;
  /**
   * Every tool call of the turn, in order.
   */
  toolCalls: ToolCallSummary[];
}
/**
 * One tool call of the turn, as it ended.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolCallSummary".
 */
export interface ToolCallSummary {
  /**
   * The call's toolCallId (as in agent/stream).
   */
  id: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * The arguments the model wrote.
   */
  arguments: {
    [k: string]: unknown;
  };
  /**
   * How the call ended.
   */
  status: 'completed' | 'failed' | 'denied' | 'timed_out' | 'cancelled';
  /**
   * The process exit code for python/terminal (negative: killed by that signal); null when no process ran.
   */
  exitCode: number | null;
}
/**
 * One answer a `toolConfirm` offers.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ChoiceView".
 */
export interface ChoiceView {
  /**
   * Send it back as the result's choice.
   */
  id: string;
  /**
   * What a button says, scope included (e.g. 'Allow `npm test *` in this session'). Holds model-written text: show it through the display rule.
   */
  label: string;
  /**
   * allow_once, allow_session (grants rule for the session), allow_always (writes rule as a user rule for this workspace) or deny.
   */
  kind: 'allow_once' | 'allow_session' | 'allow_always' | 'deny';
  rule?: RuleSpec;
}
/**
 * The rule the choice creates.
 */
export interface RuleSpec {
  /**
   * allow, ask or deny.
   */
  action: 'allow' | 'ask' | 'deny';
  /**
   * The tool it is about (terminal, python, read_file, ...).
   */
  tool: string;
  /**
   * terminal: a command whose words prefix the parsed command, a final * for any further words (`pytest *`); python: the exact code; other tools: a path glob relative to the workspace (`src/**`). Absent: every call of the tool (terminal rules need one).
   */
  pattern?: string;
}
/**
 * A delta of the answer (never cumulative).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ContentEvent".
 */
export interface ContentEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'content';
  /**
   * The new text.
   */
  text: string;
}
/**
 * Who decided whether a call ran.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "DecidedByView".
 */
export interface DecidedByView {
  /**
   * rule (no prompt), person (an answer), settings (no confirm setting covers the call, or bypassPermissions) or failure (no valid answer).
   */
  kind: 'rule' | 'person' | 'settings' | 'failure';
  /**
   * SHA-256 of (tool, canonical arguments, working folder): what was decided.
   */
  contentSha256: string;
  /**
   * kind rule: the rules that decided.
   */
  rules?: RuleRef[];
  /**
   * kind person: the answer.
   */
  choice?: 'allow_once' | 'allow_session' | 'allow_always' | 'deny';
  /**
   * One sentence for people.
   */
  detail: string;
}
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RuleRef".
 */
export interface RuleRef {
  /**
   * The rule's id.
   */
  ruleId: string;
  source: 'builtin' | 'user' | 'workspace' | 'session';
  action: 'allow' | 'ask' | 'deny';
  tool: string;
  /**
   * The rule's pattern.
   */
  pattern?: string;
}
/**
 * `data` of -32602: which params were wrong.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "InvalidParamsData".
 */
export interface InvalidParamsData {
  /**
   * Dotted paths of the bad params, e.g. maxToolCalls.
   */
  fields: string[];
}
/**
 * `data` of -32600 when a permission flag would need a prompt this client cannot show.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "UnwiredGateData".
 */
export interface UnwiredGateData {
  /**
   * The flag that needs a prompt.
   */
  param: 'confirmToolCalls' | 'confirmCodeExecution' | 'confirmFileEdits';
}
/**
 * `data` of -32600 when the requested model cannot be used now.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ModelUnavailableData".
 */
export interface ModelUnavailableData {
  param: 'model';
  /**
   * busy: another session is generating with the loaded model; load_failed: the model could not be loaded (the message says why).
   */
  reason: 'busy' | 'load_failed';
}
/**
 * `data` of -32600 when a pull failed (network, checksum, no such repository).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "PullFailedData".
 */
export interface PullFailedData {
  repo: string;
}
/**
 * `data` of -32600 when a pull was stopped.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "PullCancelledData".
 */
export interface PullCancelledData {
  reason: 'cancelled';
}
/**
 * `data` of -32600 when the data folder (sessions, checkpoints) cannot be used.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "MemoryUnavailableData".
 */
export interface MemoryUnavailableData {
  reason: 'memory_unavailable';
  /**
   * What failed (the folder and the system's error).
   */
  detail: string;
}
/**
 * `capabilities.experimental.gatehouse` in the `initialize` result.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "GatehouseCapabilities".
 */
export interface GatehouseCapabilities {
  /**
   * The server's version.
   */
  version: string;
  /**
   * The built-in tools, in the order a model sees them.
   */
  tools: string[];
  sandbox: SandboxReport;
}
/**
 * The isolation approved code gets on this machine, measured at start-up.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SandboxReport".
 */
export interface SandboxReport {
  /**
   * The strongest tier whose self-test passed: strong, standard, limits-only, none.
   */
  level: 'strong' | 'standard' | 'limits-only' | 'none';
  /**
   * Whether approved code can reach the network.
   */
  network: boolean;
  /**
   * sandbox.minLevel: code is refused below it.
   */
  minLevel: 'strong' | 'standard' | 'limits-only' | 'none';
  /**
   * One sentence a person can read: why this level.
   */
  reason: string;
}
/**
 * One tool call of a saved turn.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "HistoryToolCall".
 */
export interface HistoryToolCall {
  /**
   * The call's toolCallId.
   */
  id: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * The arguments the model wrote.
   */
  arguments: {
    [k: string]: unknown;
  };
  /**
   * How it ended; null: the server stopped first.
   */
  status: ('completed' | 'failed' | 'denied' | 'timed_out' | 'cancelled') | null;
  /**
   * The process exit code; null when none ran.
   */
  exitCode: number | null;
  /**
   * Exactly what the model received.
   */
  result: string | null;
  /**
   * Who let it run or stopped it (see the audit log); null: never asked.
   */
  decidedBy:
    | (
        | 'toolConfirm'
        | 'showMessageRequest'
        | 'session_grant'
        | 'bypass'
        | 'not_required'
        | 'timeout'
        | 'cancel'
        | 'error'
        | 'rule'
        | 'approver'
      )
    | null;
}
/**
 * One turn of a saved session.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "HistoryTurn".
 */
export interface HistoryTurn {
  /**
   * The turn's id (agent/changes and agent/rewind take it).
   */
  turnId: string;
  /**
   * The user's message.
   */
  prompt: string;
  /**
   * The answer's text (the turn's content deltas).
   */
  text: string;
  /**
   * Why it ended; null: the server stopped during it (it was lost in flight).
   */
  stopReason: ('end_turn' | 'max_tokens' | 'tool_limit' | 'cancelled' | 'error') | null;
  toolCalls: HistoryToolCall[];
  /**
   * When it started (ISO 8601, UTC).
   */
  started: string;
  /**
   * Whether it has a checkpoint (it ran a command or an edit): agent/changes says what it changed.
   */
  changedFiles: boolean;
  /**
   * Rewound out of the conversation (agent/rewind).
   */
  rewound: boolean;
}
/**
 * `memory`: what the server keeps in the data folder (the audit log is always kept).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "MemoryOptions".
 */
export interface MemoryOptions {
  /**
   * Save conversations in the data folder so they survive a restart (agent/sessions).
   */
  sessions?: boolean;
  /**
   * Take a checkpoint of the workspace before the first command or edit of each turn (agent/changes, agent/rewind).
   */
  checkpoints?: boolean;
  /**
   * Files larger than this are not captured by checkpoints (the turn's status names them).
   */
  checkpointMaxFileBytes?: number;
}
/**
 * One model, with what its files say about it (null: not known).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ModelDescription".
 */
export interface ModelDescription {
  /**
   * What a model setting (or agent/chat model) may say.
   */
  name: string;
  /**
   * Where it was found.
   */
  source: 'embedded' | 'configured' | 'models folder' | 'ollama' | 'lmstudio' | 'hf';
  /**
   * gguf or safetensors.
   */
  kind: 'gguf' | 'safetensors';
  /**
   * The file or folder.
   */
  path: string;
  /**
   * Bytes on disk (every part or shard).
   */
  sizeBytes: number;
  /**
   * e.g. llama, qwen2.
   */
  architecture: string | null;
  /**
   * The name its metadata gives.
   */
  displayName: string | null;
  /**
   * Parameter count, from its tensors.
   */
  parameters: number | null;
  /**
   * e.g. Q4_K_M.
   */
  quantization: string | null;
  /**
   * The context it was trained for, in tokens.
   */
  contextLength: number | null;
  /**
   * Whether it carries a chat template.
   */
  chatTemplate: boolean | null;
  /**
   * Why it cannot be used (unreadable, truncated, ...).
   */
  error: string | null;
}
/**
 * `agent/models` params: none (`{}` or omitted).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ModelsParams".
 */
export interface ModelsParams {}
/**
 * `agent/models` result.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ModelsResult".
 */
export interface ModelsResult {
  models: ModelDescription[];
  /**
   * The loaded (or configured) model's name.
   */
  current: string | null;
  /**
   * Where to put .gguf files or safetensors folders.
   */
  modelsFolder: string;
}
/**
 * `openai`: the server to use with `backend: "openai"`.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "OpenAIOptions".
 */
export interface OpenAIOptions {
  /**
   * The server's base URL, e.g. http://localhost:8000/v1 (your API key is sent there).
   */
  baseUrl?: string | null;
  /**
   * The model name the server knows.
   */
  model?: string | null;
  /**
   * The NAME of the environment variable holding the API key (the key itself never goes into settings, logs or the wire).
   */
  apiKeyEnv?: string | null;
}
/**
 * One file an edit call would change, as the person reviews it.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ProposedEdit".
 */
export interface ProposedEdit {
  /**
   * Relative to the workspace (every symbolic link resolved).
   */
  path: string;
  /**
   * create, modify or delete.
   */
  action: 'create' | 'modify' | 'delete';
  /**
   * The full unified diff (git style: --- a/path, +++ b/path, @@ hunks; /dev/null for a created or deleted file), never shortened.
   */
  diff: string;
  /**
   * Present when the path is an auto-run path (.git, hooks, .vscode, ...) or part of the server's own code: what runs or reads it. Such an edit is always asked about.
   */
  protected?: string;
}
/**
 * An auto-run path a call created or changed, and what Gatehouse did about it.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ProtectedPath".
 */
export interface ProtectedPath {
  /**
   * Relative to the workspace.
   */
  path: string;
  /**
   * quarantined (moved out of the workspace, nothing lost), restored (the original written back) or removed (the call removed it; reported only).
   */
  action: 'quarantined' | 'restored' | 'removed';
  /**
   * What happened, for a person.
   */
  detail: string;
}
/**
 * `agent/pullModel` params: a repository, and optionally one file of it.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "PullModelParams".
 */
export interface PullModelParams {
  /**
   * ORG/NAME on the Hub.
   */
  repo: string;
  /**
   * One file (e.g. a .gguf); absent: the model.
   */
  file?: string | null;
  /**
   * A branch, tag or commit.
   */
  revision?: string;
}
/**
 * `agent/pullModel` result.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "PullModelResult".
 */
export interface PullModelResult {
  /**
   * The pulled model's name (usable as model).
   */
  name: string;
  repo: string;
  revision: string;
  /**
   * The files on disk.
   */
  files: string[];
}
/**
 * A delta of the model's reasoning (`<think>`); not part of the answer's text.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ReasoningEvent".
 */
export interface ReasoningEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'reasoning';
  /**
   * The new text.
   */
  text: string;
}
/**
 * `agent/rules/remove` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RemoveRuleParams".
 */
export interface RemoveRuleParams {
  /**
   * The id from agent/rules.
   */
  ruleId: string;
}
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RemoveRuleResult".
 */
export interface RemoveRuleResult {
  rule: RuleView1;
}
/**
 * A rule and where it came from.
 */
export interface RuleView1 {
  /**
   * allow, ask or deny.
   */
  action: 'allow' | 'ask' | 'deny';
  /**
   * The tool it is about (terminal, python, read_file, ...).
   */
  tool: string;
  /**
   * terminal: a command whose words prefix the parsed command, a final * for any further words (`pytest *`); python: the exact code; other tools: a path glob relative to the workspace (`src/**`). Absent: every call of the tool (terminal rules need one).
   */
  pattern?: string;
  /**
   * Stable id (agent/rules/remove takes it).
   */
  ruleId: string;
  /**
   * builtin, user (your rules file), workspace (.gatehouse/rules.toml) or session (a grant of this session).
   */
  source: 'builtin' | 'user' | 'workspace' | 'session';
  /**
   * Where it is written, for people.
   */
  where: string;
  /**
   * User rules: the workspace folder it applies in; absent: every.
   */
  scope?: string;
  /**
   * Session grants: the session.
   */
  sessionId?: string;
  /**
   * A rule made from an approval: the SHA-256 of the call that was approved.
   */
  approvedSha256?: string;
  /**
   * When it was made (ISO 8601), when known.
   */
  created?: string;
  /**
   * Whether agent/rules/remove can remove it.
   */
  removable: boolean;
}
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RewindConflict".
 */
export interface RewindConflict {
  path: string;
  /**
   * changed_by_hand: changed outside the session's turns since; autorun: an auto-run path (.vscode, hooks, ...).
   */
  reason: 'changed_by_hand' | 'autorun';
  detail: string;
}
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RewindFile".
 */
export interface RewindFile {
  path: string;
  /**
   * restored: written back as it was; deleted: the turns created it.
   */
  action: 'restored' | 'deleted';
}
/**
 * `agent/rewind` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RewindParams".
 */
export interface RewindParams {
  /**
   * The session.
   */
  sessionId: string;
  /**
   * Rewind to just before this turn.
   */
  turnId: string;
  /**
   * files: the workspace; conversation: the session's history (the model forgets this turn and later ones); both.
   */
  scope: 'files' | 'conversation' | 'both';
  /**
   * Also write files changed by hand since, and auto-run paths (listed in conflicts when false).
   */
  force?: boolean;
}
/**
 * `agent/rewind` result. With conflicts and no `force` nothing is applied at all.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RewindResult".
 */
export interface RewindResult {
  /**
   * Whether the rewind was carried out.
   */
  applied: boolean;
  /**
   * What was written back.
   */
  files: RewindFile[];
  /**
   * Files that need force (when applied is false, nothing was written).
   */
  conflicts: RewindConflict[];
  /**
   * Files that were not written, and why.
   */
  skipped: RewindSkipped[];
  /**
   * Whether the conversation was rewound.
   */
  conversation: boolean;
  /**
   * The checkpoint of the workspace taken just before the rewind wrote anything.
   */
  checkpoint?: string;
}
/**
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RewindSkipped".
 */
export interface RewindSkipped {
  path: string;
  /**
   * Why it is never written (a symbolic link on the way, not captured, changed meanwhile...).
   */
  detail: string;
}
/**
 * A rule's meaning: `{action, tool, pattern?}`.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RuleSpec".
 */
export interface RuleSpec1 {
  /**
   * allow, ask or deny.
   */
  action: 'allow' | 'ask' | 'deny';
  /**
   * The tool it is about (terminal, python, read_file, ...).
   */
  tool: string;
  /**
   * terminal: a command whose words prefix the parsed command, a final * for any further words (`pytest *`); python: the exact code; other tools: a path glob relative to the workspace (`src/**`). Absent: every call of the tool (terminal rules need one).
   */
  pattern?: string;
}
/**
 * `agent/rules` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RulesParams".
 */
export interface RulesParams {
  /**
   * Only this session's grants (default: every session's).
   */
  sessionId?: string | null;
}
/**
 * `agent/rules` result: every rule in force in this workspace, sources in order.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "RulesResult".
 */
export interface RulesResult {
  /**
   * built-in, user, workspace, then session rules.
   */
  rules: RuleView[];
  /**
   * What was wrong in a rules file (an ignored `allow` in the workspace file, a bad pattern, invalid TOML): each such rule is not in force.
   */
  problems: string[];
  /**
   * Your rules file (None: no data folder).
   */
  userFile: string | null;
  /**
   * This workspace's rules file.
   */
  workspaceFile: string;
}
/**
 * `sandbox`: how approved code is confined.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SandboxOptions".
 */
export interface SandboxOptions {
  /**
   * Let approved code reach the network (approval prompts say when it is on).
   */
  network?: boolean;
  /**
   * Refuse code execution on machines with weaker isolation (see docs/security.md).
   */
  minLevel?: 'strong' | 'standard' | 'limits-only' | 'none';
}
/**
 * The isolation a call runs (or ran) under.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SandboxState".
 */
export interface SandboxState {
  /**
   * strong, standard, limits-only or none.
   */
  level: 'strong' | 'standard' | 'limits-only' | 'none';
  /**
   * Whether the code can reach the network.
   */
  network: boolean;
}
/**
 * `initializationOptions`: every field is optional; a missing one takes its default.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ServerOptions".
 */
export interface ServerOptions {
  /**
   * The engine that runs the model.
   */
  backend?: 'llama_cpp' | 'transformers' | 'openai' | 'scripted';
  /**
   * The model to load: a .gguf file, a safetensors folder, or a name from `gatehouse models` (default: the embedded model). For openai, the server's model name.
   */
  model?: string | null;
  /**
   * The scripted backend's script: a JSON file (see docs/protocol.md, 'The scripted backend').
   */
  script?: string | null;
  /**
   * CPU threads for local models (default: llama.cpp's).
   */
  threads?: number | null;
  /**
   * The context window in tokens; older turns are left out (and you are told) when a conversation outgrows it.
   */
  contextSize?: number;
  /**
   * llama.cpp: constrain the first model turn of each request to one valid tool call (helps small models). Unset: on for models of at most 1B parameters.
   */
  toolGrammar?: boolean | null;
  /**
   * Give models of at most 1B parameters (counted from the file) their defaults: toolGrammar on, enabledTools ['terminal'] when a request names none, one round of tool calls per request (the model then answers without tools), min_p 0.2. Explicit settings win.
   */
  modelDefaults?: boolean;
  openai?: OpenAIOptions;
  /**
   * Ask before every tool call, including reading and listing files.
   */
  confirmToolCalls?: boolean;
  /**
   * Ask before every python and terminal call.
   */
  confirmCodeExecution?: boolean;
  /**
   * Ask before every edit_file, write_file and apply_patch call, showing the diff (edits of auto-run paths such as .git or .vscode are asked about even when this is off).
   */
  confirmFileEdits?: boolean;
  /**
   * Ask nothing and run tool calls without the sandbox (secrets are still stripped from the environment). Wins over every confirm flag.
   */
  bypassPermissions?: boolean;
  /**
   * Seconds an approval may stay unanswered; then the call is not run (timed_out) and the prompt is withdrawn.
   */
  confirmTimeoutSeconds?: number;
  /**
   * Wall-clock limit in seconds of one python or terminal call; its whole process tree is killed past it.
   */
  toolTimeoutSeconds?: number;
  sandbox?: SandboxOptions;
  memory?: MemoryOptions;
}
/**
 * `agent/session/delete` result.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionDeleteResult".
 */
export interface SessionDeleteResult {
  /**
   * False when there was no such session.
   */
  deleted: boolean;
}
/**
 * One session of this workspace (saved by this server or an earlier one).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionInfo".
 */
export interface SessionInfo {
  /**
   * Pass it as agent/chat sessionId to continue it.
   */
  sessionId: string;
  /**
   * The first line of its first prompt.
   */
  title: string;
  /**
   * Turns started so far.
   */
  turns: number;
  /**
   * When it started (ISO 8601, UTC).
   */
  created: string;
  /**
   * When a turn last started or ended (ISO 8601, UTC).
   */
  lastActivity: string;
  /**
   * The model its last turn used.
   */
  model: string | null;
  /**
   * Whether this server has it open (it continues at once).
   */
  open: boolean;
}
/**
 * `agent/session/load` result: the session is open in this server, with its history.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionLoadResult".
 */
export interface SessionLoadResult {
  sessionId: string;
  title: string;
  /**
   * Every turn, oldest first.
   */
  turns: HistoryTurn[];
  /**
   * Tools allowed for the session in this server (a session resumed from an earlier server starts with none: its grants are never revived).
   */
  allowedTools: string[];
}
/**
 * `agent/session/load` and `agent/session/delete` params.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionParams".
 */
export interface SessionParams {
  /**
   * The session.
   */
  sessionId: string;
}
/**
 * One session of this server.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionSummary".
 */
export interface SessionSummary {
  /**
   * The session's id.
   */
  sessionId: string;
  /**
   * Turns started so far.
   */
  turns: number;
  /**
   * Whether a turn is running now.
   */
  running: boolean;
  /**
   * Tools approved with allow_session.
   */
  allowedTools: string[];
}
/**
 * `agent/sessions` params: none (`{}` or omitted).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionsParams".
 */
export interface SessionsParams {}
/**
 * `agent/sessions` result: the most recently active first.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "SessionsResult".
 */
export interface SessionsResult {
  sessions: SessionInfo[];
}
/**
 * A line for a person: loading, waiting for approval, running, limits, context trimming.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "StatusEvent".
 */
export interface StatusEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'status';
  /**
   * The line.
   */
  text: string;
}
/**
 * `agent/status` params: none (`{}` or omitted).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "StatusParams".
 */
export interface StatusParams {}
/**
 * `agent/status` result.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "StatusResult".
 */
export interface StatusResult {
  /**
   * The server's version.
   */
  version: string;
  /**
   * The configured backend.
   */
  backend: string;
  /**
   * The configured or loaded model's name.
   */
  model: string | null;
  /**
   * Whether the model is in memory yet.
   */
  modelLoaded: boolean;
  /**
   * The folder tools work in.
   */
  workspace: string;
  sandbox: SandboxReport;
  sessions: SessionSummary[];
}
/**
 * Live preview of the raw text of a call while the model writes it; never means running.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolArgsEvent".
 */
export interface ToolArgsEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'tool_args';
  /**
   * Which call of this model turn (0-based).
   */
  index: number;
  /**
   * The new raw text.
   */
  text: string;
}
/**
 * A parsed tool call.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolStartEvent".
 */
export interface ToolStartEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'tool_start';
  /**
   * The call's id.
   */
  toolCallId: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * The arguments the model wrote.
   */
  arguments: {
    [k: string]: unknown;
  };
  /**
   * True: an approval request follows, and nothing runs until it is answered.
   */
  awaitingConfirmation: boolean;
}
/**
 * A delta of a running call's merged stdout/stderr (capped at 1 MiB, with a notice).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolOutputEvent".
 */
export interface ToolOutputEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'tool_output';
  /**
   * The call's id.
   */
  toolCallId: string;
  /**
   * The new output.
   */
  text: string;
}
/**
 * The call is over.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolEndEvent".
 */
export interface ToolEndEvent {
  /**
   * The session of the turn.
   */
  sessionId: string;
  /**
   * The turn this event belongs to.
   */
  turnId: string;
  type: 'tool_end';
  /**
   * The call's id.
   */
  toolCallId: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * How the call ended.
   */
  status: 'completed' | 'failed' | 'denied' | 'timed_out' | 'cancelled';
  /**
   * The process exit code for python/terminal; null when no process ran.
   */
  exitCode: number | null;
  /**
   * Exactly what the model receives.
   */
  result: string;
  sandbox?: SandboxState1;
  /**
   * Present when the call created or changed auto-run paths (.git, hooks, .vscode, ...): what was done about each (see docs/security.md).
   */
  protected?: ProtectedPath[];
  decidedBy?: DecidedByView1;
  /**
   * Present when an edit tool changed files: each file and the diff really applied.
   */
  edits?: AppliedFileEdit[];
}
/**
 * Present when code ran: the isolation it really ran under (none under bypass).
 */
export interface SandboxState1 {
  /**
   * strong, standard, limits-only or none.
   */
  level: 'strong' | 'standard' | 'limits-only' | 'none';
  /**
   * Whether the code can reach the network.
   */
  network: boolean;
}
/**
 * Who decided whether the call ran (a rule, a person's answer, the settings, or a failure to answer) and the SHA-256 of what was decided; absent when the call never reached the gate (invalid arguments, an unknown tool).
 */
export interface DecidedByView1 {
  /**
   * rule (no prompt), person (an answer), settings (no confirm setting covers the call, or bypassPermissions) or failure (no valid answer).
   */
  kind: 'rule' | 'person' | 'settings' | 'failure';
  /**
   * SHA-256 of (tool, canonical arguments, working folder): what was decided.
   */
  contentSha256: string;
  /**
   * kind rule: the rules that decided.
   */
  rules?: RuleRef[];
  /**
   * kind person: the answer.
   */
  choice?: 'allow_once' | 'allow_session' | 'allow_always' | 'deny';
  /**
   * One sentence for people.
   */
  detail: string;
}
/**
 * `toolConfirm` params (server -> client request).
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolConfirmParams".
 */
export interface ToolConfirmParams {
  /**
   * The session of the call.
   */
  sessionId: string;
  /**
   * The turn of the call.
   */
  turnId: string;
  /**
   * The call's id (as in agent/stream tool_start).
   */
  toolCallId: string;
  /**
   * Unguessable id of this approval (192 random bits); a result that echoes another approvalId is refused.
   */
  approvalId: string;
  /**
   * The tool's name.
   */
  name: string;
  /**
   * Exactly what will run, in full.
   */
  arguments: {
    [k: string]: unknown;
  };
  /**
   * code_execution (python/terminal under confirmCodeExecution), file_edit (edit_file/write_file/apply_patch under confirmFileEdits), all_tools (confirmToolCalls), ask_rule (an ask rule matched) or protected_path (an edit of an auto-run path: always asked, even after allow_session or with an allow rule).
   */
  reason: 'code_execution' | 'file_edit' | 'all_tools' | 'ask_rule' | 'protected_path';
  sandbox: SandboxState2;
  /**
   * SHA-256 of (tool, canonical arguments, working folder): what an allow approves. The executor refuses anything else; a result may echo it.
   */
  contentSha256: string;
  /**
   * The answers to offer, Deny first, labels saying their scope. A client that ignores them answers with decision alone (allow_session then grants the allow_session choice's rule, or allows once when there is none).
   */
  choices: ChoiceView[];
  /**
   * terminal: why rules could not allow this command (e.g. 'runs a command substitution'), for the person.
   */
  unclear?: string[];
  /**
   * Present for the edit tools: every file the call would change, with its full diff.
   */
  edits?: ProposedEdit[];
}
/**
 * The isolation the call would run under.
 */
export interface SandboxState2 {
  /**
   * strong, standard, limits-only or none.
   */
  level: 'strong' | 'standard' | 'limits-only' | 'none';
  /**
   * Whether the code can reach the network.
   */
  network: boolean;
}
/**
 * `toolConfirm` result. Anything else (missing or unknown decision, wrong types) is
 * malformed, and the call does not run.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "ToolConfirmResult".
 */
export interface ToolConfirmResult {
  /**
   * allow, allow_session or deny.
   */
  decision: 'allow' | 'allow_session' | 'deny';
  /**
   * Passed to the model on deny.
   */
  message?: string | null;
  /**
   * Optional echo of the request's approvalId; when present it must match.
   */
  approvalId?: string | null;
  /**
   * The id of the chosen choice; its kind must agree with decision (deny: deny; allow_once and allow_always: allow; allow_session: allow_session), or the call does not run.
   */
  choice?: string | null;
  /**
   * Optional echo of the request's contentSha256; when present it must match.
   */
  contentSha256?: string | null;
  /**
   * With an allow of an edit: the user's own version of some of its files (created or modified ones, each at most once), written instead of the proposal; the model is told how it differs. Any other path makes the answer malformed.
   */
  edits?: UserEdit[] | null;
}
/**
 * The user's own version of one file of an edit (full content), written instead.
 *
 * This interface was referenced by `GatehouseProtocol`'s JSON-Schema
 * via the `definition` "UserEdit".
 */
export interface UserEdit {
  /**
   * As in the request's edits[].path.
   */
  path: string;
  /**
   * The whole text of the file as the user wants it.
   */
  content: string;
}
