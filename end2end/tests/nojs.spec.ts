// Decisions without JavaScript (REACH.md §1, issue 40 item 2): with
// JavaScript off every decision control works as a plain form post
// (approve, reject with a reason, edit arguments, the inbox, a
// notification link, sign-in and sign-out); with JavaScript on but the
// WebAssembly never arriving, a press of Approve still decides; and a
// foreign page's form, or one without this browser's token, decides
// nothing. Item 4 rides along: an approval's title shows its code as code.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as fs from 'node:fs';
import { test, expect, receiver, startResourcesAgent } from './agent';

/** `POST /conversations` (optionally as `bearer`): the waiting approval. */
async function ask(base: string, message: string, bearer?: string): Promise<{ id: string; uuid: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const r = await fetch(`${base}/conversations`, { method: 'POST', headers, body: JSON.stringify({ message }) });
  expect(r.status).toBe(201);
  const b = await r.json();
  return { id: b.conversation.id, uuid: b.result.approval.uuid };
}

async function approvalsWaiting(base: string, bearer?: string): Promise<string[]> {
  const headers: Record<string, string> = bearer ? { authorization: `Bearer ${bearer}` } : {};
  const r = await (await fetch(`${base}/approvals`, { headers })).json();
  return r.approvals.map((a: any) => a.uuid);
}

test.describe('with JavaScript off', () => {
  test.use({ javaScriptEnabled: false });

  test('approve, reject with a reason and edit arguments on the conversation page', async ({ page, resourcesAgent }) => {
    const base = resourcesAgent.baseURL;
    const one = await ask(base, 'add apples 5');
    await page.goto(`${base}/ui/conversations/${one.id}`);
    const card = page.locator('.approval-card');
    // The title's call is code, not Markdown with its backticks.
    await expect(card.locator('.approval-description code')).toContainText('resources_add(');
    await expect(card.locator('.approval-description')).not.toContainText('`');
    await card.getByRole('button', { name: 'Approve' }).click();
    await expect(page).toHaveURL(`${base}/ui/conversations/${one.id}`);
    await expect(page.locator('.approval-card')).toHaveCount(0);
    const done = page.locator('.approval-outcome').first();
    await expect(done).toContainText('Approved and run');
    await expect(done.locator('.decided-via')).toHaveText('ui');

    const two = await ask(base, 'add pears 2');
    await page.goto(`${base}/ui/conversations/${two.id}`);
    await page.getByLabel('Reason (optional, told to the agent if you reject)').fill('not pears today');
    await page.locator('.approval-card').getByRole('button', { name: 'Reject' }).click();
    await expect(page).toHaveURL(`${base}/ui/conversations/${two.id}`);
    const rejected = page.locator('.approval-outcome').first();
    await expect(rejected).toContainText('Rejected');
    await expect(rejected.locator('.outcome-reason')).toContainText('not pears today');

    const three = await ask(base, 'add plums 3');
    await page.goto(`${base}/ui/conversations/${three.id}`);
    await page.locator('.approval-card').getByRole('button', { name: 'Edit arguments' }).click();
    await expect(page).toHaveURL(new RegExp(`\\?edit=${three.uuid}`));
    const form = page.locator('form.edit-form');
    await form.locator('[data-field="value"] input').fill('1.5');
    await form.getByRole('button', { name: 'Approve with these arguments' }).click();
    // Refused with the field named; nothing ran; back to the form.
    await expect(page.locator('#refused-reason')).toContainText('value: must be a whole number');
    expect(await approvalsWaiting(base)).toContain(three.uuid);
    await page.locator('#refused-back').click();
    await page.locator('form.edit-form [data-field="value"] input').fill('7');
    await page.locator('form.edit-form').getByRole('button', { name: 'Approve with these arguments' }).click();
    await expect(page.locator('.approval-card')).toHaveCount(0);
    await expect(page.locator('.approval-edited')).toContainText('7');
    await expect(page.locator('.approval-outcome').first()).toContainText('Approved and run');
  });

  test('the inbox decides, and an approval decided meanwhile says so', async ({ page, resourcesAgent }) => {
    const base = resourcesAgent.baseURL;
    const a = await ask(base, 'add figs 1');
    const b = await ask(base, 'add kiwis 2');
    await page.goto(`${base}/ui/approvals`);
    await expect(page.locator('.inbox-item')).toHaveCount(2);
    await page.getByRole('button', { name: `Approve resources_add (${a.uuid})` }).click();
    await expect(page).toHaveURL(`${base}/ui/approvals`);
    await expect(page.locator('.inbox-item')).toHaveCount(1);
    expect(await approvalsWaiting(base)).toEqual([b.uuid]);
    // Someone else decides b while this page is open: the press is refused
    // and the page that says why links back.
    const r = await fetch(`${base}/approvals/${b.uuid}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ approved: false }),
    });
    expect(r.status).toBe(200);
    await page.getByRole('button', { name: `Approve resources_add (${b.uuid})` }).click();
    await expect(page.locator('#refused-reason')).toContainText('already decided');
    await page.locator('#refused-back').click();
    await expect(page).toHaveURL(`${base}/ui/approvals`);
    await expect(page.locator('#no-approvals')).toBeVisible();
  });

  test('a notification link decides through its page', async ({ page }) => {
    const hook = await receiver();
    const agent = await startResourcesAgent(
      ['notifications:', '  targets:', '    - name: e2e', `      url: ${hook.url}`, '      events: [approval.requested]'].join('\n'),
    );
    try {
      const one = await ask(agent.baseURL, 'add apples 5');
      await expect.poll(() => hook.bodies.length, { timeout: 10_000 }).toBe(1);
      const links = hook.bodies[0].links;
      await page.goto(links.reject);
      await expect(page.locator('#link-card')).toHaveAttribute('data-link-state', 'valid');
      await expect(page.locator('#link-card .approval-description code')).toContainText('resources_add(');
      await page.locator('#link-reason').fill('from my phone');
      await page.locator('#link-card').getByRole('button', { name: 'Reject' }).click();
      await expect(page.locator('#link-done')).toContainText('Rejected');
      await expect(page.locator('#link-card')).toHaveAttribute('data-link-state', 'used');
      expect(await approvalsWaiting(agent.baseURL)).not.toContain(one.uuid);
      const c = await (await fetch(`${agent.baseURL}/conversations/${one.id}`)).json();
      const call = c.conversation.messages.find((m: any) => m.tool_call?.name === 'resources_add').tool_call;
      expect(call.approval.status).toBe('rejected');
      expect(call.approval.decided_via).toBe('link');
      expect(call.approval.reason).toBe('from my phone');
    } finally {
      hook.close();
      await agent.stop();
      fs.rmSync(agent.dir, { recursive: true, force: true });
    }
  });

  test('sign in, decide and sign out with tokens', async ({ page }) => {
    const [BOB, ALICE] = ['bob-requester-token-0123', 'alice-approver-token-012'];
    const agent = await startResourcesAgent(
      [
        'auth:',
        '  mode: tokens',
        '  tokens:',
        '    - {name: bob, token: "${BOB_T}", roles: [requester]}',
        '    - {name: alice, token: "${ALICE_T}", roles: [approver]}',
      ].join('\n'),
      { BOB_T: BOB, ALICE_T: ALICE },
    );
    const base = agent.baseURL;
    try {
      const one = await ask(base, 'add apples 5', BOB);
      await page.goto(`${base}/ui/approvals`);
      await expect(page).toHaveURL(/\/ui\/sign-in\?next=/);
      await page.getByLabel('Operator token').fill('not-a-token-of-ours-0123');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page.locator('#sign-in-error')).toContainText("not one of this agent's operator tokens");
      await page.getByLabel('Operator token').fill(ALICE);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page).toHaveURL(`${base}/ui/approvals`);
      await expect(page.locator('#signed-in-as')).toHaveText('alice');
      await page.getByRole('button', { name: `Approve resources_add (${one.uuid})` }).click();
      await expect(page.locator('#no-approvals')).toBeVisible();
      const c = await (await fetch(`${base}/conversations/${one.id}`, { headers: { authorization: `Bearer ${ALICE}` } })).json();
      const call = c.conversation.messages.find((m: any) => m.tool_call?.name === 'resources_add').tool_call;
      expect(call.approval.decided_by).toBe('alice');
      expect(call.approval.decided_via).toBe('ui');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await expect(page).toHaveURL(/\/ui\/sign-in/);
      await page.goto(`${base}/ui/approvals`);
      await expect(page).toHaveURL(/\/ui\/sign-in\?next=/);
    } finally {
      await agent.stop();
      fs.rmSync(agent.dir, { recursive: true, force: true });
    }
  });
});

test('with the WebAssembly blocked, a press of Approve still decides', async ({ page, resourcesAgent }) => {
  const base = resourcesAgent.baseURL;
  let blocked = 0;
  await page.route('**/*.wasm', (route) => {
    blocked += 1;
    return route.abort();
  });
  const one = await ask(base, 'add apples 5');
  await page.goto(`${base}/ui/conversations/${one.id}`);
  await page.locator('.approval-card').getByRole('button', { name: 'Approve' }).click();
  await expect(page.locator('.approval-outcome').first()).toContainText('Approved and run');
  expect(blocked).toBeGreaterThan(0);
  await expect(page.locator('.app[data-hydrated="true"]')).toHaveCount(0);
  expect(await approvalsWaiting(base)).toEqual([]);
});

test('a form from another site, or without the browser token, decides nothing', async ({ page, resourcesAgent }) => {
  const base = resourcesAgent.baseURL;
  const one = await ask(base, 'add apples 5');
  // The attacker's page on another origin submits a form to the agent.
  const evil = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<!doctype html><form id="f" method="post" action="${base}/ui/approvals/${one.uuid}/decide">
      <input name="decision" value="approve"><input name="form_token" value="guess"></form>
      <button id="go" onclick="document.getElementById('f').submit()">Win a prize</button>`);
  });
  await new Promise<void>((ok) => evil.listen(0, '127.0.0.1', ok));
  const port = (evil.address() as AddressInfo).port;
  try {
    await page.goto(`http://localhost:${port}/`);
    const [resp] = await Promise.all([
      page.waitForResponse((r) => r.url().includes('/decide')),
      page.locator('#go').click(),
    ]);
    expect(resp.status()).toBe(403);
    expect(await approvalsWaiting(base)).toContain(one.uuid);
    // Same origin, but no token or another browser's: 403 as well.
    const bare = await page.request.post(`${base}/ui/approvals/${one.uuid}/decide`, { form: { decision: 'approve' } });
    expect(bare.status()).toBe(403);
    const foreign = await page.request.post(`${base}/ui/approvals/${one.uuid}/decide`, {
      form: { decision: 'approve', form_token: 'a'.repeat(64) },
      headers: { Origin: 'http://evil.example' },
    });
    expect(foreign.status()).toBe(403);
    expect(await approvalsWaiting(base)).toContain(one.uuid);
  } finally {
    evil.close();
  }
});
