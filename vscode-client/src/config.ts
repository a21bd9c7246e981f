/**
 * Watches `gatehouse.*` settings: a change restarts the server (debounced 500 ms), and turning
 * `gatehouse.bypassPermissions` on must be confirmed in a modal dialog first, else it is reverted.
 */
import * as vscode from 'vscode';
import { SECTION } from './settings';

const BYPASS = 'bypassPermissions';
const DEBOUNCE_MS = 500;

async function confirmBypass(): Promise<boolean> {
  const choice = await vscode.window.showWarningMessage(
    'Turn on "Bypass Permissions" for Gatehouse?',
    {
      modal: true,
      detail:
        'The model\'s tool calls, including Python code and shell commands, will run WITHOUT asking you and ' +
        'WITHOUT the sandbox (secrets are still removed from their environment). Only do this in a disposable ' +
        'environment.',
    },
    'Turn On Bypass',
  );
  return choice === 'Turn On Bypass';
}

async function revertBypass(log: vscode.LogOutputChannel): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const inspected = config.inspect<boolean>(BYPASS);
  const targets: Array<[boolean | undefined, vscode.ConfigurationTarget]> = [
    [inspected?.workspaceFolderValue, vscode.ConfigurationTarget.WorkspaceFolder],
    [inspected?.workspaceValue, vscode.ConfigurationTarget.Workspace],
    [inspected?.globalValue, vscode.ConfigurationTarget.Global],
  ];
  for (const [value, target] of targets) {
    if (value === true) await config.update(BYPASS, undefined, target);
  }
  log.warn('gatehouse.bypassPermissions was turned on without confirmation: reverted.');
}

export function watchSettings(onChange: () => void, log: vscode.LogOutputChannel): vscode.Disposable {
  let timer: ReturnType<typeof setTimeout> | undefined;
  // While the bypass confirmation is open, no restart may pick up the unconfirmed value.
  let confirming: Promise<void> = Promise.resolve();
  const schedule = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void confirming.then(onChange);
    }, DEBOUNCE_MS);
  };
  const check = async (): Promise<void> => {
    if (vscode.workspace.getConfiguration(SECTION).get(BYPASS) !== true) return;
    if (await confirmBypass()) {
      log.warn('gatehouse.bypassPermissions turned on (confirmed).');
      return;
    }
    await revertBypass(log).catch((error: unknown) => log.error(`Reverting bypassPermissions failed: ${String(error)}`));
  };
  const listener = vscode.workspace.onDidChangeConfiguration((event) => {
    if (!event.affectsConfiguration(SECTION)) return;
    if (event.affectsConfiguration(`${SECTION}.${BYPASS}`)) confirming = confirming.then(check).catch((error: unknown) => log.error(String(error)));
    schedule();
  });
  return new vscode.Disposable(() => {
    if (timer !== undefined) clearTimeout(timer);
    listener.dispose();
  });
}

/**
 * `gatehouse.model`, in the user's settings: it is machine-scoped (it chooses the file the
 * unsandboxed server opens), so a workspace value would be ignored anyway.
 */
export function modelSetting(): { get(): string; set(value: string): Promise<void> } {
  const key = 'model';
  return {
    get: () => vscode.workspace.getConfiguration(SECTION).get<string>(key, ''),
    set: async (value) => {
      const config = vscode.workspace.getConfiguration(SECTION);
      await config.update(key, value === '' ? undefined : value, vscode.ConfigurationTarget.Global);
    },
  };
}
