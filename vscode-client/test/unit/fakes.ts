/** Recording fakes of the small UI and transport interfaces the glue modules take. */
import type { ApprovalAnswer, ApprovalOutcome, ApprovalUi, ApprovalView, CancellationLike, Disposable } from '../../src/approvals';
import type { ChatTransport, ChatUi, ToolEndView, ToolStartView } from '../../src/chatSession';
import type { CancelResult, ChatParams, ChatResult } from '../../src/protocol';

export type Call = [string, ...unknown[]];

export class FakeChatUi implements ChatUi {
  calls: Call[] = [];
  content = '';
  reasoning = '';
  tools = new Map<string, { start: ToolStartView; output: string; end?: ToolEndView }>();
  running = false;
  status = '';
  error = '';

  setRunning(running: boolean): void {
    this.running = running;
    this.calls.push(['setRunning', running]);
  }
  addUserMessage(text: string): void {
    this.calls.push(['user', text]);
  }
  beginTurn(): void {
    this.content = '';
    this.calls.push(['beginTurn']);
  }
  appendContent(text: string): void {
    this.content += text;
  }
  appendReasoning(text: string): void {
    this.reasoning += text;
  }
  previewToolArgs(index: number, text: string): void {
    this.calls.push(['toolArgs', index, text]);
  }
  startTool(tool: ToolStartView): void {
    this.tools.set(tool.id, { start: tool, output: '' });
    this.calls.push(['startTool', tool.id]);
  }
  appendToolOutput(id: string, text: string): void {
    const tool = this.tools.get(id);
    if (tool) tool.output += text;
  }
  endTool(end: ToolEndView): void {
    const tool = this.tools.get(end.id);
    if (tool) tool.end = end;
    this.calls.push(['endTool', end.id, end.status]);
  }
  setStatus(text: string): void {
    this.status = text;
  }
  showError(text: string): void {
    this.error = text;
    if (text !== '') this.calls.push(['error', text]);
  }
  endTurn(note: string): void {
    this.calls.push(['endTurn', note]);
  }
  clear(): void {
    this.content = '';
    this.tools.clear();
    this.calls.push(['clear']);
  }
  count(name: string): number {
    return this.calls.filter((c) => c[0] === name).length;
  }
}

/** A transport whose `chat` stays pending until the test resolves or rejects it. */
export class FakeTransport implements ChatTransport {
  chats: Array<{ params: ChatParams; signal: AbortSignal; resolve(r: ChatResult): void; reject(e: unknown): void }> = [];
  cancels: string[] = [];
  cancelError: Error | undefined = undefined;

  chat(params: ChatParams, signal: AbortSignal): Promise<ChatResult> {
    return new Promise((resolve, reject) => this.chats.push({ params, signal, resolve, reject }));
  }
  cancel(sessionId: string): Promise<CancelResult> {
    this.cancels.push(sessionId);
    return this.cancelError === undefined ? Promise.resolve({ cancelled: true }) : Promise.reject(this.cancelError);
  }
  get last() {
    const chat = this.chats[this.chats.length - 1];
    if (chat === undefined) throw new Error('no chat request');
    return chat;
  }
}

export class FakeToken implements CancellationLike {
  isCancellationRequested = false;
  private listeners: Array<() => unknown> = [];
  onCancellationRequested(listener: () => unknown): Disposable {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel(): void {
    this.isCancellationRequested = true;
    for (const l of [...this.listeners]) l();
  }
}

function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export class FakeApprovalUi implements ApprovalUi {
  visible: boolean;
  cards = new Map<string, { view: ApprovalView; answer: ReturnType<typeof deferred<ApprovalAnswer>> }>();
  closed: Array<[string, ApprovalOutcome]> = [];
  modals: Array<{ view: ApprovalView; answer: ReturnType<typeof deferred<string | undefined>> }> = [];
  failCard = false;
  private listeners: Array<(visible: boolean) => void> = [];

  constructor(visible: boolean) {
    this.visible = visible;
  }
  isVisible(): boolean {
    return this.visible;
  }
  onDidChangeVisibility(listener: (visible: boolean) => void): Disposable {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  setVisible(visible: boolean): void {
    this.visible = visible;
    for (const l of [...this.listeners]) l(visible);
  }
  showCard(view: ApprovalView): Promise<ApprovalAnswer> {
    if (this.failCard) throw new Error('webview is gone');
    const answer = deferred<ApprovalAnswer>();
    this.cards.set(view.approvalId, { view, answer });
    return answer.promise;
  }
  closeCard(approvalId: string, outcome: ApprovalOutcome): void {
    this.cards.delete(approvalId);
    this.closed.push([approvalId, outcome]);
  }
  showModal(view: ApprovalView): Promise<string | undefined> {
    const answer = deferred<string | undefined>();
    this.modals.push({ view, answer });
    return answer.promise;
  }
  card(id: string) {
    const card = this.cards.get(id);
    if (card === undefined) throw new Error(`no card ${id}`);
    return card;
  }
}

/** Lets pending promise callbacks run. */
export const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
