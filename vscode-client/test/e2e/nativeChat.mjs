// VS Code's own Chat view in code-server 1.139 (no Copilot, offline), driven as a person would:
// "Gatehouse: Open in VS Code Chat" opens it with `@gatehouse` in the input and the Gatehouse
// model selected; a request is typed and sent with Enter; Gatehouse's approval buttons are
// `.chat-command-button .monaco-button` in the response. Never click "Sign in to use Copilot".
import { runCommand, waitFor } from './harness.mjs';

const INPUT = '.interactive-input-editor .monaco-editor';

export async function openNativeChat(page) {
  await runCommand(page, 'Gatehouse: Open in VS Code Chat');
  await page.locator(INPUT).first().waitFor({ state: 'visible', timeout: 20000 });
}

/** The newest response of the chat (its container; `.chat-response-loading` while it runs). */
export function lastResponse(page) {
  return page.locator('.interactive-item-container.interactive-response').last();
}

/** The newest response's text (code blocks are editors, which show spaces as U+00A0). */
export async function responseText(page) {
  return ((await lastResponse(page).innerText().catch(() => '')) ?? '').replace(/\u00a0/g, ' ');
}

export async function responseDone(page) {
  const response = lastResponse(page);
  return await response.count() > 0 && !(await response.getAttribute('class') ?? '').includes('chat-response-loading');
}

/** Types `prompt` after the sticky `@gatehouse` and sends it; resolves once its response is there. */
export async function askNative(page, prompt) {
  const before = await page.locator('.interactive-item-container.interactive-response').count();
  const input = page.locator(INPUT).first();
  await input.click();
  await page.keyboard.press('End');
  await page.keyboard.type(prompt);
  const typed = await input.innerText();
  if (!/@gatehouse/.test(typed)) throw new Error(`the chat input lost @gatehouse: ${JSON.stringify(typed)}`);
  await page.keyboard.press('Enter');
  await waitFor('the Chat view to start a response', async () =>
    await page.locator('.interactive-item-container.interactive-response').count() > before, { timeout: 20000 });
}

/** A Gatehouse button in the newest response, by its title. */
export function responseButton(page, title) {
  return lastResponse(page).locator('.chat-command-button .monaco-button', { hasText: title }).first();
}

/** The titles of the Gatehouse buttons in the newest response, in order. */
export async function responseButtons(page) {
  return (await lastResponse(page).locator('.chat-command-button .monaco-button').allInnerTexts()).map((t) => t.trim());
}
