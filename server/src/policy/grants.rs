//! The live grants, indexed for the gate (REACH.md §3).
//!
//! The gate runs for every tool call and is synchronous, so it cannot read
//! the database: it asks this index, kept in memory. Grants are grouped by
//! (tool, server), then by the set of pointers they match on, then by the
//! canonical JSON of the values at those pointers, so a lookup is one hash
//! probe per distinct pointer set of that tool, however many grants are
//! live (the bench holds 1,000). The database stays the truth: a grant
//! found here is used only if its row is still live when the call is
//! recorded (revoked on another replica, or expired, it is not), and on a
//! shared store a call about to ask reloads its tool's grants first.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// One live grant, as the gate needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveGrant {
    pub id: String,
    pub tool: String,
    pub server: Option<String>,
    /// `Some`: only in this conversation (scope `conversation`).
    pub conversation_id: Option<String>,
    /// The rule whose question it answers; a call that a different rule
    /// (or a changed one) would ask about is not spared.
    pub rule: String,
    /// Who granted it, with the roles they had (a rule's named approvers
    /// must still admit them).
    pub granter: String,
    pub roles: Vec<String>,
    /// The pointers a call must repeat; `None`: every argument.
    pub pointers: Option<Vec<String>>,
    /// The approved values at `pointers` (or the whole arguments).
    pub values: Value,
    /// RFC 3339, compared as text like every timestamp here.
    pub expires_at: String,
}

type Key = (String, Option<String>);

/// The values of `args` a grant on `pointers` compares, as canonical JSON
/// (`serde_json` keeps object keys sorted); `None` when a pointer is
/// missing (such a call never matches).
pub fn values_key(pointers: Option<&[String]>, args: &Value) -> Option<String> {
    match pointers {
        None => serde_json::to_string(args).ok(),
        Some(ps) => {
            let mut at = Vec::with_capacity(ps.len());
            for p in ps {
                at.push(args.pointer(p)?);
            }
            serde_json::to_string(&at).ok()
        }
    }
}

/// The values a grant records: pointer → value, or the whole arguments.
pub fn values_of(pointers: Option<&[String]>, args: &Value) -> Option<Value> {
    match pointers {
        None => Some(args.clone()),
        Some(ps) => {
            let mut m = serde_json::Map::new();
            for p in ps {
                m.insert(p.clone(), args.pointer(p)?.clone());
            }
            Some(Value::Object(m))
        }
    }
}

/// The key of recorded `values` (what [`values_of`] made), comparable
/// with a call's [`values_key`].
fn recorded_key(pointers: Option<&[String]>, values: &Value) -> Option<String> {
    match pointers {
        None => serde_json::to_string(values).ok(),
        Some(ps) => {
            let at: Option<Vec<&Value>> = ps.iter().map(|p| values.get(p)).collect();
            serde_json::to_string(&at?).ok()
        }
    }
}

/// Whether `args` repeat the recorded `values` at `pointers` (every
/// argument when `None`): what a grant matches.
pub fn repeats(pointers: Option<&[String]>, values: &Value, args: &Value) -> bool {
    recorded_key(pointers, values).is_some_and(|k| Some(k) == values_key(pointers, args))
}

fn own_key(g: &LiveGrant) -> Option<String> {
    recorded_key(g.pointers.as_deref(), &g.values)
}

/// The grants on one pointer set, by the canonical JSON of their values.
type ByValues = HashMap<String, Vec<Arc<LiveGrant>>>;

/// The grants of one (tool, server): per pointer set, per values.
#[derive(Default)]
struct Bucket {
    groups: Vec<(Option<Vec<String>>, ByValues)>,
}

impl Bucket {
    fn insert(&mut self, g: LiveGrant) {
        let Some(key) = own_key(&g) else {
            return;
        };
        let g = Arc::new(g);
        match self.groups.iter_mut().find(|(p, _)| *p == g.pointers) {
            Some((_, m)) => m.entry(key).or_default().push(g),
            None => {
                let mut m = HashMap::new();
                m.insert(key, vec![g.clone()]);
                self.groups.push((g.pointers.clone(), m));
            }
        }
    }

    fn remove(&mut self, id: &str) {
        for (_, m) in &mut self.groups {
            m.retain(|_, v| {
                v.retain(|g| g.id != id);
                !v.is_empty()
            });
        }
        self.groups.retain(|(_, m)| !m.is_empty());
    }
}

/// Every live grant this process knows, by tool.
#[derive(Default)]
pub struct GrantIndex {
    buckets: RwLock<HashMap<Key, Bucket>>,
}

impl std::fmt::Debug for GrantIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantIndex").finish_non_exhaustive()
    }
}

impl GrantIndex {
    pub fn new() -> GrantIndex {
        GrantIndex::default()
    }

    /// Replaces everything with `grants` (at startup).
    pub fn replace_all(&self, grants: Vec<LiveGrant>) {
        let mut b: HashMap<Key, Bucket> = HashMap::new();
        for g in grants {
            b.entry((g.tool.clone(), g.server.clone()))
                .or_default()
                .insert(g);
        }
        *self.buckets.write().unwrap_or_else(|e| e.into_inner()) = b;
    }

    /// Replaces the grants of one (tool, server) with `grants`.
    pub fn replace_tool(&self, tool: &str, server: Option<&str>, grants: Vec<LiveGrant>) {
        let mut bucket = Bucket::default();
        for g in grants {
            bucket.insert(g);
        }
        let mut all = self.buckets.write().unwrap_or_else(|e| e.into_inner());
        let key = (tool.to_string(), server.map(str::to_string));
        if bucket.groups.is_empty() {
            all.remove(&key);
        } else {
            all.insert(key, bucket);
        }
    }

    pub fn insert(&self, g: LiveGrant) {
        self.buckets
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry((g.tool.clone(), g.server.clone()))
            .or_default()
            .insert(g);
    }

    /// Drops the grants that expired before `now` (RFC 3339).
    pub fn prune(&self, now: &str) {
        let mut all = self.buckets.write().unwrap_or_else(|e| e.into_inner());
        for b in all.values_mut() {
            for (_, m) in &mut b.groups {
                m.retain(|_, v| {
                    v.retain(|g| g.expires_at.as_str() > now);
                    !v.is_empty()
                });
            }
            b.groups.retain(|(_, m)| !m.is_empty());
        }
        all.retain(|_, b| !b.groups.is_empty());
    }

    pub fn remove(&self, id: &str) {
        let mut all = self.buckets.write().unwrap_or_else(|e| e.into_inner());
        for b in all.values_mut() {
            b.remove(id);
        }
        all.retain(|_, b| !b.groups.is_empty());
    }

    /// How many grants are indexed (expired ones included until removed).
    pub fn len(&self) -> usize {
        let all = self.buckets.read().unwrap_or_else(|e| e.into_inner());
        all.values()
            .flat_map(|b| b.groups.iter())
            .map(|(_, m)| m.values().map(Vec::len).sum::<usize>())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A live grant that lets this call of `tool` on `server` in
    /// `conversation_id` with `args` run, asked by `rule`; `admits` says
    /// whether the rule's approvers admit a granter (name, roles). `now`
    /// is RFC 3339.
    pub fn find(
        &self,
        call: (&str, Option<&str>, &str),
        args: &Value,
        rule: &str,
        now: &str,
        admits: impl Fn(&str, &[String]) -> bool,
    ) -> Option<Arc<LiveGrant>> {
        let (tool, server, conversation_id) = call;
        let all = self.buckets.read().unwrap_or_else(|e| e.into_inner());
        let bucket = all.get(&(tool.to_string(), server.map(str::to_string)))?;
        for (pointers, by_values) in &bucket.groups {
            let Some(key) = values_key(pointers.as_deref(), args) else {
                continue;
            };
            let Some(candidates) = by_values.get(&key) else {
                continue;
            };
            if let Some(g) = candidates.iter().find(|g| {
                g.expires_at.as_str() > now
                    && g.rule == rule
                    && g.conversation_id
                        .as_deref()
                        .is_none_or(|c| c == conversation_id)
                    && admits(&g.granter, &g.roles)
            }) {
                return Some(g.clone());
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grant(id: &str, pointers: Option<Vec<&str>>, args: &Value, conv: Option<&str>) -> LiveGrant {
        let pointers: Option<Vec<String>> =
            pointers.map(|p| p.into_iter().map(str::to_string).collect());
        LiveGrant {
            id: id.into(),
            tool: "deploy".into(),
            server: Some("ops".into()),
            conversation_id: conv.map(str::to_string),
            rule: "annotation".into(),
            granter: "alice".into(),
            roles: vec!["approver".into()],
            values: values_of(pointers.as_deref(), args).unwrap(),
            pointers,
            expires_at: "2999-01-01T00:00:00Z".into(),
        }
    }

    const NOW: &str = "2026-11-27T12:00:00Z";

    #[test]
    fn a_grant_matches_its_pointers_scope_rule_and_time() {
        let idx = GrantIndex::new();
        let approved = json!({"name": "web", "env": "prod", "note": "first"});
        idx.insert(grant(
            "g1",
            Some(vec!["/name", "/env"]),
            &approved,
            Some("c1"),
        ));
        let yes = |_: &str, _: &[String]| true;
        let find = |args: Value, conv: &str, rule: &str| {
            idx.find(("deploy", Some("ops"), conv), &args, rule, NOW, yes)
                .map(|g| g.id.clone())
        };
        // Other arguments outside the pointers do not matter.
        assert_eq!(
            find(
                json!({"name": "web", "env": "prod", "note": "x"}),
                "c1",
                "annotation"
            ),
            Some("g1".into())
        );
        assert_eq!(
            find(json!({"name": "db", "env": "prod"}), "c1", "annotation"),
            None
        );
        assert_eq!(find(json!({"name": "web"}), "c1", "annotation"), None);
        assert_eq!(
            find(json!({"name": "web", "env": "prod"}), "c2", "annotation"),
            None
        );
        assert_eq!(
            find(json!({"name": "web", "env": "prod"}), "c1", "other"),
            None
        );
        assert!(
            idx.find(
                ("deploy", None, "c1"),
                &json!({"name": "web", "env": "prod"}),
                "annotation",
                NOW,
                yes
            )
            .is_none(),
            "another server"
        );
        assert!(
            idx.find(
                ("deploy", Some("ops"), "c1"),
                &json!({"name": "web", "env": "prod"}),
                "annotation",
                "3000-01-01T00:00:00Z",
                yes
            )
            .is_none(),
            "expired"
        );
        assert!(
            idx.find(
                ("deploy", Some("ops"), "c1"),
                &json!({"name": "web", "env": "prod"}),
                "annotation",
                NOW,
                |_, _| false
            )
            .is_none(),
            "the rule's approvers no longer admit the granter"
        );
        idx.prune(NOW);
        assert_eq!(idx.len(), 1, "not expired yet");
        idx.prune("3000-01-01T00:00:00Z");
        assert!(idx.is_empty(), "expired grants are pruned");
        idx.insert(grant("g1", Some(vec!["/name"]), &approved, Some("c1")));
        idx.remove("g1");
        assert!(idx.is_empty());
    }

    #[test]
    fn without_pointers_every_argument_must_repeat() {
        let idx = GrantIndex::new();
        idx.insert(grant("g", None, &json!({"a": 1, "b": [1, 2]}), None));
        let yes = |_: &str, _: &[String]| true;
        let hit = |args: Value| {
            idx.find(
                ("deploy", Some("ops"), "any"),
                &args,
                "annotation",
                NOW,
                yes,
            )
            .is_some()
        };
        assert!(
            hit(json!({"b": [1, 2], "a": 1})),
            "key order does not matter"
        );
        assert!(!hit(json!({"a": 1, "b": [2, 1]})));
        assert!(!hit(json!({"a": 1, "b": [1, 2], "c": null})));
    }

    #[test]
    fn a_thousand_grants_are_one_probe_per_pointer_set() {
        let idx = GrantIndex::new();
        let grants = (0..1000)
            .map(|i| {
                grant(
                    &format!("g{i}"),
                    Some(vec!["/name"]),
                    &json!({"name": format!("svc-{i}")}),
                    None,
                )
            })
            .collect();
        idx.replace_all(grants);
        assert_eq!(idx.len(), 1000);
        let yes = |_: &str, _: &[String]| true;
        let found = idx.find(
            ("deploy", Some("ops"), "c"),
            &json!({"name": "svc-777"}),
            "annotation",
            NOW,
            yes,
        );
        assert_eq!(found.map(|g| g.id.clone()), Some("g777".into()));
        idx.replace_tool("deploy", Some("ops"), Vec::new());
        assert!(idx.is_empty());
    }
}
