// The official AG-UI packages (pinned in testdata/ag-ui) against an agent's
// POST /ag-ui (server/tests/it/ag_ui.rs).
//
//   node ag_ui_client.mjs validate < EVENTS.json
//     Checks each event of a JSON array (one run's stream) with
//     @ag-ui/core's EventSchema, then the sequence with @ag-ui/client's
//     verifyEvents (RUN_STARTED first, what opens is closed, nothing after
//     RUN_FINISHED, subagents finished before it); prints
//     {"invalid": [{index, type, issues}], "sequence": null | "the error"}.
//   node ag_ui_client.mjs drive URL THREAD MESSAGE PAYLOAD_JSON [TOKEN]
//     @ag-ui/client's HttpAgent: a run with MESSAGE, then, if it ended in
//     an interrupt, a run resuming each interrupt with PAYLOAD_JSON (the
//     string "cancel" cancels instead). Prints {runs: [{events, outcome}],
//     messages} with every event validated on the way (an invalid one
//     fails the run).
const base = new URL("./ag-ui/node_modules/@ag-ui/", import.meta.url);
const core = await import(new URL("core/dist/schemas.mjs", base).href);
const [mode, ...args] = process.argv.slice(2);

function check(events) {
  const invalid = [];
  events.forEach((e, index) => {
    const r = core.EventSchema.safeParse(e);
    if (!r.success) invalid.push({ index, type: e?.type, issues: r.error.issues });
  });
  return invalid;
}

if (mode === "validate") {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  const events = JSON.parse(text);
  const { verifyEvents } = await import(new URL("client/dist/index.mjs", base).href);
  // rxjs as the client itself resolves it.
  const { createRequire } = await import("node:module");
  const { from, lastValueFrom, toArray } = createRequire(new URL("client/package.json", base))("rxjs");
  let sequence = null;
  try {
    await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  } catch (e) {
    sequence = String(e?.message ?? e);
  }
  console.log(JSON.stringify({ invalid: check(events), sequence }));
} else if (mode === "drive") {
  const { HttpAgent } = await import(new URL("client/dist/index.mjs", base).href);
  const [url, threadId, message, payload, token] = args;
  const agent = new HttpAgent({
    url,
    threadId,
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
  agent.addMessage({ id: `user-${Date.now()}`, role: "user", content: message });
  const runs = [];
  const once = async (params) => {
    const events = [];
    let outcome = null;
    await agent.runAgent(params, {
      onEvent({ event }) {
        events.push(event);
      },
      onRunFinishedEvent({ event }) {
        outcome = event.outcome ?? { type: "success" };
      },
    });
    const invalid = check(events);
    if (invalid.length) throw new Error(`invalid events: ${JSON.stringify(invalid)}`);
    runs.push({ events, outcome });
    return outcome;
  };
  const first = await once({ runId: `run-${Date.now()}-1` });
  if (first?.type === "interrupt") {
    const resume = first.interrupts.map((i) =>
      payload === "cancel"
        ? { interruptId: i.id, status: "cancelled" }
        : { interruptId: i.id, status: "resolved", payload: JSON.parse(payload) },
    );
    await once({ runId: `run-${Date.now()}-2`, resume });
  }
  console.log(JSON.stringify({ runs, messages: agent.messages }));
} else {
  console.error("usage: ag_ui_client.mjs validate | drive URL THREAD MESSAGE PAYLOAD_JSON [TOKEN]");
  process.exit(2);
}
