// Starts the real `agent` binary for a test and stops it again. The
// binaries come from STOPGO_BIN_DIR (default target/release, as `make
// build` leaves them; `make test` points it at target/debug, the build its
// Rust tests already made) and the site from LEPTOS_SITE_ROOT (default
// target/site, always the release site: the budget test measures it).
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { test as base, expect, Page } from '@playwright/test';

const root = path.resolve(__dirname, '..', '..');
const binDir = process.env.STOPGO_BIN_DIR ? path.resolve(root, process.env.STOPGO_BIN_DIR) : path.join(root, 'target', 'release');
const binary = process.env.AGENT_BIN || path.join(binDir, 'agent');
const siteRoot = process.env.LEPTOS_SITE_ROOT || path.join(root, 'target', 'site');

/**
 * Collects `child`'s stdout and stderr (each chunk also goes to `onLog`)
 * until a line says `listening on http://ADDR`; resolves to that URL.
 */
function listeningOn(child: ChildProcess, what: string, onLog: (text: string) => void): Promise<string> {
  let seen = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${seen}`)), 20_000);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      seen += text;
      onLog(text);
      const m = seen.match(/listening on (http:\/\/[0-9.:]+)/);
      if (m) {
        clearTimeout(timer);
        child.removeListener('exit', onExit);
        resolve(m[1]);
      }
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${seen}`));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', onExit);
  });
}

export class Agent {
  baseURL = '';
  log = '';
  private child?: ChildProcess;

  constructor(
    readonly dir: string,
    readonly configPath: string,
    readonly extraEnv: Record<string, string> = {},
  ) {}

  /** Starts the process and waits for its "listening on" line. */
  async start(): Promise<void> {
    const env = { ...process.env, LEPTOS_SITE_ROOT: siteRoot, RUST_LOG: 'info', ...this.extraEnv };
    for (const k of ['GEMINI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'MISTRAL_API_KEY', 'OPENROUTER_API_KEY']) delete env[k];
    const child = spawn(binary, ['--config', this.configPath], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    // A restart appends to the log: only this run's output counts.
    this.baseURL = await listeningOn(child, 'agent', (text) => (this.log += text));
  }

  /** kill -9, as a crash would. */
  async kill9(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    stoppedAt = Date.now();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

/** A fresh agent with its own data directory, from testdata/e2e-basic.yaml. */
export async function startAgent(extraYaml = ''): Promise<Agent> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const base = fs.readFileSync(path.join(root, 'testdata', 'e2e-basic.yaml'), 'utf8');
  const config = `${base}\ndata_dir: ${path.join(dir, 'data')}\n${extraYaml}`.replace(/^data_dir: \.\/data-e2e\n/m, '');
  const configPath = path.join(dir, 'agent.yaml');
  fs.writeFileSync(configPath, config);
  const agent = new Agent(dir, configPath);
  await agent.start();
  return agent;
}

/**
 * The resources agent on the scripted model (testdata/e2e-rules.yaml) with
 * the real `mcp-resources` over stdio, in its own data directory.
 */
export async function startResourcesAgent(extraYaml = '', env: Record<string, string> = {}): Promise<Agent> {
  const rules = path.join(root, 'testdata', 'e2e-rules.yaml');
  const mcp = path.join(binDir, 'mcp-resources');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const config = [
    'name: e2e-resources',
    'host: 127.0.0.1',
    'port: 0',
    `data_dir: ${path.join(dir, 'data')}`,
    `llm: {model: "scripted:${rules}"}`,
    'mcp_servers:',
    '  - name: resources',
    `    command: ${mcp}`,
    `    args: [--db, ${path.join(dir, 'resources.db')}]`,
    extraYaml,
    '',
  ].join('\n');
  const configPath = path.join(dir, 'agent.yaml');
  fs.writeFileSync(configPath, config);
  const agent = new Agent(dir, configPath, env);
  await agent.start();
  return agent;
}

/**
 * An agent on the scripted model whose MCP server asks questions
 * (testdata/question_mcp_server.py on the official Python SDK in
 * .tools/mcp-python, at 2026-07-28 over stdio, or `--era legacy`):
 * "deploy NAME" calls ask_env, "sign in" calls ask_url.
 */
export async function startQuestionAgent(era = 'both'): Promise<Agent> {
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
      '  - match: "^sign in"',
      '    steps:',
      '      - call: ask_url',
      '      - reply: "tool said: {result}"',
      '',
    ].join('\n'),
  );
  const config = [
    'name: e2e-questions',
    'host: 127.0.0.1',
    'port: 0',
    `data_dir: ${path.join(dir, 'data')}`,
    `llm: {model: "scripted:${rules}"}`,
    'mcp_servers:',
    '  - name: q',
    `    command: ${path.join(root, '.tools', 'mcp-python', 'bin', 'python')}`,
    `    args: [${path.join(root, 'testdata', 'question_mcp_server.py')}, --era, ${era}]`,
    '',
  ].join('\n');
  const configPath = path.join(dir, 'agent.yaml');
  fs.writeFileSync(configPath, config);
  const agent = new Agent(dir, configPath);
  await agent.start();
  return agent;
}

/**
 * One of the pipeline examples in testdata/ (e2e-sequential.yaml, …) as a
 * user would run it, with its data, database and rules paths made absolute.
 */
export async function startExampleAgent(example: string, edit: (yaml: string) => string = (y) => y): Promise<Agent> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const testdata = path.join(root, 'testdata');
  const config = fs
    .readFileSync(path.join(testdata, example), 'utf8')
    .replace(/^data_dir: .*$/m, `data_dir: ${path.join(dir, 'data')}`)
    .replace(/model: "scripted:([^"]+)"/, (_m, rules) => `model: "scripted:${path.join(testdata, rules)}"`)
    .replace(/command: target\/release\/mcp-resources/, `command: ${path.join(binDir, 'mcp-resources')}`)
    .replace(/args: \[--db, [^\]]+\]/, `args: [--db, ${path.join(dir, 'resources.db')}]`)
    .replace(/^port: \d+$/m, 'port: 0');
  const configPath = path.join(dir, 'agent.yaml');
  fs.writeFileSync(configPath, edit(config));
  const agent = new Agent(dir, configPath);
  await agent.start();
  return agent;
}

/**
 * config/filesystem-agent.yaml as a user would run it, on its scripted
 * model, with the real mcp-filesystem over a temporary workspace
 * holding `notes.md` ("hello\n").
 */
export async function startFilesystemAgent(): Promise<Agent> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopgo-e2e-'));
  const ws = path.join(dir, 'workspace');
  fs.mkdirSync(ws);
  fs.writeFileSync(path.join(ws, 'notes.md'), 'hello\n');
  const fsConfig = path.join(dir, 'mcp-filesystem.yaml');
  fs.writeFileSync(fsConfig, `roots:\n  - {name: workspace, path: '${ws}', allowed_tools: ['*']}\n`);
  const config = fs
    .readFileSync(path.join(root, 'config', 'filesystem-agent.yaml'), 'utf8')
    .replace('model: gemini-2.5-flash', `model: "scripted:${path.join(root, 'config', 'filesystem-rules.yaml')}"`)
    .replace('command: target/release/mcp-filesystem', `command: ${path.join(binDir, 'mcp-filesystem')}`)
    .replace(/config\/mcp-filesystem\.yaml/g, fsConfig)
    .replace(/^port: \d+$/m, 'port: 0')
    .replace(/^data_dir: .*$/m, `data_dir: ${path.join(dir, 'data')}`);
  const configPath = path.join(dir, 'agent.yaml');
  fs.writeFileSync(configPath, config);
  const agent = new Agent(dir, configPath);
  await agent.start();
  return agent;
}

/**
 * The test OpenID provider (testdata/oidc: the certified npm
 * `oidc-provider`) on a free loopback port. `issuer` is its URL.
 */
export class OidcProvider {
  issuer = '';
  private child?: ChildProcess;

  async start(args: string[] = []): Promise<void> {
    const child = spawn('node', [path.join(root, 'testdata', 'oidc', 'provider.mjs'), '--port', '0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.issuer = await listeningOn(child, 'oidc-provider', () => {});
  }

  /** `POST /test/token`: a bearer token for `sub` (see testdata/oidc/README.md). */
  async token(sub: string): Promise<string> {
    const r = await fetch(`${this.issuer}/test/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ sub }),
    });
    return (await r.json()).token;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * When a test last stopped an agent on purpose (`Agent.stop`): a page still
 * open on it then fails to reconnect its live updates, which is no fault.
 */
let stoppedAt = Infinity;
/** What Chromium logs when the server's connection goes away (which one depends on the moment). */
export const CONNECTION_LOST =
  /ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_SOCKET_NOT_CONNECTED/;

/**
 * Fails the test on any browser console error or uncaught exception, except
 * a lost connection after the test stopped its agent.
 */
export function watchConsole(page: Page): string[] {
  const errors: string[] = [];
  stoppedAt = Infinity;
  page.on('console', (msg) => {
    if (msg.type() !== 'error' && msg.type() !== 'warning') return;
    if (Date.now() >= stoppedAt && CONNECTION_LOST.test(msg.text())) return;
    errors.push(`${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  return errors;
}

/** Waits until the WebAssembly has hydrated the page (clicks work). */
export async function hydrated(page: Page): Promise<void> {
  await expect(page.locator('.app[data-hydrated="true"]')).toBeVisible();
}

type Fixtures = { agent: Agent; resourcesAgent: Agent; consoleErrors: string[] };

export const test = base.extend<Fixtures>({
  agent: async ({}, use) => {
    const agent = await startAgent();
    await use(agent);
    await agent.stop();
    fs.rmSync(agent.dir, { recursive: true, force: true });
  },
  resourcesAgent: async ({}, use) => {
    const agent = await startResourcesAgent();
    await use(agent);
    await agent.stop();
    fs.rmSync(agent.dir, { recursive: true, force: true });
  },
  consoleErrors: async ({ page }, use) => {
    const errors = watchConsole(page);
    await use(errors);
    expect(errors, 'browser console errors').toEqual([]);
  },
});

/** A webhook receiver on a free loopback port that keeps every body. */
export async function receiver(): Promise<{ url: string; bodies: any[]; close: () => void }> {
  const bodies: any[] = [];
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      try {
        bodies.push(JSON.parse(data));
      } catch {
        bodies.push(null);
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, bodies, close: () => server.close() };
}

export { expect };
