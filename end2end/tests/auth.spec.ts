// Who may approve, in a real browser (AUTH.md §3–§5): token sign-in and
// sign-out, the buttons a requester does not get (and why), an approver
// deciding from the inbox with live updates under the nonce CSP, the OIDC
// sign-in against a real OpenID provider ending in a decision that names
// the user, and a foreign page that tries to frame the inbox.
import * as http from 'node:http';
import * as fs from 'node:fs';
import { test, expect, hydrated, startResourcesAgent, OidcProvider, watchConsole, Agent } from './agent';
import type { Page } from '@playwright/test';

const BOB = 'bob-requester-token-0123';
const ALICE = 'alice-approver-token-012';

const TOKENS_YAML = [
  'auth:',
  '  mode: tokens',
  '  tokens:',
  '    - {name: bob, token: "${BOB_T}", roles: [requester]}',
  '    - {name: alice, token: "${ALICE_T}", roles: [approver]}',
].join('\n');

async function signInWithToken(page: Page, base: string, token: string, next = '/') {
  await page.goto(`${base}${next}`);
  // No session: the page sends us to sign in, remembering where we were.
  await expect(page).toHaveURL(new RegExp(`/ui/sign-in\\?next=`));
  await page.getByLabel('Operator token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(`${base}${next}`);
  await hydrated(page);
}

async function stopAgent(agent: Agent) {
  await agent.stop();
  fs.rmSync(agent.dir, { recursive: true, force: true });
}

test('tokens: a requester sees why they cannot decide; an approver decides from the live inbox', async ({ browser }) => {
  const agent = await startResourcesAgent(TOKENS_YAML, { BOB_T: BOB, ALICE_T: ALICE });
  const base = agent.baseURL;
  try {
    // Bob asks in the chat.
    const bobCtx = await browser.newContext();
    const bob = await bobCtx.newPage();
    const bobErrors = watchConsole(bob);
    await signInWithToken(bob, base, BOB);
    await expect(bob.locator('#signed-in-as')).toHaveText('bob');
    await expect(bob.locator('#user-menu')).toContainText('requester');
    await bob.getByRole('button', { name: 'New conversation' }).click();
    await expect(bob).toHaveURL(/\/ui\/conversations\//);
    await hydrated(bob);
    await bob.getByLabel('Message').fill('add apples 5');
    await bob.getByLabel('Message').press('Enter');
    const card = bob.locator('.approval-card');
    await expect(card).toBeVisible();
    await expect(card.locator('.approval-requested-by')).toHaveText('bob');
    await expect(card.locator('.decide-refused')).toContainText('needs the approver or admin role');
    await expect(card.getByRole('button', { name: 'Approve' })).toHaveCount(0);
    // The server refuses it too, whatever the page shows.
    const uuid = (await card.getAttribute('data-approval'))!;
    const forced = await bob.request.post(`${base}/approvals/${uuid}`, { data: { approved: true } });
    expect(forced.status()).toBe(403);
    expect(bobErrors).toEqual([]);

    // Alice's inbox, open before the second request arrives: it appears live.
    const aliceCtx = await browser.newContext();
    const alice = await aliceCtx.newPage();
    const aliceErrors = watchConsole(alice);
    await signInWithToken(alice, base, ALICE, '/ui/approvals');
    await expect(alice.locator('#signed-in-as')).toHaveText('alice');
    await expect(alice.locator('.inbox-item')).toHaveCount(1);
    await expect(alice.locator('.inbox-item').first()).toContainText('by bob');
    const second = await bob.request.post(`${base}/conversations`, { data: { message: 'add plums 7' } });
    expect(second.status()).toBe(201);
    await expect(alice.locator('.inbox-item')).toHaveCount(2);
    await expect(alice.locator('#approvals-count')).toHaveText('2');
    await alice.locator(`.inbox-item[data-approval="${uuid}"]`).getByRole('button', { name: /^Approve/ }).click();
    await expect(alice.locator('#inbox-outcome')).toContainText('Approved resources_add');
    await expect(alice.locator('.inbox-item')).toHaveCount(1);

    // Bob's chat follows live: decided by alice, in the UI.
    await expect(card).toHaveCount(0);
    const outcome = bob.locator('.approval-outcome').first();
    await expect(outcome).toContainText('Approved and run');
    await expect(outcome.locator('.decided-by')).toHaveText('alice');
    await expect(outcome.locator('.decided-via')).toHaveText('ui');
    expect(aliceErrors).toEqual([]);

    // Sign out: the session is gone at once.
    await bob.getByRole('button', { name: 'Sign out' }).click();
    await expect(bob).toHaveURL(/\/ui\/sign-in/);
    await bob.goto(`${base}/ui/approvals`);
    await expect(bob).toHaveURL(/\/ui\/sign-in\?next=/);
  } finally {
    await stopAgent(agent);
  }
});

test('oidc: sign in at the provider, decide, and the decision names the user', async ({ page }) => {
  const idp = new OidcProvider();
  await idp.start(['--client-secret', 'e2e-oidc-client-secret-0123']);
  const yaml = [
    'auth:',
    '  mode: oidc',
    '  oidc:',
    `    issuer: ${idp.issuer}`,
    '    audience: stop-and-go',
    '    client_id: stop-and-go-ui',
    '    client_secret: "${OIDC_SECRET}"',
    '    name_claim: email',
    '    roles_claim: groups',
    '    role_map: {sre-oncall: approver, sre: requester, platform-admins: admin}',
  ].join('\n');
  const agent = await startResourcesAgent(yaml, { OIDC_SECRET: 'e2e-oidc-client-secret-0123' });
  const base = agent.baseURL;
  try {
    // Bob asks over the API with a bearer JWT from the same provider.
    const bobToken = await idp.token('bob');
    const asked = await page.request.post(`${base}/conversations`, {
      data: { message: 'add cherries 8' },
      headers: { Authorization: `Bearer ${bobToken}` },
    });
    expect(asked.status()).toBe(201);
    const body = await asked.json();
    const uuid = body.result.approval.uuid as string;
    const id = body.conversation.id as string;

    // Alice signs in through the provider.
    await page.goto(`${base}/ui/approvals`);
    await expect(page).toHaveURL(/\/ui\/sign-in\?next=/);
    await page.locator('#oidc-sign-in').click();
    await page.waitForURL(`${idp.issuer}/interaction/**`);
    await page.fill('input[name=login]', 'alice');
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    await expect(page).toHaveURL(`${base}/ui/approvals`);
    // From here on the pages are ours (the provider's login page asks for
    // a favicon it does not have: a 404 that is not ours to fix).
    const errors = watchConsole(page);
    await page.reload();
    await hydrated(page);
    await expect(page.locator('#signed-in-as')).toHaveText('alice@example.test');
    const item = page.locator(`.inbox-item[data-approval="${uuid}"]`);
    await expect(item).toContainText('by bob@example.test');
    await item.getByRole('button', { name: /^Approve/ }).click();
    await expect(page.locator('#inbox-outcome')).toContainText('Approved resources_add');

    await page.goto(`${base}/ui/conversations/${id}`);
    await hydrated(page);
    const outcome = page.locator('.approval-outcome').first();
    await expect(outcome.locator('.decided-by')).toHaveText('alice@example.test');
    await expect(outcome.locator('.decided-via')).toHaveText('ui');
    // And over the API.
    const c = await (await page.request.get(`${base}/conversations/${id}`, { headers: { Authorization: `Bearer ${bobToken}` } })).json();
    const call = c.conversation.messages.find((m: any) => m.tool_call?.name === 'resources_add').tool_call;
    expect(call.approval.decided_by).toBe('alice@example.test');
    expect(call.approval.requested_by).toBe('bob@example.test');
    expect(errors).toEqual([]);
  } finally {
    await stopAgent(agent);
    await idp.stop();
  }
});

test('a page on another origin cannot frame the inbox: nothing in it is clickable', async ({ page, resourcesAgent }) => {
  const base = resourcesAgent.baseURL;
  // Something to approve, so a framed inbox would show an Approve button.
  const r = await page.request.post(`${base}/conversations`, { data: { message: 'add figs 4' } });
  expect(r.status()).toBe(201);
  // The attacker's page, served from another origin (another port).
  const evil = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    if (req.url === '/control') {
      res.end('<!doctype html><button>Control</button>');
      return;
    }
    res.end(`<!doctype html><title>win a prize</title><h1>Click here!</h1>
      <iframe id="control" src="/control"></iframe>
      <iframe id="victim" src="${base}/ui/approvals" width="800" height="600"></iframe>`);
  });
  await new Promise<void>((ok) => evil.listen(0, '127.0.0.1', ok));
  const port = (evil.address() as any).port;
  try {
    // Same host, other port: another origin (and 'localhost' to be sure).
    await page.goto(`http://localhost:${port}/`);
    await expect(page.locator('h1')).toHaveText('Click here!');
    // A frame that may be framed shows its button: the check below can see one.
    await expect(page.frameLocator('#control').locator('button')).toHaveCount(1);
    const frame = page.frameLocator('#victim');
    // Give the frame every chance to load, then look for anything to click.
    await page.waitForTimeout(1500);
    await expect(frame.locator('button')).toHaveCount(0);
    await expect(frame.locator('.inbox-item')).toHaveCount(0);
    // The refusal came from our headers, not from a failed load.
    const direct = await page.request.get(`${base}/ui/approvals`);
    expect(direct.headers()['x-frame-options']).toBe('DENY');
    expect(direct.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    const scriptSrc = direct.headers()['content-security-policy'].split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src'))!;
    expect(scriptSrc).toMatch(/'nonce-[^']+'/);
    expect(scriptSrc).not.toContain('unsafe-inline');
  } finally {
    evil.close();
  }
});
