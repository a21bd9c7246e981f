/**
 * The Gatehouse wire protocol as the extension sees it: method names, error codes, and the message
 * types. The types are generated (src/protocol.generated.ts) from docs/schema/gatehouse.schema.json,
 * which is generated from the server's models (server/protocol/): `npm run check:protocol` fails on
 * any drift. docs/protocol.md describes the contract for people.
 * No runtime imports: this module is shared by the glue modules and their unit tests.
 */
import type {
  ChatResult,
  ModelDescription,
  GatehouseCapabilities,
  SandboxReport,
  ServerOptions,
  ToolCallSummary,
  ToolConfirmParams,
  ToolConfirmResult,
} from './protocol.generated';

export type * from './protocol.generated';

/** Every method this client uses (the names are checked against server/protocol's METHODS). */
export const Methods = {
  chat: 'agent/chat',
  cancel: 'agent/cancel',
  status: 'agent/status',
  models: 'agent/models',
  rules: 'agent/rules',
  removeRule: 'agent/rules/remove',
  stream: 'agent/stream',
  toolConfirm: 'toolConfirm',
  sessions: 'agent/sessions',
  sessionLoad: 'agent/session/load',
  sessionDelete: 'agent/session/delete',
  changes: 'agent/changes',
  rewind: 'agent/rewind',
} as const;

/** JSON-RPC error codes the extension treats specially. */
export const ErrorCodes = {
  invalidRequest: -32600,
  invalidParams: -32602,
  requestCancelled: -32800,
} as const;

export type IsolationLevel = SandboxReport['level'];
export const ISOLATION_LEVELS: readonly IsolationLevel[] = ['strong', 'standard', 'limits-only', 'none'];

export type Backend = NonNullable<ServerOptions['backend']>;
export type StopReason = ChatResult['stopReason'];
export type ToolStatus = ToolCallSummary['status'];
export type ConfirmReason = ToolConfirmParams['reason'];
export type Decision = ToolConfirmResult['decision'];

/** `initializationOptions`: every field optional, absent means the server default. */
export type InitializationOptions = ServerOptions;
/** `capabilities.experimental.gatehouse` in the initialize result. */
export type GatehouseServerCapabilities = GatehouseCapabilities;
/** The isolation report of `initialize` and `agent/status`. */
export type SandboxInfo = SandboxReport;
/** One model of `agent/models`. */
export type ModelInfo = ModelDescription;
export type ModelSource = ModelDescription['source'];
