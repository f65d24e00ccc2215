// Two agents over A2A (testdata/e2e-chain-a.yaml → e2e-chain-b.yaml): B's
// approval shows up in A's chat as a proxy approval with the agent chain,
// and approving it in A's UI runs the tool at B once.
import * as fs from 'node:fs';
import { test, expect, hydrated, startExampleAgent, Agent } from './agent';

const started: Agent[] = [];
test.afterEach(async ({ page }) => {
  // Leave the page first: stopping an agent under an open page makes its
  // live-updates stream fail to reconnect, a console error the
  // consoleErrors fixture (checked after this hook) would report.
  await page.goto('about:blank');
  for (const a of started.splice(0)) {
    await a.stop();
    fs.rmSync(a.dir, { recursive: true, force: true });
  }
});

test('a sub-agent approval is decided in the calling agent and runs at the sub-agent', async ({ page, consoleErrors }) => {
  const b = await startExampleAgent('e2e-chain-b.yaml');
  started.push(b);
  const a = await startExampleAgent('e2e-chain-a.yaml', (y) => y.replace('url: http://127.0.0.1:9102', `url: ${b.baseURL}`));
  started.push(a);

  await page.goto(a.baseURL + '/');
  await hydrated(page);
  await page.getByRole('button', { name: 'New conversation' }).click();
  await expect(page).toHaveURL(/\/ui\/conversations\//);
  await hydrated(page);
  await page.getByLabel('Message').fill('add apples 5');
  await page.getByLabel('Message').press('Enter');

  const card = page.locator('.approval-card');
  await expect(card).toBeVisible();
  await expect(card.locator('.approval-tool')).toHaveText('resources_add');
  await expect(card.locator('.approval-chain')).toHaveText('delegate');
  await expect(card).toContainText('Agent');
  expect(JSON.parse((await card.locator('.approval-args').getAttribute('data-args'))!)).toEqual({ name: 'apples', value: 5 });
  // B waits too, on the same action.
  const atB = await (await page.request.get(b.baseURL + '/approvals')).json();
  expect(atB.approvals).toHaveLength(1);
  expect(atB.approvals[0].tool_name).toBe('resources_add');
  await page.screenshot({ path: 'test-results/screenshots/chain-approval.png', fullPage: true });

  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(card).toHaveCount(0);
  const call = page.locator('.tool-call', { has: page.locator('.tool-name', { hasText: 'a2a_delegate' }) });
  await expect(call.locator('.tool-result')).toContainText('resources_add answered');
  await expect(page.locator('.pipeline-panel .run-status')).toHaveText('completed');
  // The resource exists once, at B.
  const list = await (await page.request.post(b.baseURL + '/conversations', { data: { message: 'list' } })).json();
  expect(list.result.response).toContain('"count":1');
  expect((await (await page.request.get(b.baseURL + '/approvals')).json()).approvals).toHaveLength(0);
});
