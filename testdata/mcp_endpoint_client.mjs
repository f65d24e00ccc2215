// The official MCP TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, pinned
// in testdata/mcp-npm) as a 2025-11-25 client of an agent's own POST /mcp
// (server/tests/it/mcp_endpoint.rs): initialize, a session, and the
// server's elicitation/create answered by the handler during the call.
//
//   node mcp_endpoint_client.mjs URL TOOL JSON_ARGS [accept|decline|cancel|none] [TOKEN]
//
// CONTENT (environment) is what an accepted form elicitation answers
// (default {"decision":"approve"}). Prints one JSON line:
// {protocolVersion, sessionId, asked: [elicitation params...], result}.
const sdk = new URL("./mcp-npm/node_modules/@modelcontextprotocol/sdk/dist/esm/", import.meta.url);
const { Client } = await import(new URL("client/index.js", sdk).href);
const { StreamableHTTPClientTransport } = await import(new URL("client/streamableHttp.js", sdk).href);
const { ElicitRequestSchema } = await import(new URL("types.js", sdk).href);

const [url, tool, args, answer = "accept", token] = process.argv.slice(2);
const caps = answer === "none" ? {} : { elicitation: { form: {}, url: {} } };
const client = new Client({ name: "stopgo-ts-test", version: "1.0.0" }, { capabilities: caps });
const asked = [];
if (answer !== "none") {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    if (answer !== "accept") return { action: answer };
    return req.params.mode === "url"
      ? { action: "accept" }
      : { action: "accept", content: JSON.parse(process.env.CONTENT ?? '{"decision":"approve"}') };
  });
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
});
await client.connect(transport);
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, { timeout: 60_000 });
console.log(JSON.stringify({ protocolVersion: transport.protocolVersion, sessionId: transport.sessionId, asked, result }));
await transport.terminateSession();
await client.close();
