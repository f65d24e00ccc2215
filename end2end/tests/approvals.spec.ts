import { test, expect, hydrated } from './agent';
import type { Page } from '@playwright/test';

async function newConversation(page: Page, baseURL: string) {
  await page.goto(baseURL + '/');
  await hydrated(page);
  await page.getByRole('button', { name: 'New conversation' }).click();
  await expect(page).toHaveURL(/\/ui\/conversations\//);
  await hydrated(page);
}

async function say(page: Page, text: string) {
  const box = page.getByLabel('Message');
  await box.fill(text);
  await box.press('Enter');
}

test('a safe tool runs at once and its card shows the call', async ({ page, resourcesAgent, consoleErrors }) => {
  await newConversation(page, resourcesAgent.baseURL);
  await expect(page.locator('#demo-banner')).toContainText('Demo model');
  await say(page, 'list resources');
  await expect(page.locator('.message-assistant').last()).toContainText('Here is what I found');
  const card = page.locator('.tool-call').first();
  await expect(card.locator('.tool-name')).toHaveText('resources_list');
  await expect(card).toContainText('on resources');
  await expect(page.locator('.approval-card')).toHaveCount(0);
});

test('an add waits for approval with its arguments, then runs once on approve', async ({ page, resourcesAgent, consoleErrors }) => {
  await newConversation(page, resourcesAgent.baseURL);
  await say(page, 'add apples 5');
  const card = page.locator('.approval-card');
  await expect(card).toBeVisible();
  await expect(card.locator('.approval-tool')).toHaveText('resources_add');
  const args = JSON.parse((await card.locator('.approval-args').getAttribute('data-args'))!);
  expect(args).toEqual({ name: 'apples', value: 5 });
  await expect(card.locator('.approval-args')).toContainText('"apples"');
  await expect(card.locator('.approval-server')).toHaveText('resources');
  // The card takes the focus, so keyboard users land on the decision.
  await expect(card).toBeFocused();
  await expect(page.locator('.badge')).toHaveText('Waiting for approval');
  await expect(page.getByLabel('Message')).toBeDisabled();

  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator('.message-assistant').last()).toContainText('"name":"apples"');
  await expect(page.locator('.badge')).toHaveText('Active');
  // The call's card shows the outcome, who decided and the duration.
  const call = page.locator('.tool-call', { has: page.locator('.tool-name', { hasText: 'resources_add' }) });
  await expect(call.locator('.approval-outcome')).toContainText('Approved and run');
  await expect(call.locator('.approval-outcome')).toContainText('by anonymous via ui');
  await expect(call.locator('.tool-duration')).toContainText(/\d+(\.\d)? (ms|s)/);

  // The resource exists exactly once.
  const id = page.url().split('/').pop()!;
  const reply = await page.request.post(`${resourcesAgent.baseURL}/conversations/${id}/messages`, { data: { message: 'list' } });
  expect((await reply.json()).result.response).toContain('"count":1');
});

test('a rejection with a reason never runs the tool and the reason reaches the conversation', async ({ page, resourcesAgent, consoleErrors }) => {
  await newConversation(page, resourcesAgent.baseURL);
  await say(page, 'add pears 3');
  const card = page.locator('.approval-card');
  await expect(card).toBeVisible();
  await card.getByLabel(/Reason/).fill('no pears this week');
  await card.getByRole('button', { name: 'Reject' }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator('.tool-result').last()).toContainText('no pears this week');
  await expect(page.locator('.approval-outcome').last()).toContainText('Rejected');
  await expect(page.locator('.approval-outcome').last()).toContainText('reason: no pears this week');
  const id = page.url().split('/').pop()!;
  const reply = await page.request.post(`${resourcesAgent.baseURL}/conversations/${id}/messages`, { data: { message: 'list' } });
  expect((await reply.json()).result.response).toContain('"count":0');
});

test('a missing provider key is shown as a banner and the UI keeps working', async ({ page, agent }) => {
  await page.goto(agent.baseURL + '/');
  await hydrated(page);
  await expect(page.locator('#llm-banner')).toContainText('GEMINI_API_KEY is not set');
  await page.getByRole('button', { name: 'New conversation' }).click();
  await hydrated(page);
  await say(page, 'hello');
  await expect(page.locator('#turn-error')).toContainText('GEMINI_API_KEY is not set');
});
