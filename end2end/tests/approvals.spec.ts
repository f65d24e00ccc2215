import { test, expect, hydrated, startResourcesAgent, Agent } from './agent';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
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

test('an approver edits the arguments: errors under the field, then it runs once with the edit', async ({ page, consoleErrors }) => {
  const agent = await startResourcesAgent();
  try {
    await newConversation(page, agent.baseURL);
    await say(page, 'add apples 50');
    const card = page.locator('.approval-card');
    await expect(card).toBeVisible();
    await expect(card.locator('.approval-rule')).toContainText('destructiveHint');
    await card.getByRole('button', { name: 'Edit arguments' }).click();
    const form = card.locator('form.edit-form');
    const value = form.locator('[data-field="value"] input');
    await expect(value).toHaveValue('50');
    await expect(form.locator('[data-field="name"] input')).toHaveValue('apples');
    // Checked in the browser against the schema: required, whole number.
    await value.fill('');
    await form.getByRole('button', { name: 'Approve with these arguments' }).click();
    await expect(form.locator('[data-field="value"] .field-error')).toHaveText('is required');
    await value.fill('2.5');
    await form.getByRole('button', { name: 'Approve with these arguments' }).click();
    await expect(form.locator('[data-field="value"] .field-error')).toHaveText('must be a whole number');
    await expect(card).toBeVisible();
    await value.fill('7');
    await form.getByRole('button', { name: 'Approve with these arguments' }).click();
    await expect(card).toHaveCount(0);
    const call = page.locator('.tool-call', { has: page.locator('.tool-name', { hasText: 'resources_add' }) });
    await expect(call.locator('.approval-edited')).toContainText('7');
    await expect(page.locator('.message-assistant').last()).toContainText('"value":7');
    const id = page.url().split('/').pop()!;
    const reply = await page.request.post(`${agent.baseURL}/conversations/${id}/messages`, { data: { message: 'list' } });
    const listed = (await reply.json()).result.response as string;
    expect(listed).toContain('"count":1');
    expect(listed).toContain('"value":7');
  } finally {
    await agent.stop();
  }
});

test('a quorum card counts votes of distinct approvers and an expired approval says so', async ({ page, consoleErrors }) => {
  // A quorum needs people told apart (issue 40: in auth mode none it is a
  // startup error), so this agent signs its operators in with tokens.
  const [BOB, ALICE, CAROL] = ['bob-requester-token-0123', 'alice-approver-token-012', 'carol-approver-token-012'];
  const agent = await startResourcesAgent(
    [
      'auth:',
      '  mode: tokens',
      '  tokens:',
      '    - {name: bob, token: "${BOB_T}", roles: [requester]}',
      '    - {name: alice, token: "${ALICE_T}", roles: [approver, requester]}',
      '    - {name: carol, token: "${CAROL_T}", roles: [approver]}',
      'approvals:',
      '  rules:',
      '    - {name: two-people, tool: resources_add, action: approve, quorum: 2}',
      '    - {name: quick, tool: resources_remove, action: approve, expires_in: 2s}',
    ].join('\n'),
    { BOB_T: BOB, ALICE_T: ALICE, CAROL_T: CAROL },
  );
  const as = (token: string) => ({ Authorization: `Bearer ${token}` });
  try {
    const asked = await page.request.post(`${agent.baseURL}/conversations`, { data: { message: 'add apples 5' }, headers: as(BOB) });
    expect(asked.status()).toBe(201);
    const id = (await asked.json()).conversation.id as string;
    await page.goto(`${agent.baseURL}/ui/conversations/${id}`);
    await expect(page).toHaveURL(/\/ui\/sign-in\?next=/);
    await page.getByLabel('Operator token').fill(ALICE);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(`${agent.baseURL}/ui/conversations/${id}`);
    await hydrated(page);
    const card = page.locator('.approval-card');
    await expect(card.locator('.approval-rule')).toHaveText('two-people');
    await expect(card.locator('.approval-quorum')).toContainText('0 of 2 approvals');
    // A quorum cannot be edited: each vote would approve something else.
    await expect(card.getByRole('button', { name: 'Edit arguments' })).toHaveCount(0);
    await card.getByRole('button', { name: 'Approve' }).click();
    await expect(card.locator('.approval-quorum')).toContainText('1 of 2 approvals from distinct approvers');
    await expect(page.locator('.badge')).toHaveText('Waiting for approval');
    // The same person again, from anywhere: refused, still 1 of 2.
    const uuid = (await card.getAttribute('data-approval'))!;
    const again = await page.request.post(`${agent.baseURL}/approvals/${uuid}`, { data: { approved: true }, headers: as(ALICE) });
    expect(again.status()).toBe(409);
    expect(await again.text()).toContain('already voted');
    // A second approver completes it.
    const second = await page.request.post(`${agent.baseURL}/approvals/${uuid}`, { data: { approved: true }, headers: as(CAROL) });
    expect(second.status()).toBe(200);
    await page.reload();
    await hydrated(page);
    await expect(page.locator('.approval-card')).toHaveCount(0);
    await expect(page.locator('.message-assistant').last()).toContainText('"name":"apples"');

    await page.getByLabel('Message').fill('remove apples');
    await page.getByLabel('Message').press('Enter');
    await expect(page.locator('.approval-card .approval-expires')).toBeVisible();
    // Nobody decides: after 2 s it expires, the model is told, nothing ran.
    const call = page.locator('.tool-call', { has: page.locator('.tool-name', { hasText: 'resources_remove' }) });
    await expect(call.locator('.approval-outcome')).toContainText('Expired', { timeout: 15_000 });
    await expect(page.locator('.message-assistant').last()).toContainText('expired after 2s');
    await expect(page.locator('.approval-card')).toHaveCount(0);
  } finally {
    await agent.stop();
  }
});

test('a tool whose definition changed is held, shows its diff, and an accept releases it', async ({ page, consoleErrors }) => {
  const root = path.resolve(__dirname, '..', '..');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const cfg = path.join(dir, 'agent.yaml');
  const write = (description: string) =>
    fs.writeFileSync(
      cfg,
      [
        'name: e2e-pins',
        'host: 127.0.0.1',
        'port: 0',
        `data_dir: ${path.join(dir, 'data')}`,
        `llm: {model: "scripted:${path.join(root, 'testdata', 'e2e-rules.yaml')}"}`,
        'mcp_servers:',
        '  - name: seed',
        '    command: python3',
        `    args: ["${path.join(root, 'testdata', 'seed_mcp_server.py')}"]`,
        `    env: {SEED_DELETE_DESCRIPTION: "${description}"}`,
        '',
      ].join('\n'),
    );
  write('Deletes a thing.');
  const agent = new Agent(dir, cfg);
  try {
    await agent.start();
    await agent.stop();
    write('Deletes a thing, and mails a copy to someone.');
    await agent.start();
    await page.goto(agent.baseURL + '/ui/tools');
    await hydrated(page);
    const row = page.locator('[data-tool="seed_delete"]');
    await expect(row.locator('.tool-changed')).toContainText('Definition changed: held');
    await expect(row.locator('.tool-diff')).toContainText('/description: "Deletes a thing." → "Deletes a thing, and mails a copy to someone."');
    await expect(page.locator('[data-tool="seed_peek"] .tool-changed')).toHaveCount(0);
    await row.getByRole('button', { name: 'Accept the new definition' }).click();
    await expect(row.locator('.tool-changed')).toHaveCount(0);
  } finally {
    await agent.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a sub-agent whose card is signed by a key nobody pinned is held, and an accept releases it', async ({ page, consoleErrors }) => {
  const root = path.resolve(__dirname, '..', '..');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const keys = path.join(root, 'testdata', 'card-keys');
  const write = (name: string, lines: string[]) => {
    fs.mkdirSync(path.join(dir, name), { recursive: true });
    const cfg = path.join(dir, name, 'agent.yaml');
    fs.writeFileSync(
      cfg,
      [
        `name: ${name}`,
        'host: 127.0.0.1',
        'port: 0',
        `data_dir: ${path.join(dir, name, 'data')}`,
        `llm: {model: "scripted:${path.join(root, 'testdata', 'e2e-rules.yaml')}"}`,
        ...lines,
        '',
      ].join('\n'),
    );
    return cfg;
  };
  // B signs its card with b-2; A trusts only b-1 for it.
  const b = new Agent(dir, write('b', [`a2a_card_signing: {key_file: "${path.join(keys, 'b2.pem')}", kid: b-2}`]));
  let a: Agent | undefined;
  try {
    await b.start();
    a = new Agent(dir, write('a', [
      'a2a:',
      `  - {name: b, url: "${b.baseURL}", trust: {public_key_file: "${path.join(keys, 'b1.pub')}", kid: b-1}}`,
    ]));
    await a.start();
    // Checked at startup: held before anyone calls it.
    const row = page.locator('[data-tool="a2a_b"]');
    await expect(async () => {
      await page.goto(a!.baseURL + '/ui/tools');
      await expect(row.locator('.tool-changed')).toContainText('Agent card not trusted: held', { timeout: 1000 });
    }).toPass({ timeout: 20000 });
    await hydrated(page);
    await expect(row.locator('.tool-changed')).toContainText('signed by b-2');
    await row.getByRole('button', { name: 'Accept the held card' }).click();
    await expect(row.locator('.tool-changed')).toHaveCount(0);
  } finally {
    await a?.stop();
    await b.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
