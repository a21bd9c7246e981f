/**
 * The status bar item: model, engine (backend) and isolation level, in the warning colour when
 * code would run below strong isolation or with permissions bypassed; while approvals wait (in
 * the Gatehouse view or VS Code's Chat view) it says so and a click opens the card.
 * `formatStatus` is pure.
 */
import * as vscode from 'vscode';
import type { StatusResult } from './protocol';

export type ServerState = 'starting' | 'running' | 'stopped' | 'error';

export interface StatusInfo {
  state: ServerState;
  status?: StatusResult;
  /** The `bypassPermissions` the server was started with. */
  bypass: boolean;
  /** Why the server is not running. */
  detail?: string;
  /** Approvals waiting for an answer, in either front end. */
  waiting?: number;
}

export interface StatusView {
  text: string;
  tooltip: string;
  warning: boolean;
  error: boolean;
  command: string;
}

function shortModel(model: string | null | undefined): string {
  if (model === null || model === undefined || model === '') return 'default model';
  const parts = model.split(/[\\/]/).filter((p) => p !== '');
  return parts[parts.length - 1] ?? model;
}

export function formatStatus(info: StatusInfo): StatusView {
  const base = formatServer(info);
  const waiting = info.waiting ?? 0;
  if (waiting === 0) return base;
  const what = waiting === 1 ? '1 approval waiting' : `${waiting} approvals waiting`;
  return {
    text: `$(bell-dot) Gatehouse: ${what}`,
    tooltip: `Gatehouse is waiting for your approval: nothing runs until you answer. Click to open it.\n\n${base.tooltip}`,
    warning: true,
    error: base.error,
    command: 'gatehouse.showApproval',
  };
}

function formatServer(info: StatusInfo): StatusView {
  const { state, status, bypass } = info;
  if (state !== 'running' || status === undefined) {
    const label = state === 'starting' ? '$(sync~spin) Gatehouse: starting' : '$(error) Gatehouse: not running';
    const tooltip = state === 'starting' ? 'Starting the Gatehouse server…' : `Gatehouse server is not running. ${info.detail ?? ''} Click to show the logs.`;
    return { text: label, tooltip: tooltip.trim(), warning: false, error: state === 'error', command: state === 'starting' ? 'gatehouse.openChat' : 'gatehouse.showLogs' };
  }
  const level = status.sandbox.level;
  const weak = level !== 'strong';
  const model = shortModel(status.model);
  const isolation = bypass ? 'bypass' : level;
  const icon = bypass || weak ? '$(warning)' : '$(shield)';
  const lines = [
    `Gatehouse ${status.version}`,
    `Model: ${status.model ?? 'default model'}`,
    `Engine: ${status.backend}`,
    `Isolation: ${level}, network ${status.sandbox.network ? 'on' : 'off'}` +
      (status.sandbox.minLevel !== undefined ? ` (code below ${status.sandbox.minLevel} is refused)` : ''),
  ];
  if (bypass) lines.push('Permissions are BYPASSED: tool calls run without asking and without the sandbox.');
  else if (weak) lines.push(`Code runs below strong isolation on this machine${status.sandbox.reason ? `: ${status.sandbox.reason}` : '.'}`);
  lines.push(`Workspace: ${status.workspace}`, 'Click to open the chat.');
  return {
    text: `${icon} ${model} · ${status.backend} · ${isolation}`,
    tooltip: lines.join('\n'),
    warning: bypass || weak,
    error: false,
    command: 'gatehouse.openChat',
  };
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('gatehouse.status', vscode.StatusBarAlignment.Right, 100);
  private last: StatusInfo = { state: 'starting', bypass: false };
  private waiting = 0;

  constructor() {
    this.item.name = 'Gatehouse';
    this.show({ state: 'starting', bypass: false });
  }

  setWaiting(count: number): void {
    this.waiting = count;
    this.show(this.last);
  }

  show(info: StatusInfo): void {
    this.last = info;
    const view = formatStatus({ ...info, waiting: this.waiting });
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.command;
    this.item.backgroundColor = view.error
      ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : view.warning
        ? new vscode.ThemeColor('statusBarItem.warningBackground')
        : undefined;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
