// Grants (REACH.md §3) in the browser: "Approve and allow again…" on the
// approval card approves with a grant on the checked arguments; the next
// call with the same name runs without asking; the tools page lists the
// grant and revokes it; the next call asks again. With JavaScript on
// (hydrated) and off: the grant form and Revoke are plain posts.
import { test, expect, hydrated } from './agent';

async function send(base: string, id: string | null, message: string): Promise<any> {
  const url = id ? `${base}/conversations/${id}/messages` : `${base}/conversations`;
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  });
  expect([200, 201]).toContain(r.status);
  return r.json();
}

for (const js of [true, false]) {
  test.describe(`with JavaScript ${js ? 'on' : 'off'}`, () => {
    test.use({ javaScriptEnabled: js });

    test('approve with a grant, the next call runs, revoke it, the next call asks', async ({ page, resourcesAgent }) => {
      const base = resourcesAgent.baseURL;
      const first = await send(base, null, 'add apples 5');
      const id = first.conversation.id;
      expect(first.result.waiting_approval).toBe(true);
      await page.goto(`${base}/ui/conversations/${id}`);
      if (js) await hydrated(page);
      const card = page.locator('.approval-card');
      await card.getByText('Approve and allow again…').click();
      const form = card.locator('.grant-form form');
      // Only the name must repeat: the value may differ.
      await form.getByLabel('value').uncheck();
      await expect(form.getByLabel('name')).toBeChecked();
      await form.locator('select[name="grant_for"]').selectOption('1h');
      await form.getByRole('button', { name: 'Approve and allow again' }).click();
      await expect(page).toHaveURL(`${base}/ui/conversations/${id}`);
      await expect(page.locator('.approval-card')).toHaveCount(0);
      await expect(page.locator('.approval-outcome').first()).toContainText('Approved and run');

      // The same name again runs without asking.
      const second = await send(base, id, 'add apples 9');
      expect(second.result.waiting_approval).toBe(false);
      const calls = second.conversation.messages.filter((m: any) => m.tool_call?.name === 'resources_add');
      expect(calls[calls.length - 1].tool_call.approval.decided_via).toBe('grant');
      // Another name asks.
      const pears = await send(base, id, 'add pears 2');
      expect(pears.result.waiting_approval).toBe(true);
      await fetch(`${base}/approvals/${pears.result.approval.uuid}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ approved: false }),
      });

      // The tools page lists it and revokes it.
      await page.goto(`${base}/ui/tools`);
      if (js) await hydrated(page);
      const grant = page.locator('#grants .grant');
      await expect(grant).toHaveCount(1);
      await expect(grant).toContainText('resources_add');
      await expect(grant).toContainText('"/name":"apples"');
      await expect(grant).toContainText('used 1 time');
      await grant.getByRole('button', { name: 'Revoke' }).click();
      await expect(page).toHaveURL(`${base}/ui/tools`);
      await expect(page.locator('#no-grants')).toBeVisible();

      // Revoked: the same call asks again.
      const third = await send(base, id, 'add apples 11');
      expect(third.result.waiting_approval).toBe(true);
    });
  });
}
