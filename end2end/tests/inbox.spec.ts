// What a person sees on "Waiting for you" (issue 53 item 10), at a phone's
// width and a desktop's, with JavaScript on and off: the header's badge
// counts questions and approvals alike (it said 1 with one of each); every
// field of a question's form sits under its label and is as wide as the
// others (a number field stayed inline and unstyled beside the stacked
// text field); Approve and Reject on an inbox card stand apart (they
// touched).
import { test, expect, Agent, hydrated } from './agent';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

/**
 * An agent on the scripted model with the question server (the official
 * Python SDK, as startQuestionAgent) and the seed server, whose
 * `seed_delete` waits for approval: "deploy NAME" asks a form with a
 * choice, a number and a checkbox; "twice" asks for a name (text);
 * "delete ID" waits for approval.
 */
async function startInboxAgent(): Promise<Agent> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const rules = path.join(dir, 'rules.yaml');
  fs.writeFileSync(
    rules,
    [
      'rules:',
      '  - match: "^deploy (\\\\S+)"',
      '    steps:',
      '      - call: ask_env',
      '        args: {service: "$1"}',
      '      - reply: "tool said: {result}"',
      '  - match: "^twice"',
      '    steps:',
      '      - call: ask_twice',
      '      - reply: "tool said: {result}"',
      '  - match: "^delete (\\\\S+)"',
      '    steps:',
      '      - call: seed_delete',
      '        args: {id: "$1"}',
      '      - reply: "deleted"',
      '',
    ].join('\n'),
  );
  const config = [
    'name: e2e-inbox',
    'host: 127.0.0.1',
    'port: 0',
    `data_dir: ${path.join(dir, 'data')}`,
    `llm: {model: "scripted:${rules}"}`,
    'mcp_servers:',
    '  - name: q',
    `    command: ${path.join(root, '.tools', 'mcp-python', 'bin', 'python')}`,
    `    args: [${path.join(root, 'testdata', 'question_mcp_server.py')}, --era, both]`,
    '  - name: seed',
    '    command: python3',
    `    args: [${path.join(root, 'testdata', 'seed_mcp_server.py')}]`,
    '',
  ].join('\n');
  const configPath = path.join(dir, 'agent.yaml');
  fs.writeFileSync(configPath, config);
  const agent = new Agent(dir, configPath);
  await agent.start();
  return agent;
}

async function send(base: string, message: string): Promise<any> {
  const r = await fetch(`${base}/conversations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  });
  expect(r.status).toBe(201);
  return r.json();
}

let agent: Agent;

test.beforeAll(async () => {
  agent = await startInboxAgent();
  const base = agent.baseURL;
  expect((await send(base, 'deploy web')).result.waiting_input).toBe(true);
  await send(base, 'delete x');
  const approvals = await (await fetch(`${base}/approvals?limit=0`)).json();
  expect(approvals.total).toBe(1);
});

test.afterAll(async () => {
  await agent.stop();
  fs.rmSync(agent.dir, { recursive: true, force: true });
});

const widths = [390, 1280];

// Without JavaScript first: with it, the test then asks a second question.
for (const js of [false, true]) {
  test(`JavaScript ${js ? 'on' : 'off'}: one question and one approval waiting, the badge says 2`, async ({ browser }) => {
    const context = await browser.newContext({ javaScriptEnabled: js });
    const page = await context.newPage();
    for (const where of ['/ui/approvals', '/']) {
      await page.goto(`${agent.baseURL}${where}`);
      if (js) await hydrated(page);
      await expect(page.locator('#approvals-count')).toHaveText('2');
      await expect(page.locator('#approvals-count')).toHaveAttribute('aria-label', '2 waiting');
    }
    if (js) {
      // Counted again on a live event: a second question makes 3.
      expect((await send(agent.baseURL, 'twice')).result.waiting_input).toBe(true);
      await expect(page.locator('#approvals-count')).toHaveText('3');
    }
    await context.close();
  });
}

for (const js of [true, false]) {
  test.describe(`JavaScript ${js ? 'on' : 'off'}`, () => {
    test.use({ javaScriptEnabled: js });
    test.beforeAll(async () => {
      // The name question (a text field), unless the badge test asked it.
      const questions = await (await fetch(`${agent.baseURL}/questions?limit=0`)).json();
      if (questions.total < 2) await send(agent.baseURL, 'twice');
    });

    for (const width of widths) {
      test(`at ${width} px: the question fields stack alike, Approve and Reject stand apart`, async ({ page }, info) => {
        await page.setViewportSize({ width, height: 900 });
        await page.goto(`${agent.baseURL}/ui/approvals`);
        if (js) await hydrated(page);

        // The question forms: the name (text, asked by "twice"), the
        // environment (choice), the replicas (number), each under its
        // label, all one width and one look.
        const text = page.locator('.question-card input[type=text]').first();
        const number = page.locator('.question-card input[type=number]').first();
        const select = page.locator('.question-card select').first();
        await expect(text).toBeVisible();
        await expect(number).toBeVisible();
        const look = (l: typeof text) =>
          l.evaluate((e) => {
            const s = getComputedStyle(e);
            const r = e.getBoundingClientRect();
            const label = e.closest('.question-field')!.querySelector('label')!.getBoundingClientRect();
            return {
              display: s.display,
              width: Math.round(r.width),
              padding: s.padding,
              border: s.borderTopWidth + ' ' + s.borderTopStyle,
              radius: s.borderTopLeftRadius,
              font: s.fontSize,
              belowLabel: r.top >= label.bottom - 0.5,
            };
          });
        const [t, n, c] = [await look(text), await look(number), await look(select)];
        expect(t.display).toBe('block');
        expect(n).toEqual(t);
        expect(c).toEqual(t);
        expect(t.belowLabel).toBe(true);
        // As wide as the card allows, up to 32rem.
        const card = await page.locator('.question-card').first().boundingBox();
        expect(t.width).toBeGreaterThan(Math.min(card!.width - 40, 512 - 1));

        // Approve and Reject: side by side or stacked, never touching.
        const item = page.locator('#inbox .inbox-item').first();
        const approve = await item.getByRole('button', { name: /^Approve/ }).boundingBox();
        const reject = await item.getByRole('button', { name: /^Reject/ }).boundingBox();
        const apart = Math.max(
          reject!.x - (approve!.x + approve!.width),
          approve!.x - (reject!.x + reject!.width),
          reject!.y - (approve!.y + approve!.height),
          approve!.y - (reject!.y + reject!.height),
        );
        expect(apart).toBeGreaterThanOrEqual(8);

        await page.screenshot({ path: info.outputPath(`inbox-${width}.png`), fullPage: true });
      });
    }
  });
}
