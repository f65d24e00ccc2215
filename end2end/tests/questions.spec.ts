// Questions a tool asks the human (QUESTIONS.md §2, REACH.md §1): the
// question card's form, generated from the tool's schema, answers with
// JavaScript on and off; Decline; a URL question shows its link; the inbox
// ("Waiting for you") lists questions beside approvals.
import { test, expect, startQuestionAgent, Agent } from './agent';
import * as fs from 'node:fs';

/** `POST /conversations`: the question it waits on. */
async function ask(base: string, message: string): Promise<{ id: string; uuid: string }> {
  const r = await fetch(`${base}/conversations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  });
  expect(r.status).toBe(201);
  const b = await r.json();
  expect(b.result.waiting_input).toBe(true);
  return { id: b.conversation.id, uuid: b.result.question.uuid };
}

async function lastReply(base: string, id: string): Promise<string> {
  const c = (await (await fetch(`${base}/conversations/${id}`)).json()).conversation;
  const replies = c.messages.filter((m: any) => m.role === 'assistant' && m.content);
  return replies.length ? replies[replies.length - 1].content : '';
}

async function withAgent(era: string, body: (a: Agent) => Promise<void>) {
  const a = await startQuestionAgent(era);
  try {
    await body(a);
  } finally {
    await a.stop();
    fs.rmSync(a.dir, { recursive: true, force: true });
  }
}

for (const js of [true, false]) {
  test.describe(`JavaScript ${js ? 'on' : 'off'}`, () => {
    test.use({ javaScriptEnabled: js });

    test('answer a form question on the conversation page, then decline one from the inbox', async ({ page }) => {
      await withAgent('both', async (a) => {
        const base = a.baseURL;
        const one = await ask(base, 'deploy web');
        await page.goto(`${base}/ui/conversations/${one.id}`);
        const card = page.locator('.question-card');
        await expect(card).toContainText('Which environment for web?');
        // The form follows the schema: a choice, a number, a required checkbox.
        await expect(card.getByLabel('Environment')).toHaveValue('staging');
        await card.getByLabel('Environment').selectOption('production');
        await card.locator('input[type=number]').fill('3');
        await card.getByLabel('confirm').check();
        await card.getByRole('button', { name: 'Send' }).click();
        await expect(page.locator('.question-card')).toHaveCount(0);
        await expect.poll(() => lastReply(base, one.id)).toBe('tool said: deploying web to production (replicas=3)');
        const q = await (await fetch(`${base}/questions/${one.uuid}`)).json();
        expect(q.status).toBe('answered');
        expect(q.answered_via).toBe('ui');

        const two = await ask(base, 'deploy api');
        await page.goto(`${base}/ui/approvals`);
        await expect(page.locator('h1')).toHaveText('Waiting for you');
        const item = page.locator(`[data-question="${two.uuid}"]`);
        await expect(item).toContainText('Which environment for api?');
        await item.getByRole('button', { name: 'Decline' }).click();
        await expect(page.locator(`[data-question="${two.uuid}"]`)).toHaveCount(0);
        await expect.poll(() => lastReply(base, two.id)).toBe('tool said: declined');
      });
    });

    test('a URL question shows its link and Done', async ({ page }) => {
      await withAgent('legacy', async (a) => {
        const base = a.baseURL;
        const one = await ask(base, 'sign in');
        await page.goto(`${base}/ui/conversations/${one.id}`);
        const card = page.locator('.question-card');
        await expect(card).toContainText('Sign in to the billing system');
        const link = card.locator('a.question-link');
        await expect(link).toHaveAttribute('href', 'https://billing.example.test/oauth?state=xyz');
        await expect(link).toHaveAttribute('rel', 'noopener noreferrer');
        await card.getByRole('button', { name: 'Done' }).click();
        await expect.poll(() => lastReply(base, one.id)).toBe('tool said: url accepted');
      });
    });
  });
}

test('a form answer that does not fit the schema is refused and the question stays', async ({ page }) => {
  await withAgent('both', async (a) => {
    const base = a.baseURL;
    const one = await ask(base, 'deploy db');
    await page.goto(`${base}/ui/conversations/${one.id}`);
    const card = page.locator('.question-card');
    // The browser would stop 11 (the field's max is 10); a client that does
    // not is stopped by the server, which names the field.
    await card.locator('form.question-form').evaluate((f: HTMLFormElement) => { f.noValidate = true; });
    await card.locator('input[type=number]').fill('11');
    await card.getByLabel('confirm').check();
    await card.getByRole('button', { name: 'Send' }).click();
    await expect(page.locator('#refused-reason')).toContainText('replicas');
    const q = await (await fetch(`${base}/questions/${one.uuid}`)).json();
    expect(q.status).toBe('pending');
  });
});
