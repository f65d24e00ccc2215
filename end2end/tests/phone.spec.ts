// The approver on a phone (REACH.md §1, issue 40's benchmark): Chromium's
// network emulation at 1.6 Mbps down, 750 kbps up, 150 ms latency, a
// 375 px wide screen and a cold cache. From navigation start to the first
// press of Approve that takes effect (the approval's `decided_at` on the
// server; browser, test and server share this machine's clock), beside
// the first contentful paint of the same load, median of five. The line
// starting with "PHONE" is read by `make bench`.
import { test, expect, startResourcesAgent } from './agent';
import * as fs from 'node:fs';
import * as path from 'node:path';

const RUNS = 5;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** The brotli size of the site's WebAssembly, in bytes. */
function wasmBrotliBytes(): number {
  const pkg = path.resolve(__dirname, '..', '..', 'target', 'site', 'pkg');
  const f = fs.readdirSync(pkg).find((n) => n.endsWith('.wasm.br'));
  return f ? fs.statSync(path.join(pkg, f)).size : 0;
}

test('on a slow phone link the first press of Approve takes effect before the app has loaded', async ({ browser }) => {
  test.setTimeout(240_000);
  const agent = await startResourcesAgent();
  const base = agent.baseURL;
  const pressed: number[] = [];
  const painted: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const r = await fetch(`${base}/conversations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: `add apples ${i + 1}` }),
      });
      expect(r.status).toBe(201);
      const body = await r.json();
      const id = body.conversation.id as string;
      const uuid = body.result.approval.uuid as string;

      // A fresh context: an empty cache, as on the phone that opens the link.
      const ctx = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
      const page = await ctx.newPage();
      let paintAt = 0;
      await page.exposeFunction('stopgoPainted', (t: number) => {
        if (!paintAt) paintAt = t;
      });
      await page.addInitScript(() => {
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) {
            if (e.name === 'first-contentful-paint') (window as any).stopgoPainted(performance.timeOrigin + e.startTime);
          }
        }).observe({ type: 'paint', buffered: true });
      });
      const cdp = await ctx.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false,
        latency: 150,
        downloadThroughput: 1.6e6 / 8,
        uploadThroughput: 750e3 / 8,
      });
      const started = Date.now();
      page.goto(`${base}/ui/conversations/${id}`).catch(() => {});
      const approve = page.locator('.approval-card').getByRole('button', { name: 'Approve' });
      // Press as soon as the button can be pressed; press again only when
      // a press did not take effect within a second (what a person does).
      let decidedAt = 0;
      for (let attempt = 0; attempt < 20 && !decidedAt; attempt++) {
        await approve.click({ timeout: 15_000, noWaitAfter: true }).catch(() => {});
        const until = Date.now() + 1_000;
        while (Date.now() < until && !decidedAt) {
          const c = await (await fetch(`${base}/conversations/${id}`)).json();
          const call = c.conversation.messages.find((m: any) => m.tool_call?.approval?.uuid === uuid)?.tool_call;
          if (call?.approval?.decided_at) decidedAt = Date.parse(call.approval.decided_at);
          else await new Promise((ok) => setTimeout(ok, 20));
        }
      }
      expect(decidedAt, 'the approval was decided').toBeGreaterThan(0);
      pressed.push(decidedAt - started);
      painted.push(paintAt ? paintAt - started : NaN);
      await ctx.close();
    }
  } finally {
    await agent.stop();
    fs.rmSync(agent.dir, { recursive: true, force: true });
  }
  console.log(
    `PHONE press_ms=${median(pressed).toFixed(0)} paint_ms=${median(painted).toFixed(0)} wasm_br_bytes=${wasmBrotliBytes()} press_runs=${pressed.map((x) => x.toFixed(0)).join(',')}`,
  );
});
