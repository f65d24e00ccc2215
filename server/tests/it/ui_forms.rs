//! Decisions without JavaScript (REACH.md §1, issue 40 item 2), with the
//! real agent and a browser-like client (cookies, no redirects followed):
//! every decision control of the pages is a plain HTML form post carrying
//! a token bound to the browser. A post without the token, with another
//! browser's, or from a foreign origin is 403 and decides nothing; a good
//! one decides through the same engine command as REST (`decided_via: ui`)
//! and answers 303 back to the page, or to `/ui/refused` saying why.

use crate::support;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION, ORIGIN};
use serde_json::{Value, json};
use std::time::Duration;
use support::{
    Agent, approval_outcome, get_json, post_json, resources_yaml, waiting_uuid, write_config,
};

/// A browser: its own cookie jar, redirects not followed.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The `value` of the first hidden `form_token` field in `html`.
fn form_token(html: &str) -> String {
    let at = html
        .find("name=\"form_token\" value=\"")
        .unwrap_or_else(|| panic!("no form token in the page: {html}"));
    let rest = &html[at + "name=\"form_token\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

async fn page(b: &reqwest::Client, url: &str) -> String {
    let r = b.get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{url}");
    r.text().await.unwrap()
}

async fn post_form(b: &reqwest::Client, url: &str, fields: &[(&str, &str)]) -> reqwest::Response {
    b.post(url).form(fields).send().await.unwrap()
}

fn location(r: &reqwest::Response) -> String {
    r.headers()
        .get(LOCATION)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// A new conversation waiting on `add NAME N`: `(conversation id, uuid)`.
async fn waiting(a: &Agent, what: &str) -> (String, String) {
    let (s, body) = post_json(a, "/conversations", json!({ "message": what })).await;
    assert_eq!(s, 201, "{body}");
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    (id, waiting_uuid(&body))
}

async fn pending(a: &Agent) -> u64 {
    get_json(a, "/approvals?limit=0").await["total"]
        .as_u64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_reject_and_edit_post_as_forms_bound_to_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &resources_yaml("forms", dir.path()),
    );
    let a = Agent::serve(&cfg).await;
    let (cid, uuid) = waiting(&a, "add apples 5").await;
    let me = browser();
    let conv = a.url(&format!("/ui/conversations/{cid}"));
    let html = page(&me, &conv).await;
    let token = form_token(&html);
    assert_eq!(token.len(), 64);
    assert!(
        html.contains(&format!("action=\"/ui/approvals/{uuid}/decide\"")),
        "{html}"
    );
    // Item 4: the title shows the call as code, not as raw Markdown.
    assert!(html.contains("<code>resources_add("), "{html}");
    assert!(
        html.contains("description\">Run <code>resources_add("),
        "{html}"
    );
    let decide = a.url(&format!("/ui/approvals/{uuid}/decide"));
    let back = format!("/ui/conversations/{cid}");

    // No token, a wrong one, another browser's, a foreign origin: 403.
    for fields in [
        vec![("decision", "approve")],
        vec![("decision", "approve"), ("form_token", "0000")],
    ] {
        let r = post_form(&me, &decide, &fields).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
    }
    let other = browser();
    let theirs = form_token(&page(&other, &conv).await);
    assert_ne!(theirs, token, "each browser its own token");
    let r = post_form(
        &other,
        &decide,
        &[("decision", "approve"), ("form_token", &token)],
    )
    .await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "a token stolen from another browser"
    );
    let r = me
        .post(&decide)
        .header(ORIGIN, "http://evil.example")
        .form(&[("decision", "approve"), ("form_token", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // The JSON API still refuses a form body.
    let r = me
        .post(a.url(&format!("/approvals/{uuid}")))
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body("approved=true")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(pending(&a).await, 1, "nothing was decided");

    // Reject with a reason: 303 back to the page; decided in the UI.
    let r = post_form(
        &me,
        &decide,
        &[
            ("form_token", &token),
            ("decision", "reject"),
            ("reason", "not today"),
            ("back", &back),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), back);
    let c = get_json(&a, &format!("/conversations/{cid}")).await;
    let ap = approval_outcome(&c, &uuid);
    assert_eq!(ap["status"], "rejected", "{ap}");
    assert_eq!(ap["reason"], "not today", "{ap}");
    assert_eq!(ap["decided_via"], "ui", "{ap}");

    // Approve; then the same post again: refused, and the page says why.
    let (cid2, uuid2) = waiting(&a, "add pears 2").await;
    let decide2 = a.url(&format!("/ui/approvals/{uuid2}/decide"));
    let r = post_form(
        &me,
        &decide2,
        &[("form_token", &token), ("decision", "approve")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let c = get_json(&a, &format!("/conversations/{cid2}")).await;
    let st = approval_outcome(&c, &uuid2)["status"].clone();
    assert!(st == "approved" || st == "executed", "{st}");
    let back2 = format!("/ui/conversations/{cid2}");
    let r = post_form(
        &me,
        &decide2,
        &[
            ("form_token", &token),
            ("decision", "approve"),
            ("back", &back2),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let to = location(&r);
    assert!(to.starts_with("/ui/refused?back="), "{to}");
    let shown = page(&me, &a.url(&to)).await;
    assert!(shown.contains("already decided"), "{shown}");
    assert!(shown.contains(&format!("href=\"{back2}\"")), "{shown}");
    // Said once: the reason is not kept for a reload.
    assert!(!page(&me, &a.url(&to)).await.contains("already decided"));

    // Edit arguments without JavaScript: `?edit=` opens the form, a bad
    // value is refused with the field named, a good one runs once.
    let (cid3, uuid3) = waiting(&a, "add plums 3").await;
    let conv3 = a.url(&format!("/ui/conversations/{cid3}"));
    assert!(!page(&me, &conv3).await.contains("name=\"arg.value\""));
    let edit = page(&me, &format!("{conv3}?edit={uuid3}")).await;
    assert!(edit.contains("name=\"arg.value\""), "{edit}");
    assert!(edit.contains("name=\"arg.name\""), "{edit}");
    let decide3 = a.url(&format!("/ui/approvals/{uuid3}/decide"));
    let bad = [
        ("form_token", token.as_str()),
        ("decision", "approve"),
        ("edit", "1"),
        ("arg.name", "plums"),
        ("arg.value", "seven"),
    ];
    let r = post_form(&me, &decide3, &bad).await;
    assert!(location(&r).starts_with("/ui/refused"), "{}", location(&r));
    let shown = page(&me, &a.url(&location(&r))).await;
    assert!(shown.contains("value: must be a whole number"), "{shown}");
    assert_eq!(pending(&a).await, 1);
    let good = [
        ("form_token", token.as_str()),
        ("decision", "approve"),
        ("edit", "1"),
        ("arg.name", "plums"),
        ("arg.value", "7"),
    ];
    let r = post_form(&me, &decide3, &good).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(!location(&r).starts_with("/ui/refused"), "{}", location(&r));
    let c = get_json(&a, &format!("/conversations/{cid3}")).await;
    let ap = approval_outcome(&c, &uuid3);
    assert!(
        ap["status"] == "approved" || ap["status"] == "executed",
        "{ap}"
    );
    assert_eq!(ap["decided_via"], "ui", "{ap}");
    assert!(c.to_string().contains("\"value\":7"), "{c}");
}

const ALICE: &str = "alice-approver-token-0123";
const BOB: &str = "bob-requester-token-01234";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_decide_and_sign_out_without_javascript() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}auth:\n  mode: tokens\n  tokens:\n    - {{name: alice, token: \"${{ALICE_T}}\", roles: [approver]}}\n    - {{name: bob, token: \"${{BOB_T}}\", roles: [requester]}}\n",
        resources_yaml("forms-auth", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve_with_env(&cfg, &[("ALICE_T", ALICE), ("BOB_T", BOB)]).await;
    let asked = support::client()
        .post(a.url("/conversations"))
        .bearer_auth(BOB)
        .json(&json!({"message": "add apples 5"}))
        .send()
        .await
        .unwrap();
    let body: Value = asked.json().await.unwrap();
    let uuid = waiting_uuid(&body);
    let cid = body["conversation"]["id"].as_str().unwrap().to_string();

    // Signing in is a form post too (login CSRF: the form is bound to the
    // browser's form cookie).
    let alice = browser();
    let r = alice.get(a.url("/ui/approvals")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let sign_in = page(&alice, &a.url(&location(&r))).await;
    let pre = form_token(&sign_in);
    assert!(
        sign_in.contains("method=\"post\" action=\"/ui/sign-in\""),
        "{sign_in}"
    );
    let r = post_form(
        &alice,
        &a.url("/ui/sign-in"),
        &[("token", ALICE), ("next", "/ui/approvals")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "no form token");
    let r = post_form(
        &alice,
        &a.url("/ui/sign-in"),
        &[
            ("token", "wrong-token-wrong-token"),
            ("next", "/ui/approvals"),
            ("form_token", &pre),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(location(&r).contains("failed=token"), "{}", location(&r));
    assert!(
        page(&alice, &a.url(&location(&r)))
            .await
            .contains("not one of this agent's operator tokens")
    );
    let r = post_form(
        &alice,
        &a.url("/ui/sign-in"),
        &[
            ("token", ALICE),
            ("next", "/ui/approvals"),
            ("form_token", &pre),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/ui/approvals");
    let inbox = page(&alice, &a.url("/ui/approvals")).await;
    let token = form_token(&inbox);
    assert_ne!(token, pre, "signed in, the token is bound to the session");

    // Bob (a requester) forges the post with his own browser's token: the
    // engine refuses him as it refuses him over REST, and says why.
    let bob = browser();
    let r = post_form(
        &bob,
        &a.url("/ui/sign-in"),
        &[
            ("token", BOB),
            (
                "form_token",
                &form_token(&page(&bob, &a.url("/ui/sign-in")).await),
            ),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let bob_token = form_token(&page(&bob, &a.url(&format!("/ui/conversations/{cid}"))).await);
    let decide = a.url(&format!("/ui/approvals/{uuid}/decide"));
    let r = post_form(
        &bob,
        &decide,
        &[("form_token", &bob_token), ("decision", "approve")],
    )
    .await;
    let to = location(&r);
    assert!(to.starts_with("/ui/refused"), "{to}");
    assert!(page(&bob, &a.url(&to)).await.contains("approver"));
    let r = post_form(
        &alice,
        &decide,
        &[("form_token", &bob_token), ("decision", "approve")],
    )
    .await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "bob's token is not alice's"
    );

    // Alice approves from the inbox without JavaScript.
    let r = post_form(
        &alice,
        &decide,
        &[
            ("form_token", &token),
            ("decision", "approve"),
            ("back", "/ui/approvals"),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/ui/approvals");
    let c: Value = support::client()
        .get(a.url(&format!("/conversations/{cid}")))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ap = approval_outcome(&c, &uuid);
    assert_eq!(ap["decided_by"], "alice", "{ap}");
    assert_eq!(ap["decided_via"], "ui", "{ap}");

    // Signing out: 403 without the token, then at once with it.
    let r = alice.post(a.url("/ui/sign-out")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = alice
        .post(a.url("/ui/sign-out"))
        .header("Accept", "text/html")
        .form(&[("form_token", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = alice.get(a.url("/ui/approvals")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "signed out");
}
