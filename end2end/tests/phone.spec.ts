// The approver on a phone (REACH.md §1, issue 40's benchmark): Chromium's
// network emulation at 1.6 Mbps down, 750 kbps up, 150 ms latency, a
// 375 px wide screen and a cold cache. From navigation start to the first
// press of Approve that takes effect (the approval's `decided_at` on the
// server; browser, test and server share this machine's clock), beside
// the first contentful paint of the same load, median of five. The line
// starting with "PHONE" is read by `make bench`.
//
// "Before the app has loaded" is made true, not hoped for: the app's
// JavaScript and WebAssembly (`/pkg/*.js`, `/pkg/*.wasm`) are held at the
// browser's door until the press has taken effect, so the one press there
// is can only be the page's plain form post (a navigation POST to
// `/ui/approvals/UUID/decide`, decided `via: ui`); released then, the
// next page hydrates, which shows that what was held was the app.
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
      // The app's code waits here until the press has taken effect.
      let release = () => {};
      const released = new Promise<void>((ok) => (release = ok));
      let held = 0;
      let askedForCode = () => {};
      const codeAsked = new Promise<void>((ok) => (askedForCode = ok));
      await page.route(/\/pkg\/[^/?]+\.(js|wasm)(\?.*)?$/, async (route) => {
        held += 1;
        askedForCode();
        await released;
        await route.continue().catch(() => {});
      });
      const formPost = page.waitForRequest(
        (r) => r.method() === 'POST' && r.url().endsWith(`/ui/approvals/${uuid}/decide`),
        { timeout: 30_000 },
      );
      const started = Date.now();
      page.goto(`${base}/ui/conversations/${id}`).catch(() => {});
      const approve = page.locator('.approval-card').getByRole('button', { name: 'Approve' });
      await approve.waitFor({ state: 'visible', timeout: 30_000 });
      // The page has asked for its code and got none: it cannot have
      // hydrated.
      await Promise.race([
        codeAsked,
        new Promise((_, no) => setTimeout(() => no(new Error('the page never asked for its code')), 30_000)),
      ]);
      expect(await page.locator('.app[data-hydrated="true"]').count(), 'not hydrated at the press').toBe(0);
      // One press, as a person makes it.
      await approve.click({ noWaitAfter: true });
      const post = await formPost;
      expect(post.isNavigationRequest(), 'the press was a form post, not a script\'s request').toBe(true);
      expect(post.postData() ?? '').toContain('decision=approve');
      let call: any;
      const until = Date.now() + 15_000;
      while (Date.now() < until && !call?.approval?.decided_at) {
        const c = await (await fetch(`${base}/conversations/${id}`)).json();
        call = c.conversation.messages.find((m: any) => m.tool_call?.approval?.uuid === uuid)?.tool_call;
        if (!call?.approval?.decided_at) await new Promise((ok) => setTimeout(ok, 20));
      }
      expect(call?.approval?.decided_at, 'the one press decided the approval').toBeTruthy();
      expect(['approved', 'executing', 'executed'], 'approved, not rejected').toContain(call.approval.status);
      expect(call.approval.decided_via).toBe('ui');
      const decidedAt = Date.parse(call.approval.decided_at);
      expect(held, 'the app\'s code was held until then').toBeGreaterThan(0);
      release();
      // The form's answer is the conversation page again; with its code
      // let through, it hydrates.
      await expect(page.locator('.approval-outcome').first()).toContainText('Approved', { timeout: 30_000 });
      await expect(page.locator('.app[data-hydrated="true"]')).toHaveCount(1, { timeout: 60_000 });
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
