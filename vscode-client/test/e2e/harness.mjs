// Harness for the VS Code end-to-end layer: a real VS Code (code-server) in a real headless
// Chromium driven by playwright-core. Everything it starts runs with HOME and XDG_* in a temporary
// folder, as its own process group, and is stopped by pid; `assertNoLeftovers` proves it.
//
// Paths come from the environment or from the defaults that scripts/setup-vscode-e2e.sh uses:
//   GATEHOUSE_E2E_CACHE    cache of Node 24 + code-server (default ~/.cache/gatehouse-e2e)
//   GATEHOUSE_CODE_SERVER  code-server launcher (default $GATEHOUSE_E2E_CACHE/bin/code-server)
//   GATEHOUSE_CHROMIUM     browser binary (default /usr/bin/chromium)
//   GATEHOUSE_E2E_KEEP=1   keep the temporary folder (logs, workspace) after the run
//   GATEHOUSE_E2E_RESULTS  where screenshots and logs go (default vscode-client/test-results)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const CLIENT_DIR = path.resolve(HERE, '..', '..');
export const REPO_DIR = path.resolve(CLIENT_DIR, '..');
export const RESULTS_DIR = process.env.GATEHOUSE_E2E_RESULTS || path.join(CLIENT_DIR, 'test-results');

const CACHE = process.env.GATEHOUSE_E2E_CACHE || path.join(os.homedir(), '.cache', 'gatehouse-e2e');
export const CODE_SERVER = process.env.GATEHOUSE_CODE_SERVER || path.join(CACHE, 'bin', 'code-server');
export const CHROMIUM = process.env.GATEHOUSE_CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage', '--no-default-browser-check', '--password-store=basic',
  // Without these Chromium starts chrome_crashpad_handler processes that leave its process group.
  '--disable-crash-reporter', '--disable-breakpad',
];
const SETUP_HINT = 'run `bash scripts/setup-vscode-e2e.sh` first';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The time since `start` in seconds, as text. */
export const since = (start) => `${((Date.now() - start) / 1000).toFixed(1)}s`;

export function log(message) {
  process.stderr.write(`[e2e ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Thrown by a probe to stop waiting at once (the page shows an error, a process died). */
export class Fatal extends Error {}

/** Poll `probe` until it returns a truthy value; throw `what` on timeout. */
export async function waitFor(what, probe, { timeout = 20000, interval = 200 } = {}) {
  const deadline = Date.now() + timeout;
  let lastError;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      if (error instanceof Fatal) throw new Error(`while waiting for ${what}: ${error.message}`);
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${lastError ? `: ${lastError.message}` : ''}`);
    }
    await sleep(interval);
  }
}

export function checkPrerequisites() {
  for (const [what, file] of [['code-server', CODE_SERVER], ['chromium', CHROMIUM]]) {
    if (!fs.existsSync(file)) throw new Error(`${what} not found at ${file}: ${SETUP_HINT}`);
  }
}

/** The .vsix to test: $GATEHOUSE_VSIX, else the newest vscode-client/*.vsix. */
export function findVsix() {
  if (process.env.GATEHOUSE_VSIX) {
    const file = path.resolve(process.env.GATEHOUSE_VSIX);
    if (!fs.existsSync(file)) throw new Error(`GATEHOUSE_VSIX=${file} does not exist`);
    return file;
  }
  const found = fs.readdirSync(CLIENT_DIR)
    .filter((name) => name.endsWith('.vsix'))
    .map((name) => path.join(CLIENT_DIR, name))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (found.length === 0) {
    throw new Error(`no .vsix in ${CLIENT_DIR}: build it with \`cd vscode-client && npm run package\` or set GATEHOUSE_VSIX`);
  }
  return found[0];
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A temporary folder holding everything one run writes: a fake home, XDG folders, code-server's
 * user data and extensions, Chromium's profile, logs and the workspace the test opens.
 */
export function makeSandbox(prefix = 'gatehouse-e2e-') {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  const dirs = {
    root,
    home: path.join(root, 'home'),
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    chromeProfile: path.join(root, 'chromium-profile'),
    logs: path.join(root, 'logs'),
    workspace: path.join(root, 'workspace'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  const xdg = {
    XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
    XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(dirs.home, '.cache'),
    XDG_STATE_HOME: path.join(dirs.home, '.local', 'state'),
    XDG_RUNTIME_DIR: path.join(root, 'runtime'),
  };
  for (const dir of Object.values(xdg)) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const env = { ...process.env, HOME: dirs.home, ...xdg, GATEHOUSE_E2E_SANDBOX: root };
  // Settings that keep the workbench quiet and deterministic: no welcome page, no tips, no
  // Copilot chat panel opening by itself, no update or telemetry traffic.
  writeJson(path.join(dirs.userData, 'User', 'settings.json'), {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'chat.commandCenter.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'security.workspace.trust.enabled': false,
    'window.commandCenter': false,
  });
  return { ...dirs, env };
}

/**
 * Add `values` to the user settings. code-server is a remote window, where settings of `machine`
 * scope (such as gatehouse.server.pythonCommand) are read from the remote machine's settings, so
 * they go into both User/settings.json and Machine/settings.json.
 */
export function addUserSettings(sandbox, values) {
  for (const scope of ['User', 'Machine']) {
    const file = path.join(sandbox.userData, scope, 'settings.json');
    const current = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
    writeJson(file, { ...current, ...values });
  }
}

export function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** Run a command to completion; resolve with its output, reject on a non-zero exit. */
function run(command, args, { env, logFile, timeout = 120000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk) => { output += chunk; };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (logFile) fs.writeFileSync(logFile, output);
      if (code === 0) resolve(output);
      else reject(new Error(`${path.basename(command)} ${args.join(' ')} exited ${code ?? signal}:\n${output}`));
    });
  });
}

/** A child started in its own process group, so that stopping it stops all it started. */
class Group {
  constructor(name, child) {
    this.name = name;
    this.child = child;
    this.pid = child.pid;
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  alive() {
    try {
      process.kill(-this.pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGTERM to the group, SIGKILL after `grace` ms, then wait until no member is left. */
  async stop(grace = 5000) {
    if (!this.alive()) return;
    const start = Date.now();
    try { process.kill(-this.pid, 'SIGTERM'); } catch { /* already gone */ }
    const deadline = Date.now() + grace;
    while (this.alive() && Date.now() < deadline) await sleep(50);
    if (this.alive()) {
      log(`${this.name} (pgid ${this.pid}) ignored SIGTERM; SIGKILL`);
      try { process.kill(-this.pid, 'SIGKILL'); } catch { /* already gone */ }
      await waitFor(`${this.name} to exit`, () => !this.alive(), { timeout: 5000 });
    }
    log(`${this.name} (pgid ${this.pid}) stopped in ${since(start)}`);
  }
}

function startGroup(name, command, args, { env, logFile }) {
  const out = fs.openSync(logFile, 'a');
  const child = spawn(command, args, { env, detached: true, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  if (!child.pid) throw new Error(`could not start ${name}: ${command}`);
  log(`${name} started, pid ${child.pid}`);
  return new Group(name, child);
}

export async function installExtension(sandbox, vsix) {
  const start = Date.now();
  await run(CODE_SERVER, [
    '--user-data-dir', sandbox.userData, '--extensions-dir', sandbox.extensions,
    '--install-extension', vsix, '--force',
  ], { env: sandbox.env, logFile: path.join(sandbox.logs, 'install-extension.log') });
  log(`installed ${path.basename(vsix)} in ${since(start)}`);
}

export async function startCodeServer(sandbox, folder = sandbox.workspace) {
  const port = await freePort();
  const group = startGroup('code-server', CODE_SERVER, [
    '--user-data-dir', sandbox.userData, '--extensions-dir', sandbox.extensions,
    '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
    '--disable-getting-started-override',
    folder,
  ], { env: sandbox.env, logFile: path.join(sandbox.logs, 'code-server.log') });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor('code-server /healthz', async () => {
      if (!group.alive()) throw new Error(`code-server exited; see ${sandbox.logs}/code-server.log`);
      const response = await fetch(`${url}/healthz`);
      return response.ok;
    }, { timeout: 30000 });
  } catch (error) {
    await group.stop();
    throw error;
  }
  return { group, port, url, folder };
}

export async function startChromium(sandbox) {
  const logFile = path.join(sandbox.logs, 'chromium.log');
  const group = startGroup('chromium', CHROMIUM, [
    ...CHROMIUM_FLAGS, '--headless', '--remote-debugging-port=0', '--remote-debugging-address=127.0.0.1',
    `--user-data-dir=${sandbox.chromeProfile}`, '--window-size=1400,900', 'about:blank',
  ], { env: sandbox.env, logFile });
  let browser;
  try {
    const endpoint = await waitFor('Chromium DevTools endpoint', () => {
      if (!group.alive()) throw new Error(`chromium exited; see ${logFile}`);
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(fs.readFileSync(logFile, 'utf8'));
      return match?.[1];
    }, { timeout: 30000, interval: 100 });
    browser = await chromium.connectOverCDP(endpoint);
  } catch (error) {
    await group.stop();
    throw error;
  }
  return { group, browser };
}

/** Open the workbench on `folder` and wait until it is interactive. */
export async function openWorkbench(browser, server, { width = 1400, height = 900 } = {}) {
  const context = browser.contexts()[0] ?? await browser.newContext();
  const page = await context.newPage();
  await page.setViewportSize({ width, height });
  const start = Date.now();
  await page.goto(`${server.url}/?folder=${encodeURIComponent(server.folder)}`, { waitUntil: 'domcontentloaded' });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
  await page.locator('.part.statusbar').waitFor({ state: 'visible', timeout: 60000 });
  // The explorer shows the folder once the remote file system answers.
  await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 60000 }).catch(() => {});
  log(`workbench up in ${since(start)}`);
  return page;
}

/** Run a command from the command palette (F1), by the title it shows. */
export async function runCommand(page, title, { timeout = 20000 } = {}) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  // Commands contributed by extensions appear once the extension host has scanned them; an open
  // palette does not refresh its list, so each try closes it and opens it again.
  await waitFor(`the command palette to offer "${title}"`, async () => {
    if (await input.isVisible()) {
      await page.keyboard.press('Escape');
      await input.waitFor({ state: 'hidden', timeout: 3000 });
    }
    await page.locator('.monaco-workbench').focus().catch(() => {});
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible', timeout: 3000 });
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    await row.waitFor({ state: 'visible', timeout: 2000 });
    return true;
  }, { timeout, interval: 500 });
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
}

/** The frame (a webview's inner document) that contains `selector`. */
export async function findFrame(page, selector, { timeout = 30000 } = {}) {
  return waitFor(`a frame containing ${selector}`, async () => {
    for (const frame of page.frames()) {
      if (frame === page.mainFrame() || frame.isDetached()) continue;
      if (await frame.$(selector).catch(() => null)) return frame;
    }
    return null;
  }, { timeout, interval: 250 });
}

export async function screenshot(page, name) {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/**
 * Copy the logs of a run (code-server's, and every extension host log, e.g. the Gatehouse output
 * channel) into test-results/logs/ and return the tail of those whose path matches `focus`.
 */
export function collectLogs(sandbox, focus = /gatehouse/i, tailLines = 40) {
  const target = path.join(RESULTS_DIR, 'logs');
  fs.rmSync(target, { recursive: true, force: true });
  fs.mkdirSync(target, { recursive: true });
  const tails = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.log')) {
        const relative = path.relative(sandbox.root, file);
        const copy = path.join(target, relative.replace(/[\/]/g, '__'));
        fs.copyFileSync(file, copy);
        if (focus.test(relative)) {
          const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
          tails.push(`--- ${relative} (last ${Math.min(tailLines, lines.length)} lines; copy in ${copy})\n${lines.slice(-tailLines).join('\n')}`);
        }
      }
    }
  };
  for (const dir of [sandbox.logs, path.join(sandbox.userData, 'logs')]) if (fs.existsSync(dir)) walk(dir);
  return tails.join('\n');
}

/**
 * Processes that belong to this run and are still there: their environment carries the sandbox
 * marker, or their command line names the sandbox folder (Chromium rewrites its environment block
 * for its process titles, but its helpers name the profile folder).
 */
export function processesInSandbox(sandbox) {
  const found = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`, 'utf8');
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      if (environ.includes(`GATEHOUSE_E2E_SANDBOX=${sandbox.root}\0`) || cmdline.includes(`${sandbox.root}/`)) {
        found.push({ pid: Number(entry), cmdline });
      }
    } catch { /* gone or not ours */ }
  }
  return found;
}

export function assertNoLeftovers(sandbox) {
  const left = processesInSandbox(sandbox);
  if (left.length > 0) {
    throw new Error(`processes left behind:\n${left.map((p) => `  ${p.pid} ${p.cmdline.slice(0, 160)}`).join('\n')}`);
  }
}

/**
 * Start code-server with `vsix` installed and a headless Chromium on its workbench.
 * `prepare(sandbox)` runs before code-server starts (write the workspace and its settings there).
 * Returns { sandbox, server, chrome, page, stop }; `stop()` is safe to call more than once.
 */
export async function launch({ vsix, prepare }) {
  checkPrerequisites();
  const sandbox = makeSandbox();
  log(`sandbox ${sandbox.root}`);
  const session = { sandbox, server: null, chrome: null, page: null };
  let stopped = false;
  session.stop = async () => {
    if (stopped) return;
    stopped = true;
    const errors = [];
    // Close the page first so the extension host shuts down its children cleanly.
    if (session.page) await session.page.close({ runBeforeUnload: false }).catch(() => {});
    if (session.chrome) {
      await session.chrome.browser.close().catch(() => {});
      await session.chrome.group.stop().catch((error) => errors.push(error));
    }
    if (session.server) await session.server.group.stop().catch((error) => errors.push(error));
    // The extension may have started a language server of its own in a process group of its
    // own; it carries the sandbox marker in its environment. Give it a moment, then end it.
    await waitFor('the extension\'s children to exit', () => processesInSandbox(sandbox).length === 0,
      { timeout: 5000 }).catch(() => {});
    for (const { pid, cmdline } of processesInSandbox(sandbox)) {
      log(`ending leftover pid ${pid}: ${cmdline.slice(0, 120)}`);
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    try { assertNoLeftovers(sandbox); } catch (error) { errors.push(error); }
    if (process.env.GATEHOUSE_E2E_KEEP === '1') log(`kept ${sandbox.root}`);
    else fs.rmSync(sandbox.root, { recursive: true, force: true });
    if (errors.length) throw errors[0];
  };
  try {
    if (prepare) await prepare(sandbox);
    await installExtension(sandbox, vsix);
    session.server = await startCodeServer(sandbox);
    session.chrome = await startChromium(sandbox);
    session.page = await openWorkbench(session.chrome.browser, session.server);
  } catch (error) {
    await session.stop().catch((stopError) => log(`while stopping: ${stopError.message}`));
    throw error;
  }
  return session;
}
