// The pipeline view: the configured tree, the current node highlighted,
// finished nodes ticked, live, on /ui/pipeline and in the conversation.
import * as fs from 'node:fs';
import { test, expect, hydrated, startExampleAgent, Agent } from './agent';

let example: Agent | undefined;
test.afterEach(async ({ page }) => {
  // Leave the page first: stopping an agent under an open page makes its
  // live-updates stream fail to reconnect, a console error the
  // consoleErrors fixture (checked after this hook) would report.
  await page.goto('about:blank');
  if (example) {
    await example.stop();
    fs.rmSync(example.dir, { recursive: true, force: true });
    example = undefined;
  }
});

test('the sequential pipeline pauses at the executor and the tree shows where it stands', async ({ page, consoleErrors }) => {
  example = await startExampleAgent('e2e-sequential.yaml');
  const base = example.baseURL;

  // Before any run: the tree, nothing highlighted.
  await page.goto(base + '/ui/pipeline');
  await hydrated(page);
  const node = (name: string) => page.locator(`#pipeline-tree .pnode[data-node="${name}"]`);
  await expect(node('pipeline')).toHaveAttribute('data-kind', 'sequential');
  await expect(node('analyzer')).toContainText('→ {analysis}');
  await expect(node('executor')).toHaveAttribute('data-status', 'idle');
  await expect(page.locator('#no-run')).toBeVisible();
  await expect(page.locator('.pnode.current')).toHaveCount(0);

  // A run from the chat: the analyzer finishes, the executor asks.
  await page.goto(base + '/');
  await hydrated(page);
  await page.getByRole('button', { name: 'New conversation' }).click();
  await expect(page).toHaveURL(/\/ui\/conversations\//);
  await hydrated(page);
  const convUrl = page.url();
  await page.getByLabel('Message').fill('add apples 5');
  await page.getByLabel('Message').press('Enter');
  const card = page.locator('.approval-card');
  await expect(card).toBeVisible();
  await expect(card.locator('.approval-tool')).toHaveText('resources_add');
  // Messages carry their node; the conversation shows the run's tree.
  await expect(page.locator('.message-tool[data-node="analyzer"] .node-tag')).toHaveText('analyzer');
  await expect(page.locator('.message-assistant[data-node="analyzer"]')).toContainText('Analysis: the store holds');
  await expect(node('analyzer')).toHaveAttribute('data-status', 'completed');
  await expect(node('executor')).toHaveAttribute('data-status', 'paused');
  await expect(node('executor')).toHaveClass(/current/);
  await expect(node('executor')).toContainText('waiting for approval');

  // The pipeline page shows the same run, and follows it live.
  await page.goto(base + '/ui/pipeline');
  await hydrated(page);
  await expect(page.locator('#run-head .run-status')).toHaveText('paused');
  await expect(page.locator('#run-head')).toContainText('resources_add in executor');
  await expect(node('analyzer')).toHaveAttribute('data-status', 'completed');
  await expect(node('analyzer').locator('.pnode-mark').first()).toHaveText('✓');
  await expect(node('executor')).toHaveClass(/current/);
  await page.screenshot({ path: 'test-results/screenshots/pipeline.png', fullPage: true });

  const pending = await (await page.request.get(base + '/approvals')).json();
  expect(pending.approvals).toHaveLength(1);
  const decided = await page.request.post(`${base}/approvals/${pending.approvals[0].uuid}`, { data: { approved: true } });
  expect(decided.status()).toBe(200);
  await expect(node('executor')).toHaveAttribute('data-status', 'completed');
  await expect(page.locator('#run-head .run-status')).toHaveText('completed');
  await expect(page.locator('.pnode.current')).toHaveCount(0);

  // Back in the conversation: the executor's answer, under its node.
  await page.goto(convUrl);
  await hydrated(page);
  await expect(page.locator('.message-assistant[data-node="executor"]')).toContainText('Executed: {"resource"');
  await expect(page.locator('.pipeline-panel .run-status')).toHaveText('completed');
});

test('a loop run shows its rounds, and a simple-mode agent says it has no pipeline', async ({ page, agent, consoleErrors }) => {
  example = await startExampleAgent('e2e-loop.yaml');
  const base = example.baseURL;
  const created = await page.request.post(base + '/conversations', { data: { message: 'fill up' } });
  expect(created.status()).toBe(201);
  const id = (await created.json()).conversation.id;
  await page.goto(`${base}/ui/pipeline?conversation=${id}`);
  await hydrated(page);
  const node = (name: string) => page.locator(`#pipeline-tree .pnode[data-node="${name}"]`);
  await expect(node('refine')).toContainText('done · round 3');
  await expect(node('refine')).toContainText('at most 5 rounds');
  await expect(node('checker')).toContainText('may end the loop');
  await expect(node('worker')).toContainText('tools run without approval');
  await expect(node('checker')).toHaveAttribute('data-status', 'completed');

  await page.goto(agent.baseURL + '/ui/pipeline');
  await hydrated(page);
  await expect(page.locator('#no-pipeline')).toContainText('simple mode');
});
