//! The approval rules' cost per tool call (`BENCH_ONLY=policy`): 100
//! rules whose globs all match the call, so every rule's predicates run
//! (numbers, equality, lists, regexes, URL hosts) before the last one
//! decides; beside it, the same call with no rules (the floor).
//! Target: < 50 µs p99.

use server::config::ApprovalsConfig;
use server::policy::Policy;
use std::time::{Duration, Instant};

/// 99 rules that match the tool but not the arguments, then a catch-all.
fn hundred_rules() -> Policy {
    let mut yaml = String::from("rules:\n");
    for i in 0..99 {
        let when = match i % 5 {
            0 => format!("{{/amount: {{min: {}}}}}", 1_000_000 + i),
            1 => format!("{{/target: {{host_in: ['*.corp{i}.example', 'db{i}.example']}}}}"),
            2 => format!("{{/name: {{regex: 'prod-{i}-.*'}}}}"),
            3 => format!("{{/env: {{in: [prod{i}, staging{i}]}}}}"),
            _ => format!("{{/owner: {{equals: team{i}}}, /amount: {{max: 1}}}}"),
        };
        yaml.push_str(&format!(
            "  - {{name: r{i}, tool: 'transfer_*', when: {when}, action: deny}}\n"
        ));
    }
    yaml.push_str("  - {name: last, tool: '*', action: approve}\n");
    let cfg: ApprovalsConfig = serde_yaml::from_str(&yaml).expect("rules");
    Policy::compile(&cfg, &[]).expect("compile")
}

/// p50 and p99 in µs of `n` evaluations.
fn measure(policy: &Policy, n: usize) -> (f64, f64) {
    let args = serde_json::json!({
        "amount": 250, "target": "https://api.payments.example/v1/transfer",
        "name": "staging-eu-1", "env": "dev", "owner": "team-x"
    });
    let mut lat: Vec<Duration> = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = policy.evaluate("transfer_funds", Some("payments"), &args);
        lat.push(t.elapsed());
        std::hint::black_box(r);
    }
    lat.sort();
    let at = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

pub fn rows(rows: &mut Vec<(String, String, String)>, quick: bool) {
    let n = if quick { 20_000 } else { 200_000 };
    let policy = hundred_rules();
    assert_eq!(policy.rules().len(), 100);
    let (p50, p99) = measure(&policy, n);
    let (f50, f99) = measure(&Policy::default(), n);
    rows.push((
        "policy: rule evaluation, 100 rules, p50 / p99 (µs)".into(),
        format!("{p50:.2} / {p99:.2}"),
        "p99 < 50 µs".into(),
    ));
    rows.push((
        "  the same call with no rules, p50 / p99 (µs)".into(),
        format!("{f50:.2} / {f99:.2}"),
        "floor".into(),
    ));
}
