import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SessionRouter, type Owner } from '../../src/sessionRouter';
import { FakeTransport, tick } from './fakes';

const result = (sessionId: string) => ({ sessionId, turnId: `${sessionId}:1`, stopReason: 'end_turn' as const, text: '', toolCalls: [] });

test('each front end gets the events and approvals of its own sessions', async () => {
  const router = new SessionRouter();
  const inner = new FakeTransport();
  const view: Owner = { frontEnd: 'view' };
  const chat: Owner = { frontEnd: 'native' };
  const first = router.transport(view, inner).chat({ prompt: 'a' }, new AbortController().signal);
  await tick();
  assert.equal(router.ownerOf('s_1'), view, 'the first event of a new session belongs to the start that waits for it');
  inner.last.resolve(result('s_1'));
  await first;
  const second = router.transport(chat, inner).chat({ prompt: 'b' }, new AbortController().signal);
  await tick();
  assert.equal(router.ownerOf('s_2'), chat);
  assert.equal(router.ownerOf('s_1'), view);
  inner.last.resolve(result('s_2'));
  await second;
  assert.equal(router.ownerOf('s_9'), undefined, 'nobody waits: an unknown session is nobody\'s');
});

test('two new sessions start one after the other, so the first event is never ambiguous', async () => {
  const router = new SessionRouter();
  const inner = new FakeTransport();
  const view: Owner = { frontEnd: 'view' };
  const chat: Owner = { frontEnd: 'native' };
  void router.transport(view, inner).chat({ prompt: 'a' }, new AbortController().signal);
  void router.transport(chat, inner).chat({ prompt: 'b' }, new AbortController().signal);
  await tick();
  assert.equal(inner.chats.length, 1, 'the second start waits for the first session\'s id');
  assert.equal(router.ownerOf('s_1'), view);
  await tick();
  await tick();
  assert.equal(inner.chats.length, 2, 'then the second starts');
  assert.equal(router.ownerOf('s_2'), chat);
});

test('a continued session belongs to whoever continues it; a restart forgets them all', () => {
  const router = new SessionRouter();
  const inner = new FakeTransport();
  const later: Owner = { frontEnd: 'native' };
  void router.transport(later, inner).chat({ prompt: 'again', sessionId: 's_7' }, new AbortController().signal);
  assert.equal(router.ownerOf('s_7'), later);
  assert.equal(router.knows('s_7'), true);
  router.reset();
  assert.equal(router.knows('s_7'), false);
});

test('a start that fails lets the next one go', async () => {
  const router = new SessionRouter();
  const inner = new FakeTransport();
  const view: Owner = { frontEnd: 'view' };
  const failing = router.transport(view, inner).chat({ prompt: 'a' }, new AbortController().signal);
  const next = router.transport({ frontEnd: 'native' }, inner).chat({ prompt: 'b' }, new AbortController().signal);
  await tick();
  inner.last.reject(new Error('server gone'));
  await assert.rejects(failing);
  await tick();
  await tick();
  assert.equal(inner.chats.length, 2);
  inner.last.resolve(result('s_3'));
  await next;
});
