/**
 * Which Python runs the server: the `gatehouse.server.pythonCommand` setting, then the Python
 * extension's active environment, then `python3` on PATH. A candidate counts only if it can
 * `import server`. The sources are injected, so the order is unit-tested without VS Code.
 */
import { spawn } from 'node:child_process';

export type InterpreterSource = 'setting' | 'python extension' | 'PATH';

export interface Attempt {
  source: InterpreterSource;
  command: string;
  ok: boolean;
  detail: string;
}

export interface ProbeResult {
  ok: boolean;
  /** What the probe printed (the server package's path) or why it failed. */
  detail: string;
}

export interface InterpreterSources {
  /** The `gatehouse.server.pythonCommand` setting ('' when unset). */
  setting(): string;
  /** The Python extension's active interpreter, if the extension is installed and has one. */
  pythonExtension(): Promise<string | undefined>;
  /** Commands looked up on PATH, in order. */
  pathCommands: readonly string[];
  probe(command: string): Promise<ProbeResult>;
}

export type InterpreterResult =
  | { ok: true; command: string; source: InterpreterSource; attempts: Attempt[] }
  | { ok: false; attempts: Attempt[]; message: string };

export async function findInterpreter(sources: InterpreterSources): Promise<InterpreterResult> {
  const attempts: Attempt[] = [];
  const candidates: Array<[InterpreterSource, () => Promise<string | undefined>]> = [
    ['setting', () => Promise.resolve(sources.setting().trim() || undefined)],
    ['python extension', () => sources.pythonExtension().catch(() => undefined)],
    ...sources.pathCommands.map((c): [InterpreterSource, () => Promise<string | undefined>] => ['PATH', () => Promise.resolve(c)]),
  ];
  const seen = new Set<string>();
  for (const [source, get] of candidates) {
    const command = await get();
    if (command === undefined || seen.has(command)) continue;
    seen.add(command);
    let result: ProbeResult;
    try {
      result = await sources.probe(command);
    } catch (error) {
      result = { ok: false, detail: String(error) };
    }
    attempts.push({ source, command, ok: result.ok, detail: result.detail });
    if (result.ok) return { ok: true, command, source, attempts };
  }
  const tried = attempts.map((a) => `${a.command} (${a.source})`).join(', ') || 'nothing';
  return {
    ok: false,
    attempts,
    message:
      `Gatehouse could not find a Python that has the Gatehouse server installed (tried ${tried}). ` +
      'Set "gatehouse.server.pythonCommand" to the python of the environment where Gatehouse is installed ' +
      '(for example /path/to/gatehouse/.venv/bin/python), or select that interpreter in the Python extension.',
  };
}

/** Runs `<python> -c "import server"` in `cwd` (a folder with no `server` package of its own). */
export function probeImportServer(command: string, cwd: string, timeoutMs = 20_000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let output = '';
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (result: ProbeResult): void => {
      clearTimeout(timer);
      resolve(result); // later calls are no-ops
    };
    try {
      const child = spawn(command, ['-c', 'import server, sys; print(server.__file__, sys.version.split()[0])'], {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
      timer = setTimeout(() => {
        child.kill();
        finish({ ok: false, detail: `no answer within ${timeoutMs / 1000} s` });
      }, timeoutMs);
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('error', (error) => finish({ ok: false, detail: error.message }));
      child.on('close', (code) => {
        const lines = output.trim().split(/\r?\n/);
        finish({ ok: code === 0, detail: (code === 0 ? lines[0] : lines[lines.length - 1]) || `exit code ${String(code)}` });
      });
    } catch (error) {
      finish({ ok: false, detail: String(error) });
    }
  });
}

export function defaultPathCommands(platform: NodeJS.Platform): readonly string[] {
  return platform === 'win32' ? ['python3', 'python', 'py'] : ['python3'];
}
