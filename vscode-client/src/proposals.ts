/**
 * Proposed edits in VS Code's own diff editor: "Open diff" on an approval card shows the file as it
 * is now (left, read-only) and the proposal (right, editable). When the user accepts, whatever the
 * right side holds then (saved or not) is sent back as their version of the file
 * (`ToolConfirmResult.edits`), and the server writes that instead. Both sides live in memory
 * (two file system providers): nothing is written to the workspace from here.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { applyDiff } from './diffs';
import type { ProposedEdit, UserEdit } from './protocol';

export const ORIGINAL_SCHEME = 'gatehouse-original';
export const PROPOSAL_SCHEME = 'gatehouse-proposal';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A file's key: its approval (the URI's query) and its path. */
const key = (uri: vscode.Uri): string => `${uri.query}:${uri.path}`;

/** Files in memory, by approval and path. */
export class MemoryFs implements vscode.FileSystemProvider {
  private readonly files = new Map<string, { data: Uint8Array; mtime: number }>();
  private readonly changes = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changes.event;

  set(uri: vscode.Uri, text: string): void {
    this.files.set(key(uri), { data: encoder.encode(text), mtime: Date.now() });
  }

  text(uri: vscode.Uri): string | undefined {
    const file = this.files.get(key(uri));
    return file === undefined ? undefined : decoder.decode(file.data);
  }

  /** Forget every file of one approval. */
  forget(approvalId: string): void {
    for (const name of [...this.files.keys()]) if (name.startsWith(`${approvalId}:`)) this.files.delete(name);
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const file = this.files.get(key(uri));
    if (file !== undefined) return { type: vscode.FileType.File, ctime: file.mtime, mtime: file.mtime, size: file.data.length };
    if ([...this.files.keys()].some((name) => name.startsWith(`${key(uri).replace(/\/$/, '')}/`))) {
      return { type: vscode.FileType.Directory, ctime: 0, mtime: 0, size: 0 };
    }
    throw vscode.FileSystemError.FileNotFound(uri);
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(): void {}

  readFile(uri: vscode.Uri): Uint8Array {
    const file = this.files.get(key(uri));
    if (file === undefined) throw vscode.FileSystemError.FileNotFound(uri);
    return file.data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    this.files.set(key(uri), { data: content, mtime: Date.now() });
    this.changes.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  delete(uri: vscode.Uri): void {
    this.files.delete(key(uri));
  }

  rename(): void {
    throw vscode.FileSystemError.NoPermissions('proposals cannot be renamed');
  }
}

interface OpenedDiff {
  path: string;
  left: vscode.Uri;
  right: vscode.Uri;
  /** The proposal as the server made it (line ends as \n). */
  proposal: string;
  /** A proposal the user may change (not a deletion). */
  editable: boolean;
}

const lf = (text: string): string => text.replace(/\r\n/g, '\n');

/** The diff editors of the pending approvals. */
export class ProposalEditors implements vscode.Disposable {
  private readonly approvals = new Map<string, { edits: ProposedEdit[]; opened: Map<string, OpenedDiff> }>();

  constructor(
    private readonly originals: MemoryFs,
    private readonly proposals: MemoryFs,
    private readonly folder: () => string,
  ) {}

  /** Remember an approval's edits (before its card is shown). */
  register(approvalId: string, edits: ProposedEdit[] | undefined): void {
    if (edits !== undefined && edits.length > 0) this.approvals.set(approvalId, { edits, opened: new Map() });
  }

  /** Open VS Code's diff editor on one file of a pending approval. */
  async open(approvalId: string, file: string): Promise<void> {
    const entry = this.approvals.get(approvalId);
    const edit = entry?.edits.find((e) => e.path === file);
    if (entry === undefined || edit === undefined) throw new Error('that approval is no longer pending');
    if (file.split('/').includes('..') || path.isAbsolute(file)) throw new Error(`not a workspace path: ${file}`);
    let opened = entry.opened.get(file);
    if (opened === undefined) {
      const current = edit.action === 'create' ? '' : lf((await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(this.folder(), file)))).getText());
      const proposal = edit.action === 'delete' ? '' : applyDiff(current, edit.diff);
      const editable = edit.action !== 'delete';
      // The approval is the query: the editors' breadcrumbs show the file's own path.
      const left = vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: `/${file}`, query: `${approvalId}-current` });
      const right = editable
        ? vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${file}`, query: approvalId })
        : vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: `/${file}`, query: `${approvalId}-deleted` });
      this.originals.set(left, current);
      (editable ? this.proposals : this.originals).set(right, proposal);
      opened = { path: file, left, right, proposal, editable };
      entry.opened.set(file, opened);
    }
    const title = `${file} ↔ Gatehouse proposal${opened.editable ? ' (editable)' : ''}`;
    await vscode.commands.executeCommand('vscode.diff', opened.left, opened.right, title, { preview: false });
  }

  /** The files whose proposal the user changed, with the text the right side holds now. */
  collect(approvalId: string): Promise<UserEdit[]> {
    const entry = this.approvals.get(approvalId);
    if (entry === undefined) return Promise.resolve([]);
    const changed: UserEdit[] = [];
    for (const opened of entry.opened.values()) {
      if (!opened.editable) continue;
      const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === opened.right.toString());
      const text = document?.getText() ?? this.proposals.text(opened.right) ?? opened.proposal;
      if (lf(text) !== opened.proposal) changed.push({ path: opened.path, content: text });
    }
    return Promise.resolve(changed);
  }

  /** Close the approval's diff editors (without asking to save) and forget its proposals. */
  async release(approvalId: string): Promise<void> {
    const entry = this.approvals.get(approvalId);
    this.approvals.delete(approvalId);
    if (entry === undefined) return;
    const rights = new Set([...entry.opened.values()].map((o) => o.right.toString()));
    for (const document of vscode.workspace.textDocuments) {
      // Saving writes to memory only; it spares the user a "save changes?" question on close.
      if (rights.has(document.uri.toString()) && document.isDirty) await document.save();
    }
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && rights.has(tab.input.modified.toString()));
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
    this.originals.forget(`${approvalId}-current`);
    this.originals.forget(`${approvalId}-deleted`);
    this.proposals.forget(approvalId);
  }

  dispose(): void {
    for (const id of [...this.approvals.keys()]) void this.release(id);
  }
}
