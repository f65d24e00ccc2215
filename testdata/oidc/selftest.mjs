#!/usr/bin/env node
// Self-test for provider.mjs: starts it (public client, then confidential client),
// checks discovery/JWKS, /test/token (good, expired, nbf, none, HS256 confusion,
// unknown key, kid override), rotation, and a full authorization-code + PKCE +
// state + nonce flow driven with fetch (manual redirects, cookie jar).
//
//   node selftest.mjs        -> prints "N passed, 0 failed", exit 0 on success

import { spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

import * as jose from 'jose';

const here = fileURLToPath(new URL('.', import.meta.url));
let passed = 0;
let failed = 0;
function check(name, cond, extra = '') {
  if (cond) { passed += 1; process.stderr.write(`ok   ${name}\n`); } else { failed += 1; process.stderr.write(`FAIL ${name} ${extra}\n`); }
}
async function rejects(name, p) {
  try { await p; check(name, false, '(verified but should not)'); } catch (e) { check(`${name} [${e.code || e.name}]`, true); }
}

async function start(args) {
  const child = spawn(process.execPath, ['provider.mjs', '--port', '0', ...args], { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.on('data', (d) => { if (process.env.VERBOSE) process.stderr.write(d); });
  const rl = createInterface({ input: child.stdout });
  const [line] = await once(rl, 'line');
  const m = line.match(/^oidc-provider listening on (http:\/\/127\.0\.0\.1:\d+)$/);
  if (!m) throw new Error(`unexpected first line: ${line}`);
  rl.on('line', (l) => check('no further stdout lines', false, l));
  return { child, issuer: m[1] };
}
async function stop(child) {
  child.kill('SIGTERM');
  const [code, signal] = await once(child, 'exit');
  check('exits cleanly on SIGTERM', code === 0, `code=${code} signal=${signal}`);
}

const post = async (url, body) => {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
};

// Authorization code + PKCE flow with fetch: manual redirects, tiny cookie jar.
async function codeFlow(issuer, { clientId, clientSecret, login, redirectUri, scope = 'openid email profile groups', extra = {} }) {
  const jar = new Map();
  const req = async (url, init = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers || {}), ...(cookie ? { cookie } : {}) } });
    for (const c of r.headers.getSetCookie()) {
      const [kv] = c.split(';');
      const i = kv.indexOf('=');
      const k = kv.slice(0, i);
      const v = kv.slice(i + 1);
      if (/expires=Thu, 01 Jan 1970/i.test(c) || v === '') jar.delete(k); else jar.set(k, v);
    }
    return r;
  };
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const state = crypto.randomBytes(8).toString('hex');
  const nonce = crypto.randomBytes(8).toString('hex');
  const authUrl = new URL(`${issuer}/auth`);
  Object.entries({
    client_id: clientId, response_type: 'code', scope, redirect_uri: redirectUri,
    state, nonce, code_challenge: challenge, code_challenge_method: 'S256', ...extra,
  }).forEach(([k, v]) => authUrl.searchParams.set(k, v));

  let r = await req(authUrl);
  let loc = r.headers.get('location');
  let pages = 0;
  let url = new URL(loc, issuer);
  for (let hops = 0; hops < 20 && !url.href.startsWith(redirectUri); hops += 1) {
    r = await req(url);
    if (r.status === 200) {
      const html = await r.text();
      pages += 1;
      if (!/name="login"/.test(html) || !/name="password"/.test(html)) throw new Error(`unexpected page: ${html.slice(0, 500)}`);
      const action = html.match(/<form[^>]*action="([^"]+)"/)[1];
      const form = new URLSearchParams({ prompt: 'login', login, password: 'whatever' });
      r = await req(new URL(action, url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    }
    loc = r.headers.get('location');
    if (!loc) throw new Error(`no redirect from ${url} (status ${r.status}): ${(await r.text()).slice(0, 500)}`);
    url = new URL(loc, url);
  }
  const cb = url;
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  const tokenForm = new URLSearchParams({ grant_type: 'authorization_code', code: cb.searchParams.get('code') || '', redirect_uri: redirectUri, code_verifier: verifier });
  if (clientSecret) headers.authorization = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
  else tokenForm.set('client_id', clientId);
  const tr = await fetch(`${issuer}/token`, { method: 'POST', headers, body: tokenForm });
  return { cb, state, nonce, pages, req, tokenStatus: tr.status, tokens: await tr.json() };
}

async function suite({ secret }) {
  const args = secret ? ['--client-secret', secret] : [];
  const { child, issuer } = await start(args);
  try {
    const disc = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
    check('discovery issuer', disc.issuer === issuer);
    check('discovery S256', disc.code_challenge_methods_supported?.includes('S256'));
    let JWKS = jose.createRemoteJWKSet(new URL(disc.jwks_uri));
    const jwks1 = await (await fetch(disc.jwks_uri)).json();
    check('jwks has RS256 and ES256', ['RS256', 'ES256'].every((a) => jwks1.keys.some((k) => k.alg === a)));
    const vopts = { issuer, audience: 'stop-and-go' };

    // --- /test/token
    const good = (await post(`${issuer}/test/token`, { sub: 'alice' })).json.token;
    const { payload: p1, protectedHeader: h1 } = await jose.jwtVerify(good, JWKS, vopts);
    check('RS256 token verifies', h1.alg === 'RS256' && p1.sub === 'alice');
    check('claims email/name/groups', p1.email === 'alice@example.test' && p1.name === 'alice' && JSON.stringify(p1.groups) === '["sre-oncall"]');
    check('exp ~ +300', p1.exp - p1.iat === 300);
    const es = (await post(`${issuer}/test/token`, { sub: 'carol', alg: 'ES256' })).json.token;
    const { payload: p2, protectedHeader: h2 } = await jose.jwtVerify(es, JWKS, vopts);
    check('ES256 token verifies', h2.alg === 'ES256' && JSON.stringify(p2.groups) === '["platform-admins"]');
    const dave = jose.decodeJwt((await post(`${issuer}/test/token`, { sub: 'dave' })).json.token);
    check('unknown user has no groups', Array.isArray(dave.groups) && dave.groups.length === 0);
    await rejects('expired token fails', jose.jwtVerify((await post(`${issuer}/test/token`, { sub: 'alice', exp_in: -60 })).json.token, JWKS, vopts));
    await rejects('nbf in future fails', jose.jwtVerify((await post(`${issuer}/test/token`, { sub: 'alice', nbf_in: 120 })).json.token, JWKS, vopts));
    await rejects('wrong aud fails', jose.jwtVerify((await post(`${issuer}/test/token`, { sub: 'alice', aud: 'other' })).json.token, JWKS, vopts));
    await rejects('wrong iss fails', jose.jwtVerify((await post(`${issuer}/test/token`, { sub: 'alice', iss: 'http://evil.test' })).json.token, JWKS, vopts));
    const none = (await post(`${issuer}/test/token`, { sub: 'alice', alg: 'none' })).json.token;
    check('alg none is unsigned', none.endsWith('.') && jose.decodeProtectedHeader(none).alg === 'none');
    await rejects('alg none fails', jose.jwtVerify(none, JWKS, vopts));
    const hs = (await post(`${issuer}/test/token`, { sub: 'alice', alg: 'HS256' })).json.token;
    await rejects('HS256 key confusion fails against JWKS', jose.jwtVerify(hs, JWKS, vopts));
    {
      // ...but it really is HMAC'd with the RS256 public key PEM
      const rsJwk = jwks1.keys.find((k) => k.alg === 'RS256');
      const pem = crypto.createPublicKey({ key: rsJwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
      const { payload } = await jose.jwtVerify(hs, new TextEncoder().encode(pem), vopts);
      check('HS256 secret is the RS256 public PEM', payload.sub === 'alice');
    }
    const unk = (await post(`${issuer}/test/token`, { sub: 'alice', unknown_key: true })).json.token;
    check('unknown_key kid not in JWKS', !jwks1.keys.some((k) => k.kid === jose.decodeProtectedHeader(unk).kid));
    await rejects('unknown_key fails', jose.jwtVerify(unk, JWKS, vopts));
    const kidOv = (await post(`${issuer}/test/token`, { sub: 'alice', kid: 'nope' })).json.token;
    check('kid override', jose.decodeProtectedHeader(kidOv).kid === 'nope');
    check('missing sub -> 400', (await post(`${issuer}/test/token`, {})).status === 400);

    // --- authorization code + PKCE (redirect on a port the provider never heard of)
    const cbPort = 40000 + Math.floor(Math.random() * 20000);
    for (const host of ['127.0.0.1', 'localhost']) {
      const redirectUri = `http://${host}:${cbPort}/ui/auth/callback`;
      const f = await codeFlow(issuer, { clientId: 'stop-and-go-ui', clientSecret: secret, login: 'alice', redirectUri });
      check(`[${host}] callback has code, state, iss`, f.cb.searchParams.get('code') && f.cb.searchParams.get('state') === f.state && f.cb.searchParams.get('iss') === issuer);
      check(`[${host}] exactly one page (login, no consent)`, f.pages === 1, `pages=${f.pages}`);
      check(`[${host}] token endpoint 200`, f.tokenStatus === 200, JSON.stringify(f.tokens));
      const { payload: idt, protectedHeader: ih } = await jose.jwtVerify(f.tokens.id_token, JWKS, { issuer, audience: 'stop-and-go-ui' });
      check(`[${host}] id_token nonce/email/name/groups`, ih.alg === 'RS256' && idt.nonce === f.nonce && idt.sub === 'alice' && idt.email === 'alice@example.test' && idt.name === 'alice' && JSON.stringify(idt.groups) === '["sre-oncall"]', JSON.stringify(idt));
      const { payload: at, protectedHeader: ah } = await jose.jwtVerify(f.tokens.access_token, JWKS, vopts);
      check(`[${host}] access token is RS256 JWT aud=stop-and-go with claims`, ah.alg === 'RS256' && ah.typ === 'at+jwt' && at.aud === 'stop-and-go' && at.sub === 'alice' && at.email === 'alice@example.test' && JSON.stringify(at.groups) === '["sre-oncall"]', JSON.stringify({ ah, at }));
    }
    {
      const f = await codeFlow(issuer, { clientId: 'stop-and-go-ui', clientSecret: secret, login: 'bob', redirectUri: `http://127.0.0.1:${cbPort}/ui/auth/callback`, scope: 'openid' });
      const idt = jose.decodeJwt(f.tokens.id_token);
      check('scope=openid only: id_token still has email/groups', idt.email === 'bob@example.test' && JSON.stringify(idt.groups) === '["sre"]', JSON.stringify(idt));
      // RP-initiated logout back to a loopback URI on an unregistered port
      const post = `http://127.0.0.1:${cbPort}/ui/`;
      const u = new URL(`${issuer}/session/end`);
      u.searchParams.set('id_token_hint', f.tokens.id_token);
      u.searchParams.set('post_logout_redirect_uri', post);
      const r1 = await f.req(u);
      const html = await r1.text();
      const action = html.match(/<form[^>]*action="([^"]+)"/)?.[1];
      const xsrf = html.match(/name="xsrf" value="([^"]+)"/)?.[1];
      check('logout page has button[name=logout]', r1.status === 200 && /name="logout"/.test(html) && action && xsrf, html.slice(0, 300));
      const r2 = await f.req(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ xsrf, logout: 'yes' }) });
      let loc = r2.headers.get('location');
      for (let i = 0; i < 5 && loc && !loc.startsWith(post); i += 1) {
        loc = (await f.req(new URL(loc, issuer))).headers.get('location');
      }
      check('logout redirects to post_logout_redirect_uri', loc?.startsWith(post), `${r2.status} ${loc}`);
    }
    {
      const f = await codeFlow(issuer, { clientId: 'stop-and-go-ui', clientSecret: secret, login: 'dave', redirectUri: `http://127.0.0.1:${cbPort}/ui/auth/callback`, scope: 'openid api', extra: { resource: 'urn:stop-and-go', prompt: 'login' } });
      const at = jose.decodeJwt(f.tokens.access_token);
      check('explicit resource + scope api: aud, scope claim', f.pages === 1 && at.aud === 'stop-and-go' && at.scope === 'api' && at.sub === 'dave' && Array.isArray(at.groups) && at.groups.length === 0, JSON.stringify(at));
      if (process.env.VERBOSE) process.stderr.write(`${JSON.stringify({ at, idt: jose.decodeJwt(f.tokens.id_token), resp: { ...f.tokens, access_token: '…', id_token: '…' } }, null, 1)}\n`);
    }
    {
      // a redirect_uri with another path must be refused
      const u = new URL(`${issuer}/auth`);
      Object.entries({ client_id: 'stop-and-go-ui', response_type: 'code', scope: 'openid', redirect_uri: `http://127.0.0.1:${cbPort}/evil`, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' }).forEach(([k, v]) => u.searchParams.set(k, v));
      const r = await fetch(u, { redirect: 'manual' });
      check('foreign redirect_uri rejected', r.status === 400, `status ${r.status}`);
    }

    // --- real provider token via client credentials (internal client)
    const cc = await post(`${issuer}/test/client-credentials-token`, {});
    const { payload: ccp, protectedHeader: cch } = await jose.jwtVerify(cc.json.token, JWKS, vopts);
    check('client-credentials token: JWT aud=stop-and-go', ccp.aud === 'stop-and-go' && cch.kid === jwks1.keys[0].kid);
    if (secret) {
      const r = await fetch(`${issuer}/token`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`stop-and-go-ui:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
      const j = await r.json();
      check('main confidential client: client_credentials JWT', r.status === 200 && jose.decodeJwt(j.access_token).aud === 'stop-and-go', JSON.stringify(j));
    }

    // --- rotation
    const rot = await post(`${issuer}/test/rotate`, { keep_old: false });
    const jwks2 = await (await fetch(disc.jwks_uri)).json();
    check('rotate: new kid published, old dropped', jwks2.keys.some((k) => k.kid === rot.json.kid) && !jwks2.keys.some((k) => k.kid === h1.kid) && jwks2.keys.length === 2);
    JWKS = jose.createRemoteJWKSet(new URL(disc.jwks_uri)); // fresh cache
    await rejects('old-key token fails after rotate(keep_old=false)', jose.jwtVerify(good, JWKS, vopts));
    const after = (await post(`${issuer}/test/token`, { sub: 'alice' })).json.token;
    check('minted token uses the new kid', jose.decodeProtectedHeader(after).kid === rot.json.kid);
    const cc2 = (await post(`${issuer}/test/client-credentials-token`, {})).json.token;
    check('provider-issued token uses the new kid', jose.decodeProtectedHeader(cc2).kid === rot.json.kid);
    const f2 = await codeFlow(issuer, { clientId: 'stop-and-go-ui', clientSecret: secret, login: 'carol', redirectUri: `http://localhost:${cbPort}/ui/auth/callback` });
    check('code flow after rotate: id_token + access token with new kid', jose.decodeProtectedHeader(f2.tokens.id_token).kid === rot.json.kid && jose.decodeProtectedHeader(f2.tokens.access_token).kid === rot.json.kid);
    await jose.jwtVerify(f2.tokens.access_token, JWKS, vopts);
    const rot2 = await post(`${issuer}/test/rotate`, { keep_old: true });
    const jwks3 = await (await fetch(disc.jwks_uri)).json();
    check('rotate keep_old: both kids published, new first', jwks3.keys[0].kid === rot2.json.kid && jwks3.keys.some((k) => k.kid === rot.json.kid) && jwks3.keys.length === 4);
  } finally {
    await stop(child);
  }
}

await suite({});
await suite({ secret: 's3cret' });
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
