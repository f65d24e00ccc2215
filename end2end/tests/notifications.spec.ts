import { test, expect, hydrated, receiver, startResourcesAgent } from './agent';

test('a notification link opens the approval with one button, decides once, and the outbox shows it', async ({ page, consoleErrors }) => {
  const hook = await receiver();
  const agent = await startResourcesAgent(
    ['notifications:', '  targets:', '    - name: e2e', `      url: ${hook.url}`, '      events: [approval.requested]'].join('\n'),
  );
  try {
    const r = await fetch(agent.baseURL + '/conversations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'add apples 5' }),
    });
    expect(r.status).toBe(201);
    const uuid = (await r.json()).result.approval.uuid;
    await expect.poll(() => hook.bodies.length, { timeout: 10_000 }).toBe(1);
    const links = hook.bodies[0].links;

    // Opening shows the approval alone with one button, and decides nothing.
    await page.goto(links.approve);
    await hydrated(page);
    const card = page.locator('#link-card');
    await expect(card).toHaveAttribute('data-link-state', 'valid');
    await expect(card).toContainText('resources_add');
    await expect(card).toContainText('"apples"');
    await expect(card.locator('button')).toHaveCount(1);
    const pending = await (await fetch(agent.baseURL + '/approvals')).json();
    expect(pending.approvals.map((a: any) => a.uuid)).toContain(uuid);

    await card.getByRole('button', { name: 'Approve' }).click();
    await expect(page.locator('#link-done')).toContainText('Approved');
    const after = await (await fetch(agent.baseURL + '/approvals')).json();
    expect(after.approvals.map((a: any) => a.uuid)).not.toContain(uuid);

    // Used: it says so, with no button.
    await page.reload();
    await hydrated(page);
    await expect(page.locator('#link-card')).toHaveAttribute('data-link-state', 'used');
    await expect(page.locator('#link-message')).toContainText('used already');
    await expect(page.locator('#link-card button')).toHaveCount(0);

    // A changed byte: refused.
    const token = links.reject.split('/').pop();
    const bad = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    await page.goto(agent.baseURL + '/ui/link/' + bad);
    await expect(page.locator('#link-refused')).toContainText('signature');

    // The outbox page lists the delivery.
    await page.goto(agent.baseURL + '/ui/notifications');
    await hydrated(page);
    await expect(page.locator('#notification-counts')).toContainText('1 delivered');
    const row = page.locator('#notifications tbody tr').first();
    await expect(row).toHaveAttribute('data-status', 'delivered');
    await expect(row).toContainText('approval.requested');
    await expect(row).toContainText('e2e');
  } finally {
    hook.close();
    await agent.stop();
  }
});
