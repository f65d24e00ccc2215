//! Where our client finds a sub-agent, with an agent served in the test's
//! process ([`support::Agent::serve`]) and a scriptable peer
//! ([`support::peer`]): the seed's endpoint URLs (`…/a2a`) with and without
//! a card, a card whose interface URL differs from the configured one
//! (reachable or not), a card beside a path-mounted URL, a 0.3 card, and an
//! agent with no card at all spoken to in the seed's legacy dialect, proxy
//! approval included.

use crate::support;

use serde_json::{Value, json};
use support::peer::{Peer, Seen};
use support::{Agent, post_json, write_config};

/// Agent A on the scripted model: every message goes to sub-agent `peer`
/// at `url`, and the answer comes back as "relayed: …".
struct Front {
    agent: Agent,
    _dir: tempfile::TempDir,
}

async fn front(url: &str) -> Front {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"(?s)^(.*)$\"\n    steps:\n      - call: a2a_peer\n        args: {message: \"$1\"}\n      - reply: \"relayed: {result}\"\n",
    )
    .unwrap();
    let yaml = format!(
        "name: front\nllm: {{model: \"scripted:{}\"}}\na2a:\n  - {{name: peer, url: \"{url}\", description: The peer}}\n",
        rules.display()
    );
    let agent = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    Front { agent, _dir: dir }
}

async fn say(front: &Front, text: &str) -> Value {
    let (status, body) = post_json(&front.agent, "/conversations", json!({"message": text})).await;
    assert_eq!(status, 201, "{body}");
    body
}

fn response(body: &Value) -> &str {
    body["result"]["response"].as_str().unwrap_or_default()
}

fn one_post(peer: &Peer) -> Seen {
    let posts = peer.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    posts.into_iter().next().unwrap()
}

fn card(name: &str, interfaces: Value) -> Value {
    json!({"name": name, "description": "a peer", "version": "1", "supportedInterfaces": interfaces,
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []})
}

/// Where a card is served by default.
const CARD: &str = "/.well-known/agent-card.json";

/// A 1.0 JSON-RPC interface at `url`.
fn v1(url: &str) -> Value {
    json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
}

/// An address nothing listens on, held for as long as the socket lives: a
/// port bound and closed again could be handed to the next server started
/// on port 0 (the agent under test once got it and delegated to itself).
/// Bound but not listening, a connection to it is refused.
fn dead_addr() -> (tokio::net::TcpSocket, std::net::SocketAddr) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    (socket, addr)
}

/// Starts a peer serving `cards`, an agent whose sub-agent is the peer at
/// `path`, says "hi" to the agent and returns the peer and the answer.
async fn hi_via(cards: &[(&str, Value)], path: &str) -> (Peer, String) {
    let peer = Peer::start(cards).await;
    let front = front(&peer.url(path)).await;
    let body = say(&front, "hi").await;
    (peer, response(&body).to_string())
}

/// No card anywhere: the seed's legacy dialect at the configured endpoint,
/// and its `input-required` becomes a proxy approval whose decision goes
/// back with `params.taskId`.
#[tokio::test]
async fn an_agent_without_a_card_is_spoken_to_in_the_legacy_dialect_at_its_endpoint() {
    let peer = Peer::start(&[]).await;
    let front = front(&peer.url("/rpc/legacy")).await;
    let body = say(&front, "hello there").await;
    assert_eq!(
        response(&body),
        "relayed: peer got: hello there via legacy at /rpc/legacy",
        "{body}"
    );
    let gets: Vec<String> = peer
        .seen()
        .iter()
        .filter(|s| s.method == "GET")
        .map(|s| s.path.clone())
        .collect();
    assert_eq!(
        gets,
        [
            "/rpc/legacy/.well-known/agent-card.json",
            "/rpc/legacy/.well-known/agent.json",
            "/.well-known/agent-card.json",
            "/.well-known/agent.json",
            "/rpc/legacy"
        ]
    );
    let sent = one_post(&peer);
    assert_eq!(sent.version, None, "no A2A-Version in the legacy dialect");
    assert_eq!(sent.body["params"]["message"]["parts"][0]["type"], "text");

    // A proxy approval through the legacy dialect; the card is not read again.
    let body = say(&front, "delete the thing").await;
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let approval = &body["result"]["approval"];
    assert_eq!(approval["remote_task_id"], "peer-task-1");
    // A legacy task says what it asks in text only.
    assert!(
        body.to_string().contains("Approve deleting the thing?"),
        "{body}"
    );
    let uuid = approval["uuid"].as_str().unwrap();
    let (status, body) = post_json(
        &front.agent,
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(response(&body), "relayed: peer deleted it", "{body}");
    let posts = peer.posts();
    let last = &posts.last().unwrap().body;
    assert_eq!(last["params"]["taskId"], "peer-task-1", "{last}");
    assert_eq!(last["params"]["message"]["parts"][0]["text"], "approve");
    assert_eq!(peer.seen().iter().filter(|s| s.method == "GET").count(), 5);
}

/// The seed's endpoint URL: the card is found at the origin and its 1.0
/// interface is used.
#[tokio::test]
async fn a_seed_endpoint_url_finds_the_card_at_its_origin() {
    let cards = [(CARD, card("p", json!([v1("{BASE}/a2a")])))];
    let (peer, said) = hi_via(&cards, "/a2a").await;
    assert_eq!(said, "relayed: peer got: hi via 1.0 at /a2a");
    assert_eq!(one_post(&peer).body["method"], "SendMessage");
}

/// A card naming another endpoint than the configured one: the card wins
/// (its JSON-RPC interface, not the gRPC one).
#[tokio::test]
async fn a_card_whose_interface_url_differs_is_followed() {
    let grpc = json!({"url": "{BASE}/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"});
    let cards = [(CARD, card("p", json!([grpc, v1("{BASE}/rpc/v1")])))];
    let (_, said) = hi_via(&cards, "/a2a").await;
    assert_eq!(said, "relayed: peer got: hi via 1.0 at /rpc/v1");
}

/// A card naming an address this agent cannot reach (a public name outside
/// a compose network): the configured endpoint is used instead.
#[tokio::test]
async fn an_unreachable_interface_url_falls_back_to_the_configured_endpoint() {
    let (_held, dead) = dead_addr();
    let unreachable = format!("http://{dead}/a2a");
    let cards = [(
        "/.well-known/agent.json",
        card("p", json!([v1(&unreachable)])),
    )];
    let (_, said) = hi_via(&cards, "/a2a").await;
    assert_eq!(said, "relayed: peer got: hi via 1.0 at /a2a");
}

/// An agent mounted under a path: its own card beside the URL wins over
/// whatever the origin serves; a card without a URL is posted to the
/// configured endpoint.
#[tokio::test]
async fn a_card_beside_a_path_mounted_url_wins_over_the_origin() {
    let cards = [
        (CARD, card("gateway", json!([v1("{BASE}/wrong")]))),
        ("/agents/b/.well-known/agent.json", json!({"name": "b"})),
    ];
    let (_, said) = hi_via(&cards, "/agents/b").await;
    assert_eq!(said, "relayed: peer got: hi via legacy at /agents/b");
}

/// A 0.3 card (top-level `url` and `protocolVersion`) at the origin.
#[tokio::test]
async fn a_0_3_card_is_spoken_to_with_0_3_framing() {
    let cards = [(
        CARD,
        json!({"name": "p", "protocolVersion": "0.3.0", "url": "{BASE}/v03", "preferredTransport": "JSONRPC"}),
    )];
    let (peer, said) = hi_via(&cards, "/a2a").await;
    assert_eq!(said, "relayed: peer got: hi via 0.3 at /v03");
    let sent = one_post(&peer);
    assert_eq!(sent.version.as_deref(), Some("0.3"));
    assert_eq!(sent.body["params"]["message"]["parts"][0]["kind"], "text");
}

/// A peer that is down is reported, not hung on, and not taken for a
/// card-less legacy agent.
#[tokio::test]
async fn a_peer_that_is_down_is_unavailable() {
    let (_held, dead) = dead_addr();
    let front = front(&format!("http://{dead}/a2a")).await;
    let body = say(&front, "hi").await;
    let text = body.to_string();
    assert!(text.contains("unavailable"), "{body}");
    assert!(text.contains("connection refused"), "{body}");
}
