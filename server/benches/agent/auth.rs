//! What auth costs per request (issue 12): `GET /approvals` p50 against
//! three agents started alike but for `auth.mode`: none, tokens (a static
//! token: SHA-256 and a constant-time compare) and oidc (an RS256 JWT,
//! JWKS already cached: signature and claims checked on every request).
//! The requests go round-robin over the three, so drift on a busy machine
//! touches all three alike; the rows print the added p50 beside the target.

use super::{Agent, pct};
use std::process::Command;
use std::time::{Duration, Instant};
use test_support::process::Process;

/// The operator token of the tokens-mode agent (`BENCH_TOKEN`).
pub const TOKEN: &str = "bench-operator-token-0123456789";

/// The test OpenID provider (`testdata/oidc`), when its packages are
/// installed (`make setup-test`).
struct Idp {
    _process: Process,
    issuer: String,
}

impl Idp {
    fn start() -> Option<Idp> {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/oidc/provider.mjs");
        let mut cmd = Command::new("node");
        cmd.arg(script).args(["--port", "0"]);
        let process = Process::try_start(
            cmd,
            "listening on ",
            "the test OpenID provider",
            Duration::from_secs(20),
        )
        .ok()?;
        Some(Idp {
            issuer: process.ready.clone(),
            _process: process,
        })
    }
}

/// The auth rows: p50 per mode and what tokens and oidc add over none.
pub async fn rows(
    http: &reqwest::Client,
    fake_base: &str,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let none = Agent::start(fake_base, false);
    let tokens = Agent::start_with(
        fake_base,
        false,
        "auth:\n  mode: tokens\n  tokens:\n    - {name: bench, token: \"${BENCH_TOKEN}\", roles: [admin]}\n",
    );
    let idp = Idp::start();
    let oidc = idp.as_ref().map(|idp| {
        Agent::start_with(
            fake_base,
            false,
            &format!(
                "auth:\n  mode: oidc\n  oidc:\n    issuer: {}\n    audience: stop-and-go\n    client_id: stop-and-go-ui\n    roles_claim: groups\n    role_map: {{platform-admins: admin}}\n",
                idp.issuer
            ),
        )
    });
    let jwt = match &idp {
        Some(idp) => {
            let v: serde_json::Value = http
                .post(format!("{}/test/token", idp.issuer))
                .json(&serde_json::json!({"sub": "carol", "exp_in": 3600}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["token"].as_str().map(String::from)
        }
        None => None,
    };
    let mut targets: Vec<(&str, String, Option<String>)> = vec![
        ("none", none.base.clone(), None),
        ("tokens", tokens.base.clone(), Some(TOKEN.to_string())),
    ];
    if let (Some(a), Some(t)) = (&oidc, &jwt) {
        targets.push(("oidc", a.base.clone(), Some(t.clone())));
    }
    let n = if quick { 500 } else { 3000 };
    let mut lat: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); targets.len()];
    // Warm up: connections, caches, the JWKS fetch.
    for round in 0..(n + 100) {
        for (i, (_, base, token)) in targets.iter().enumerate() {
            let mut req = http.get(format!("{base}/approvals"));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let t0 = Instant::now();
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status().as_u16(), 200, "{}", targets[i].0);
            let _ = resp.bytes().await;
            if round >= 100 {
                lat[i].push(t0.elapsed());
            }
        }
    }
    for l in &mut lat {
        l.sort();
    }
    let p50: Vec<f64> = lat.iter().map(|l| pct(l, 0.5)).collect();
    rows.push((
        "auth: GET /approvals p50, mode none (ms)".into(),
        format!("{:.3}", p50[0]),
        "".into(),
    ));
    rows.push((
        "  added by mode tokens, p50 (ms)".into(),
        format!("{:+.3}", p50[1] - p50[0]),
        "< 0.2 ms".into(),
    ));
    match p50.get(2) {
        Some(o) => rows.push((
            "  added by mode oidc (JWT, cached JWKS), p50 (ms)".into(),
            format!("{:+.3}", o - p50[0]),
            "< 0.2 ms".into(),
        )),
        None => rows.push((
            "  added by mode oidc (JWT, cached JWKS), p50 (ms)".into(),
            "n/a (make setup-test)".into(),
            "< 0.2 ms".into(),
        )),
    }
}
