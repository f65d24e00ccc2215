import { test, expect } from './agent';

// REACH.md §1: the inbox is an installable web app. The checks are the
// installability criteria browsers apply (and Lighthouse's former
// "installable manifest" audit): the page links a manifest that parses,
// with a name, a start_url in scope, display standalone, and PNG icons of
// 192 and 512 px that load and are the size they claim; it works before
// any script runs (the link is in the server-rendered head).

function pngSize(body: Buffer): [number, number] {
  expect(body.subarray(0, 8).toString('hex'), 'a PNG signature').toBe('89504e470d0a1a0a');
  return [body.readUInt32BE(16), body.readUInt32BE(20)];
}

test.describe('without JavaScript', () => {
  test.use({ javaScriptEnabled: false });

  test('the inbox links a manifest that makes it installable', async ({ page, agent }) => {
    await page.goto(agent.baseURL + '/ui/approvals');
    const href = await page.locator('link[rel="manifest"]').getAttribute('href');
    expect(href).toBe('/manifest.webmanifest');
    const theme = await page.locator('meta[name="theme-color"]').getAttribute('content');
    expect(theme).toMatch(/^#[0-9a-f]{6}$/);

    const r = await page.request.get(agent.baseURL + href!);
    expect(r.status()).toBe(200);
    expect(r.headers()['content-type']).toContain('application/manifest+json');
    const m = await r.json();
    expect(m.name).toBe('Stop & Go');
    expect(m.short_name.length).toBeLessThanOrEqual(12);
    expect(m.start_url).toBe('/ui/approvals');
    expect(m.display).toBe('standalone');
    const scope = new URL(m.scope ?? '/', agent.baseURL).pathname;
    expect(new URL(m.start_url, agent.baseURL).pathname.startsWith(scope)).toBe(true);
    expect(m.theme_color).toBe(theme);

    const sizes = new Set<string>();
    for (const icon of m.icons) {
      expect(icon.type).toBe('image/png');
      const got = await page.request.get(new URL(icon.src, agent.baseURL).toString());
      expect(got.status(), icon.src).toBe(200);
      expect(got.headers()['content-type']).toBe('image/png');
      const [w, h] = pngSize(await got.body());
      expect(`${w}x${h}`, icon.src).toBe(icon.sizes);
      if ((icon.purpose ?? 'any').split(' ').includes('any')) sizes.add(icon.sizes);
    }
    expect([...sizes].sort()).toEqual(['192x192', '512x512']);

    // Fetched without credentials, as browsers fetch manifests.
    const anon = await fetch(agent.baseURL + href!);
    expect(anon.status).toBe(200);
  });
});
