// The files agent (config/filesystem-agent.yaml on mcp-filesystem): the
// approval card shows the diff of an edit before anyone decides, and the
// file changes only once it is approved.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test, expect, hydrated, startFilesystemAgent } from './agent';

test('an edit shows its diff on the approval card and changes the file only when approved', async ({ page, consoleErrors }) => {
  const agent = await startFilesystemAgent();
  const notes = path.join(agent.dir, 'workspace', 'notes.md');
  try {
    await page.goto(agent.baseURL + '/');
    await hydrated(page);
    await page.getByRole('button', { name: 'New conversation' }).click();
    await expect(page).toHaveURL(/\/ui\/conversations\//);
    await hydrated(page);
    const box = page.getByLabel('Message');
    await box.fill('in notes.md replace hello with goodbye');
    await box.press('Enter');
    const card = page.locator('.approval-card');
    await expect(card).toBeVisible();
    await expect(card.locator('.approval-tool')).toHaveText('edit_file');
    const diff = card.locator('.approval-diff');
    await expect(diff.locator('.diff-del')).toHaveText('-hello');
    await expect(diff.locator('.diff-add')).toHaveText('+goodbye');
    expect(fs.readFileSync(notes, 'utf8')).toBe('hello\n');
    await card.getByRole('button', { name: 'Approve' }).click();
    await expect(card).toHaveCount(0);
    await expect(page.locator('.message-assistant').last()).toContainText('edit_file answered');
    expect(fs.readFileSync(notes, 'utf8')).toBe('goodbye\n');
  } finally {
    await agent.stop();
    fs.rmSync(agent.dir, { recursive: true, force: true });
  }
});
