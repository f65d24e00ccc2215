#!/usr/bin/env node
// Test-only OpenID provider for Stop & Go, built on the certified `oidc-provider`.
//
//   node provider.mjs [--port N] [--client-id ID] [--client-secret S] [--audience AUD]
//                     [--client-auth-method client_secret_basic|client_secret_post]
//                     [--access-token-ttl SECONDS]
//
// Prints exactly one line to stdout once listening:
//   oidc-provider listening on http://127.0.0.1:PORT
// (that URL is the issuer). Everything else goes to stderr. See README.md.
//
// NOT FOR PRODUCTION: any login name is accepted with any password, consent is
// granted automatically, and /test/* mints arbitrary (also deliberately broken) tokens.

import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors as oidcErrors, interactionPolicy } from 'oidc-provider';
import * as jose from 'jose';

// ---------------------------------------------------------------------------
// stdout is reserved for the single "listening" line; route every other
// console output (including oidc-provider's own notices) to stderr.
const log = (...args) => process.stderr.write(`[oidc] ${args.join(' ')}\n`);
console.log = console.error;
console.info = console.error;
console.warn = console.error;

// ---------------------------------------------------------------------------
// Flags

let flags;
try {
  ({ values: flags } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      'client-id': { type: 'string', default: 'stop-and-go-ui' },
      'client-secret': { type: 'string' },
      audience: { type: 'string', default: 'stop-and-go' },
      'client-auth-method': { type: 'string', default: 'client_secret_basic' },
      'access-token-ttl': { type: 'string', default: '3600' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (err) {
  log(`${err.message}; usage: node provider.mjs [--port N] [--client-id ID] [--client-secret S] [--audience AUD]`);
  process.exit(2);
}

if (flags.help) {
  process.stderr.write('usage: node provider.mjs [--port N] [--client-id ID] [--client-secret S] [--audience AUD]\n');
  process.exit(0);
}

const PORT = Number.parseInt(flags.port, 10);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) {
  log(`invalid --port ${flags.port}`);
  process.exit(2);
}
const CLIENT_ID = flags['client-id'];
const CLIENT_SECRET = flags['client-secret'];
const AUDIENCE = flags.audience;
const CLIENT_AUTH_METHOD = flags['client-auth-method'];
if (!['client_secret_basic', 'client_secret_post'].includes(CLIENT_AUTH_METHOD)) {
  log(`invalid --client-auth-method ${CLIENT_AUTH_METHOD}`);
  process.exit(2);
}
const ACCESS_TOKEN_TTL = Number.parseInt(flags['access-token-ttl'], 10);
if (!Number.isInteger(ACCESS_TOKEN_TTL) || ACCESS_TOKEN_TTL < 1) {
  log(`invalid --access-token-ttl ${flags['access-token-ttl']}`);
  process.exit(2);
}
// RFC 8707 resource indicators must be absolute URIs; the token `aud` is AUDIENCE
// regardless. A plain name like "stop-and-go" becomes the indicator "urn:stop-and-go".
const RESOURCE = URL.parse(AUDIENCE) ? AUDIENCE : `urn:${AUDIENCE}`;
const RESOURCE_SCOPE = 'api';
// Internal confidential client used by POST /test/client-credentials-token.
const CC_CLIENT_ID = 'test-control-cc';
const CC_CLIENT_SECRET = crypto.randomBytes(24).toString('base64url');

// ---------------------------------------------------------------------------
// Accounts

const GROUPS = {
  alice: ['sre-oncall'],
  bob: ['sre'],
  carol: ['platform-admins'],
};

function accountClaims(sub) {
  return {
    sub,
    email: `${sub}@example.test`,
    email_verified: true,
    name: sub,
    groups: [...(Object.hasOwn(GROUPS, sub) ? GROUPS[sub] : [])],
  };
}

// ---------------------------------------------------------------------------
// Keys. Each generation has one RS256 and one ES256 key; the current pair is
// first in the list, which is what oidc-provider signs with.

let generation = 0;
let signingKeys = []; // private JWKs, current first

async function newKey(alg) {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  const kid = `${alg.toLowerCase()}-${generation}-${crypto.randomBytes(6).toString('base64url')}`;
  return { ...jwk, kid, alg, use: 'sig' };
}

async function newGeneration() {
  generation += 1;
  return [await newKey('RS256'), await newKey('ES256')];
}

const currentKey = (alg) => signingKeys.find((k) => k.alg === alg);
const publicJwk = ({ d, p, q, dp, dq, qi, ...pub }) => pub;

// ---------------------------------------------------------------------------
// Provider (rebuilt on key rotation; the in-memory adapter's storage is module
// global, so sessions, grants and codes survive a rebuild).

const COOKIE_KEYS = [crypto.randomBytes(32).toString('base64url')];
let issuer;
let provider;
let providerHandler;

function buildProvider() {
  const policy = interactionPolicy.base();
  // oidc-provider forces a consent prompt for native clients on every
  // authorization; drop that check so auto-granted consent means no consent page.
  policy.get('consent').checks.remove('native_client_prompt');

  const loopbackRedirects = [
    'http://127.0.0.1/ui/auth/callback',
    'http://localhost/ui/auth/callback',
  ];

  const mainClient = {
    client_id: CLIENT_ID,
    client_name: 'Stop & Go (test)',
    // "native" enables RFC 8252 section 7.3 port-agnostic matching of
    // http://127.0.0.1 / http://localhost / http://[::1] redirect URIs.
    application_type: 'native',
    redirect_uris: loopbackRedirects,
    post_logout_redirect_uris: ['http://127.0.0.1/ui/', 'http://localhost/ui/', 'http://127.0.0.1/', 'http://localhost/'],
    response_types: ['code'],
    grant_types: CLIENT_SECRET
      ? ['authorization_code', 'refresh_token', 'client_credentials']
      : ['authorization_code', 'refresh_token'],
    ...(CLIENT_SECRET
      ? { client_secret: CLIENT_SECRET, token_endpoint_auth_method: CLIENT_AUTH_METHOD }
      : { token_endpoint_auth_method: 'none' }),
  };

  const ccClient = {
    client_id: CC_CLIENT_ID,
    client_secret: CC_CLIENT_SECRET,
    redirect_uris: [],
    response_types: [],
    grant_types: ['client_credentials'],
    token_endpoint_auth_method: 'client_secret_basic',
  };

  const p = new Provider(issuer, {
    clients: [mainClient, ccClient],
    jwks: { keys: signingKeys },
    cookies: {
      keys: COOKIE_KEYS,
      // plain http on 127.0.0.1: cookies are never marked Secure (ctx.secure is false)
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    claims: {
      // Requested with just "openid", the ID token still carries these.
      openid: ['sub', 'email', 'email_verified', 'name', 'groups'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false }, // our own minimal login form (no external CSS/fonts)
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        // Same buttons as oidc-provider's default page, minus the external web font.
        logoutSource: async (ctx, form) => {
          ctx.body = page('Logout Request', `<h1>Sign out from ${esc(ctx.host)}?</h1>
${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout" id="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm" id="stay">No, stay signed in</button>`);
        },
        postLogoutSuccessSource: async (ctx) => {
          ctx.body = page('Sign-out Success', '<h1 id="signed-out">Sign-out Success</h1>');
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf ?? RESOURCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => {
          if (resourceIndicator !== RESOURCE && resourceIndicator !== AUDIENCE) {
            throw new oidcErrors.InvalidTarget();
          }
          return {
            scope: RESOURCE_SCOPE,
            audience: AUDIENCE,
            accessTokenTTL: ACCESS_TOKEN_TTL,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    interactions: {
      policy,
      url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
    },
    // Auto-consent: every authorization request gets a grant covering everything
    // it asked for (OIDC scopes, claims, resource scopes), so only login is shown.
    loadExistingGrant: async (ctx) => {
      const { oidc } = ctx;
      const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
      let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      if (!grant || grant.accountId !== oidc.session.accountId) {
        grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
      }
      const oidcScopes = [...(oidc.requestParamOIDCScopes || [])];
      if (oidcScopes.length) grant.addOIDCScope(oidcScopes.join(' '));
      const claims = [...(oidc.requestParamClaims || [])];
      if (claims.length) grant.addOIDCClaims(claims);
      for (const [indicator, rs] of Object.entries(oidc.resourceServers || {})) {
        grant.addResourceScope(indicator, rs.scope);
      }
      await grant.save();
      return grant;
    },
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: async () => accountClaims(sub),
    }),
    extraTokenClaims: async (_ctx, token) => {
      if (!token.accountId) return undefined;
      const { email, name, groups } = accountClaims(token.accountId);
      return { email, name, groups };
    },
    ttl: {
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL || 3600,
      ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL || 600,
      IdToken: 3600,
      Interaction: 3600,
      Session: 24 * 3600,
      Grant: 24 * 3600,
      RefreshToken: 24 * 3600,
    },
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = page('Error', `<h1>Error</h1><pre id="error">${Object.entries(out)
        .map(([k, v]) => `${esc(k)}: ${esc(v)}`).join('\n')}</pre>`);
    },
  });
  p.proxy = false;
  for (const ev of ['server_error', 'authorization.error', 'grant.error', 'end_session.error', 'userinfo.error', 'jwks.error', 'introspection.error', 'revocation.error']) {
    p.on(ev, (...args) => {
      const err = args.find((a) => a instanceof Error);
      log(`${ev}: ${err ? `${err.name}: ${err.message}${err.error_description ? ` (${err.error_description})` : ''}` : ''}`);
    });
  }
  provider = p;
  providerHandler = p.callback();
}

// ---------------------------------------------------------------------------
// Minimal HTML for the interactions (no external resources).

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
const page = (title, body) => `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:sans-serif;max-width:22em;margin:3em auto}input,button{display:block;width:100%;margin:.4em 0;padding:.4em;box-sizing:border-box}</style>
</head><body>${body}</body></html>`;

function loginPage(uid, params) {
  const hint = params.login_hint ? ` value="${esc(params.login_hint)}"` : ' autofocus';
  return page('Sign-in', `<h1>Sign-in</h1>
<p>Test provider: any login, any password.</p>
<form id="login-form" autocomplete="off" action="/interaction/${esc(uid)}" method="post">
  <input type="hidden" name="prompt" value="login">
  <input required type="text" name="login" id="login" placeholder="Enter any login"${hint}>
  <input required type="password" name="password" id="password" placeholder="and password"${params.login_hint ? ' autofocus' : ''}>
  <button type="submit" id="submit" class="login login-submit">Sign-in</button>
</form>
<p><a id="abort" href="/interaction/${esc(uid)}/abort">Cancel</a></p>`);
}

async function readBody(req, limit = 1 << 20) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > limit) throw Object.assign(new Error('body too large'), { status: 413 });
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res, status, type, body, headers = {}) {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}
const sendJson = (res, status, obj) => send(res, status, 'application/json; charset=utf-8', JSON.stringify(obj));

async function autoConsent(details) {
  const { prompt: { details: d }, grantId, session, params } = details;
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  if (d.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  return grant.save();
}

async function handleInteraction(req, res, url) {
  const m = url.pathname.match(/^\/interaction\/([^/]+)(\/abort)?$/);
  if (!m) return send(res, 404, 'text/plain', 'not found');
  const [, uid, abort] = m;
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (err) {
    log(`interaction ${uid}: ${err.message}`);
    return send(res, 400, 'text/html; charset=utf-8', page('Error', `<h1>Error</h1><pre id="error">${esc(err.message)}</pre>`));
  }
  if (details.uid !== uid) return send(res, 400, 'text/plain', 'interaction mismatch');

  if (abort) {
    return provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'End-User aborted interaction',
    }, { mergeWithLastSubmission: false });
  }

  if (req.method === 'GET') {
    if (details.prompt.name === 'login') {
      return send(res, 200, 'text/html; charset=utf-8', loginPage(uid, details.params));
    }
    if (details.prompt.name === 'consent') {
      // Should not normally be reached (loadExistingGrant auto-grants); approve anyway.
      const grantId = await autoConsent(details);
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    }
    return send(res, 501, 'text/plain', `prompt ${details.prompt.name} not implemented`);
  }

  if (req.method === 'POST') {
    const form = new URLSearchParams(await readBody(req));
    const login = (form.get('login') || '').trim();
    if (details.prompt.name !== 'login' || !login) {
      return send(res, 400, 'text/html; charset=utf-8', loginPage(uid, details.params));
    }
    log(`login: ${login}`);
    return provider.interactionFinished(req, res, {
      login: { accountId: login, amr: ['pwd'] },
    }, { mergeWithLastSubmission: false });
  }
  return send(res, 405, 'text/plain', 'method not allowed');
}

// ---------------------------------------------------------------------------
// Test control API (/test/*)

const b64json = (obj) => Buffer.from(JSON.stringify(obj)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

async function mintToken(body) {
  if (typeof body.sub !== 'string' || !body.sub) throw badRequest('"sub" (non-empty string) is required');
  const alg = body.alg ?? 'RS256';
  if (!['RS256', 'ES256', 'none', 'HS256'].includes(alg)) throw badRequest(`unsupported alg ${alg}`);

  const t = now();
  const iat = t + (Number.isFinite(body.iat_in) ? body.iat_in : 0);
  const payload = {
    ...accountClaims(body.sub),
    iss: body.iss ?? issuer,
    aud: body.aud ?? AUDIENCE,
    iat,
    exp: t + (Number.isFinite(body.exp_in) ? body.exp_in : 300),
    jti: crypto.randomBytes(12).toString('base64url'),
    client_id: CLIENT_ID,
  };
  delete payload.email_verified;
  if (Number.isFinite(body.nbf_in)) payload.nbf = t + body.nbf_in;
  if (body.claims && typeof body.claims === 'object') {
    for (const [k, v] of Object.entries(body.claims)) {
      if (v === null) delete payload[k]; else payload[k] = v;
    }
  }
  const typ = body.typ === undefined ? 'at+jwt' : body.typ;

  if (alg === 'none') {
    const header = { alg: 'none', ...(typ ? { typ } : {}), ...(typeof body.kid === 'string' ? { kid: body.kid } : {}) };
    return `${b64json(header)}.${b64json(payload)}.`;
  }

  let key;
  let kid;
  if (alg === 'HS256') {
    // Key confusion: HMAC keyed with the current RS256 *public* key.
    const rs = currentKey('RS256');
    const from = body.hs_secret_from ?? 'pem';
    let secret;
    if (typeof body.hs_secret === 'string') {
      secret = body.hs_secret;
    } else if (from === 'pem') {
      secret = crypto.createPublicKey({ key: publicJwk(rs), format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    } else if (from === 'pem_pkcs1') {
      secret = crypto.createPublicKey({ key: publicJwk(rs), format: 'jwk' }).export({ type: 'pkcs1', format: 'pem' });
    } else if (from === 'jwk') {
      secret = JSON.stringify(publicJwk(rs));
    } else {
      throw badRequest('hs_secret_from must be pem, pem_pkcs1 or jwk');
    }
    key = new TextEncoder().encode(secret);
    kid = rs.kid;
  } else if (body.unknown_key) {
    ({ privateKey: key } = await jose.generateKeyPair(alg));
    kid = `unknown-${crypto.randomBytes(6).toString('base64url')}`;
  } else {
    const jwk = currentKey(alg);
    key = await jose.importJWK(jwk, alg);
    kid = jwk.kid;
  }
  if (body.kid !== undefined) kid = body.kid; // string override, or null to omit
  const header = { alg, ...(typ ? { typ } : {}), ...(typeof kid === 'string' ? { kid } : {}) };
  return new jose.SignJWT(payload).setProtectedHeader(header).sign(key);
}

function badRequest(msg) {
  return Object.assign(new Error(msg), { status: 400 });
}

async function rotate(body) {
  const fresh = await newGeneration();
  const keepOld = body.keep_old === undefined ? true : Boolean(body.keep_old);
  signingKeys = keepOld ? [...fresh, ...signingKeys] : fresh;
  buildProvider();
  log(`rotated keys: RS256 ${fresh[0].kid}, ES256 ${fresh[1].kid} (keep_old=${keepOld})`);
  return {
    kid: fresh[0].kid,
    es256_kid: fresh[1].kid,
    jwks_kids: signingKeys.map((k) => k.kid),
  };
}

async function clientCredentialsToken(body) {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (typeof body.scope === 'string') form.set('scope', body.scope);
  if (typeof body.resource === 'string') form.set('resource', body.resource);
  const r = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(CC_CLIENT_ID)}:${encodeURIComponent(CC_CLIENT_SECRET)}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: form,
  });
  const json = await r.json();
  if (!r.ok) throw Object.assign(new Error(`token endpoint: ${JSON.stringify(json)}`), { status: 502 });
  return { token: json.access_token, token_response: json };
}

async function handleTest(req, res, url) {
  try {
    if (req.method === 'GET' && url.pathname === '/test/info') {
      return sendJson(res, 200, {
        issuer,
        audience: AUDIENCE,
        resource: RESOURCE,
        client_id: CLIENT_ID,
        public_client: !CLIENT_SECRET,
        kids: { RS256: currentKey('RS256').kid, ES256: currentKey('ES256').kid },
        jwks_kids: signingKeys.map((k) => k.kid),
        groups: GROUPS,
      });
    }
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'use POST' });
    const raw = await readBody(req);
    let body = {};
    if (raw.trim()) {
      try { body = JSON.parse(raw); } catch { throw badRequest('body must be JSON'); }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object');
    }
    switch (url.pathname) {
      case '/test/token':
        return sendJson(res, 200, { token: await mintToken(body) });
      case '/test/rotate':
        return sendJson(res, 200, await rotate(body));
      case '/test/client-credentials-token':
        return sendJson(res, 200, await clientCredentialsToken(body));
      default:
        return sendJson(res, 404, { error: `unknown control endpoint ${url.pathname}` });
    }
  } catch (err) {
    if (!err.status) log(`control ${url.pathname}: ${err.stack}`);
    return sendJson(res, err.status || 500, { error: err.message });
  }
}

// ---------------------------------------------------------------------------
// Server

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname.startsWith('/test/')) {
    handleTest(req, res, url);
  } else if (url.pathname.startsWith('/interaction/')) {
    handleInteraction(req, res, url).catch((err) => {
      log(`interaction error: ${err.stack}`);
      if (!res.headersSent) send(res, 500, 'text/plain', 'internal error');
    });
  } else {
    providerHandler(req, res);
  }
});
server.keepAliveTimeout = 5000;

signingKeys = await newGeneration();

server.on('error', (err) => {
  log(`server error: ${err.message}`);
  process.exit(1);
});

server.listen(PORT, '127.0.0.1', () => {
  const { port } = server.address();
  issuer = `http://127.0.0.1:${port}`;
  buildProvider();
  log(`issuer ${issuer}, client_id ${CLIENT_ID} (${CLIENT_SECRET ? 'confidential' : 'public, PKCE'}), audience ${AUDIENCE} (resource ${RESOURCE})`);
  process.stdout.write(`oidc-provider listening on ${issuer}\n`);
});

function shutdown(sig) {
  log(`${sig}: shutting down`);
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
