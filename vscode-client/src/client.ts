/**
 * The Gatehouse server process and its JSON-RPC connection (vscode-languageclient over stdio):
 * finds the interpreter, starts, stops and restarts `<python> -m server`, advertises
 * `experimental.toolConfirm`, and exposes typed `agent/*` requests.
 */
import * as vscode from 'vscode';
import {
  CancellationTokenSource,
  LanguageClient,
  ResponseError,
  RevealOutputChannelOn,
  State,
  type CancellationToken,
  type ClientCapabilities,
  type FeatureState,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { defaultPathCommands, findInterpreter, probeImportServer } from './interpreter';
import {
  ErrorCodes,
  Methods,
  type CancelResult,
  type ChangesResult,
  type ChatParams,
  type ChatResult,
  type GatehouseServerCapabilities,
  type InitializationOptions,
  type ModelsResult,
  type RemoveRuleResult,
  type RulesResult,
  type RewindParams,
  type RewindResult,
  type SessionDeleteResult,
  type SessionLoadResult,
  type SessionsResult,
  type StatusResult,
  type StreamEvent,
  type ToolConfirmParams,
  type ToolConfirmResult,
} from './protocol';
import { activePythonFromExtension } from './pythonExtension';
import { SECTION, readSettings, toInitializationOptions, type GatehouseSettings } from './settings';
import type { ServerState } from './statusBar';

/** Advertises `capabilities.experimental.toolConfirm` and remembers `experimental.gatehouse`. */
class ToolConfirmFeature implements StaticFeature {
  server: GatehouseServerCapabilities | undefined;

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), toolConfirm: true };
    // vscode-languageclient's ProgressFeature also sets this; say it here too, it is part of the contract.
    capabilities.window = { ...capabilities.window, workDoneProgress: true };
  }

  initialize(capabilities: { experimental?: unknown }): void {
    const experimental = capabilities.experimental as { gatehouse?: GatehouseServerCapabilities } | undefined;
    this.server = experimental?.gatehouse;
  }

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {
    this.server = undefined;
  }
}

export interface ServerHandlers {
  onStream(event: StreamEvent): void;
  /** Resolves with the decision, or undefined when the request was withdrawn. */
  onToolConfirm(params: ToolConfirmParams, token: CancellationToken): Promise<ToolConfirmResult | undefined>;
  onStateChange(state: ServerState, detail?: string): void;
  /** The server (re)started and answered `initialize`. */
  onReady(): void;
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private feature: ToolConfirmFeature | undefined;
  private queue: Promise<void> = Promise.resolve();
  /** The options the running server was started with. */
  options: InitializationOptions | undefined;
  /** The settings (all but the live trace setting) the server was last started with. */
  private startedWith = '';

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly handlers: ServerHandlers,
  ) {}

  get serverCapabilities(): GatehouseServerCapabilities | undefined {
    return this.feature?.server;
  }

  /** (Re)starts the server; calls are serialized. */
  restart(): Promise<void> {
    this.queue = this.queue.then(() => this.doRestart()).catch((error: unknown) => this.log.error(`Restart failed: ${String(error)}`));
    return this.queue;
  }

  /** Restarts only when a setting other than the trace changed since the last start. */
  restartIfChanged(): Promise<void> {
    return this.settingsKey() === this.startedWith ? this.queue : this.restart();
  }

  private settingsKey(): string {
    return JSON.stringify({ ...this.currentOptions().settings, traceServer: undefined });
  }

  /** The options the current settings would start the server with. */
  currentOptions(): { settings: GatehouseSettings; options: InitializationOptions } {
    const config = vscode.workspace.getConfiguration(SECTION);
    const settings = readSettings((key, fallback) => config.get(key, fallback));
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    return { settings, options: toInitializationOptions(settings, { workspaceFolder: folder, home: process.env.HOME }) };
  }

  async chat(params: ChatParams, signal: AbortSignal): Promise<ChatResult> {
    await this.queue; // a (re)start in progress finishes first
    const client = this.requireClient();
    const source = new CancellationTokenSource();
    const onAbort = (): void => source.cancel();
    signal.addEventListener('abort', onAbort);
    try {
      return await client.sendRequest<ChatResult>(Methods.chat, params, source.token);
    } finally {
      signal.removeEventListener('abort', onAbort);
      source.dispose();
    }
  }

  cancel(sessionId: string): Promise<CancelResult> {
    return this.requireClient().sendRequest<CancelResult>(Methods.cancel, { sessionId });
  }

  status(): Promise<StatusResult> {
    return this.requireClient().sendRequest<StatusResult>(Methods.status, {});
  }

  async models(): Promise<ModelsResult> {
    await this.queue;
    return this.requireClient().sendRequest<ModelsResult>(Methods.models, {});
  }

  async rules(): Promise<RulesResult> {
    await this.queue;
    return this.requireClient().sendRequest<RulesResult>(Methods.rules, {});
  }

  async removeRule(ruleId: string): Promise<RemoveRuleResult> {
    await this.queue;
    return this.requireClient().sendRequest<RemoveRuleResult>(Methods.removeRule, { ruleId });
  }

  // --- memory (saved sessions, changes, rewind) ---------------------------------------------------

  async sessions(): Promise<SessionsResult> {
    await this.queue;
    return this.requireClient().sendRequest<SessionsResult>(Methods.sessions, {});
  }

  async loadSession(sessionId: string): Promise<SessionLoadResult> {
    await this.queue;
    return this.requireClient().sendRequest<SessionLoadResult>(Methods.sessionLoad, { sessionId });
  }

  deleteSession(sessionId: string): Promise<SessionDeleteResult> {
    return this.requireClient().sendRequest<SessionDeleteResult>(Methods.sessionDelete, { sessionId });
  }

  changes(sessionId: string, turnId: string): Promise<ChangesResult> {
    return this.requireClient().sendRequest<ChangesResult>(Methods.changes, { sessionId, turnId });
  }

  rewind(params: RewindParams): Promise<RewindResult> {
    return this.requireClient().sendRequest<RewindResult>(Methods.rewind, params);
  }

  async dispose(): Promise<void> {
    await this.stopClient();
  }

  private requireClient(): LanguageClient {
    if (this.client === undefined || !this.client.isRunning()) {
      throw new Error('The Gatehouse server is not running. Run "Gatehouse: Restart Server", or "Gatehouse: Show Logs" to see why.');
    }
    return this.client;
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    try {
      await client.stop(3000);
    } catch (error) {
      this.log.warn(`Stopping the server: ${String(error)}`);
    }
    await client.dispose().catch(() => undefined);
  }

  private async doRestart(): Promise<void> {
    await this.stopClient();
    this.handlers.onStateChange('starting');
    const { settings, options } = this.currentOptions();
    this.startedWith = this.settingsKey();
    const found = await findInterpreter({
      setting: () => settings.pythonCommand,
      pythonExtension: () => activePythonFromExtension(vscode.workspace.workspaceFolders?.[0]?.uri),
      pathCommands: defaultPathCommands(process.platform),
      probe: (command) => probeImportServer(command, this.context.extensionPath),
    });
    for (const a of found.attempts) this.log.info(`Interpreter ${a.command} (${a.source}): ${a.ok ? 'ok' : 'no'} — ${a.detail}`);
    if (!found.ok) {
      this.log.error(found.message);
      this.handlers.onStateChange('error', found.message);
      void showStartError(found.message);
      return;
    }
    this.log.info(`Starting ${found.command} -m server (from ${found.source})`);
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const serverOptions: ServerOptions = {
      command: found.command,
      // No `transport`: with TransportKind.stdio vscode-languageclient appends `--stdio`, which the
      // server's argument parser rejects. Without it, stdio is still the channel.
      // -P and a neutral folder: a `server` package in the user's workspace (which approved code
      // can write) is never what runs.
      // --workspace: the folder is known now, so the server probes its sandbox while it loads.
      args: ['-P', '-m', 'server', ...(folder === undefined ? [] : ['--workspace', folder])],
      options: { cwd: this.context.extensionPath },
    };
    const client = new LanguageClient('gatehouse', 'Gatehouse', serverOptions, {
      // The workspace's open files are synchronised, as with any language server: the server
      // refuses to edit a file the user has unsaved changes in (docs/protocol.md, "Open documents").
      documentSelector: workspaceDocuments(folder),
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: options,
      connectionOptions: { maxRestartCount: 2 },
      initializationFailedHandler: (error) => {
        const message = `Gatehouse server failed to initialize: ${error instanceof Error ? error.message : String(error)}`;
        this.log.error(message);
        return false;
      },
    });
    const feature = new ToolConfirmFeature();
    client.registerFeature(feature);
    client.onNotification(Methods.stream, (event: StreamEvent) => this.handlers.onStream(event));
    client.onRequest(Methods.toolConfirm, async (params: ToolConfirmParams, token: CancellationToken) => {
      const result = await this.handlers.onToolConfirm(params, token);
      // Withdrawn: nothing more to say; the server ignores this reply.
      return result ?? new ResponseError(ErrorCodes.requestCancelled, 'The approval request was withdrawn.');
    });
    client.onDidChangeState(({ newState }) => {
      if (this.client !== client) return;
      if (newState === State.Running) this.handlers.onReady();
      else if (newState === State.Stopped) this.handlers.onStateChange('stopped', 'The server stopped.');
    });
    this.client = client;
    this.feature = feature;
    this.options = options;
    try {
      await client.start();
    } catch (error) {
      const message = `Gatehouse server did not start: ${error instanceof Error ? error.message : String(error)}`;
      this.log.error(message);
      this.handlers.onStateChange('error', message);
      void showStartError(message);
    }
  }
}

/** The documents the server is told about: files in the workspace folder (none without one). */
export function workspaceDocuments(folder: string | undefined): Array<{ scheme: string; pattern: string }> {
  if (folder === undefined) return [];
  const escaped = folder.replace(/\\/g, '/').replace(/[[\]{}*?]/g, (c) => `[${c}]`);
  return [{ scheme: 'file', pattern: `${escaped.replace(/\/+$/, '')}/**` }];
}

async function showStartError(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, 'Show Logs', 'Open Settings');
  if (choice === 'Show Logs') await vscode.commands.executeCommand('gatehouse.showLogs');
  else if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'gatehouse.server');
}
