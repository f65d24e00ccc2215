//! One compiled rule of `approvals.rules`: its tool glob, server,
//! predicates and action, whether it fits a call, whether an earlier rule
//! shadows it, and compiling it from the config with every problem named.

use super::approver::Approver;
use super::config::{PredicateConfig, RuleAction, RuleConfig};
use super::predicate::Predicate;
use crate::domain::duration::parse as parse_duration;
use crate::domain::principal::Role;
use crate::domain::problem::Problem;
use serde_json::Value;
use std::time::Duration;

/// One compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(crate) name: String,
    /// 1-based, as `agent policy explain` numbers them.
    pub(crate) number: usize,
    /// The tool glob as written.
    pub(crate) tool: String,
    pub(super) matcher: globset::GlobMatcher,
    pub(crate) server: Option<String>,
    /// (pointer, predicates), in the config's order.
    pub(crate) when: Vec<(String, Vec<Predicate>)>,
    pub(crate) action: Action,
    /// The `when:` as written (to find shadowed rules).
    written: Vec<(String, PredicateConfig)>,
}

/// What a matching rule does.
#[derive(Clone, Debug)]
pub(crate) enum Action {
    Allow,
    Approve(Ask),
    Deny { reason: String },
}

/// Who must approve, and how many.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ask {
    pub(crate) approvers: Vec<Approver>,
    pub(crate) quorum: u32,
    pub(crate) expires_in: Option<Duration>,
}

impl Action {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Approve(_) => "approve",
            Action::Deny { .. } => "deny",
        }
    }
}

/// A rule as `GET /tools` lists it for one tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleRef {
    pub(crate) name: String,
    pub(crate) action: &'static str,
    /// It has `when:` predicates, so it decides only some calls.
    pub(crate) conditional: bool,
}

impl Rule {
    /// The tool glob and the server (not the predicates) fit the call.
    pub(crate) fn applies_to(&self, tool: &str, server: Option<&str>) -> bool {
        self.matcher.is_match(tool)
            && match (&self.server, server) {
                (None, _) => true,
                (Some(want), Some(got)) => want == got,
                (Some(_), None) => false,
            }
    }

    pub(crate) fn matches(&self, tool: &str, server: Option<&str>, args: &Value) -> bool {
        self.applies_to(tool, server)
            && self
                .when
                .iter()
                .all(|(ptr, preds)| preds.iter().all(|p| p.holds(args.pointer(ptr))))
    }

    /// Whether every call `later` matches is matched by this rule first.
    pub(super) fn shadows(&self, later: &Rule) -> bool {
        let server = self.server.is_none() || self.server == later.server;
        let literal = !later.tool.contains(['*', '?', '[', '{', '\\']);
        let tool = self.tool == "*"
            || self.tool == later.tool
            || (literal && self.matcher.is_match(&later.tool));
        // Each of our predicates is also one of the later rule's.
        let when = self.written.iter().all(|(ptr, mine)| {
            later
                .written
                .iter()
                .any(|(p, theirs)| p == ptr && implied(mine, theirs))
        });
        server && tool && when
    }
}

/// Every predicate set in `mine` is set, the same, in `theirs`.
fn implied(mine: &PredicateConfig, theirs: &PredicateConfig) -> bool {
    fn same<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
        a.is_none() || a == b
    }
    same(&mine.equals, &theirs.equals)
        && same(&mine.one_of, &theirs.one_of)
        && same(&mine.regex, &theirs.regex)
        && same(&mine.min, &theirs.min)
        && same(&mine.max, &theirs.max)
        && same(&mine.host_in, &theirs.host_in)
        && same(&mine.exists, &theirs.exists)
}

pub(super) fn compile_rule(
    rc: &RuleConfig,
    number: usize,
    at: &str,
    servers: &[String],
    problems: &mut Vec<Problem>,
) -> Option<Rule> {
    let before = problems.len();
    let name = rc.name.trim().to_string();
    if name.is_empty() {
        problems.push(Problem::new(format!("{at}.name"), "must not be empty"));
    }
    let matcher = match globset::Glob::new(rc.tool.trim()) {
        Ok(g) if !rc.tool.trim().is_empty() => Some(g.compile_matcher()),
        Ok(_) => {
            problems.push(Problem::new(
                format!("{at}.tool"),
                "must not be empty: a tool name or a glob such as `resources_*`",
            ));
            None
        }
        Err(e) => {
            problems.push(Problem::new(
                format!("{at}.tool"),
                format!("{:?} is not a valid glob: {}", rc.tool, e.kind()),
            ));
            None
        }
    };
    if let Some(s) = &rc.server
        && !servers.iter().any(|k| k == s)
    {
        let known = if servers.is_empty() {
            "this config has none".to_string()
        } else {
            format!("known are {}", servers.join(", "))
        };
        problems.push(Problem::new(
            format!("{at}.server"),
            format!("`{s}` names no MCP server or sub-agent of this agent ({known})"),
        ));
    }
    let mut when = Vec::new();
    for (ptr, pc) in &rc.when {
        let here = format!("{at}.when.{ptr}");
        if !(ptr.is_empty() || ptr.starts_with('/')) {
            problems.push(Problem::new(
                here,
                format!("{ptr:?} is not a JSON pointer: write it as /field or /field/0/name"),
            ));
            continue;
        }
        match Predicate::compile(pc) {
            Ok(p) => when.push((ptr.clone(), p)),
            Err(e) => problems.push(Problem::new(here, e)),
        }
    }
    let action = compile_action(rc, at, &name, problems);
    let matcher = matcher?;
    (problems.len() == before).then(|| Rule {
        name,
        number,
        tool: rc.tool.trim().to_string(),
        matcher,
        server: rc.server.clone(),
        when,
        action,
        written: rc
            .when
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    })
}

/// The rule's action, with every option that belongs to another action
/// named as a problem.
fn compile_action(rc: &RuleConfig, at: &str, name: &str, problems: &mut Vec<Problem>) -> Action {
    match rc.action {
        RuleAction::Allow | RuleAction::Deny => {
            for (field, set) in [
                ("approvers", rc.approvers.is_some()),
                ("quorum", rc.quorum.is_some()),
                ("expires_in", rc.expires_in.is_some()),
            ] {
                if set {
                    not_here(at, field, "`action: approve`", problems);
                }
            }
            if rc.action == RuleAction::Allow {
                if rc.reason.is_some() {
                    not_here(at, "reason", "`action: deny`", problems);
                }
                Action::Allow
            } else {
                Action::Deny {
                    reason: rc
                        .reason
                        .as_deref()
                        .map(str::trim)
                        .filter(|r| !r.is_empty())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("the rule `{name}` denies it")),
                }
            }
        }
        RuleAction::Approve => {
            if rc.reason.is_some() {
                not_here(at, "reason", "`action: deny`", problems);
            }
            Action::Approve(compile_ask(rc, at, problems))
        }
    }
}

/// An option set that only applies to another action.
fn not_here(at: &str, field: &str, what: &str, problems: &mut Vec<Problem>) {
    problems.push(Problem::new(
        format!("{at}.{field}"),
        format!("only applies to {what}: remove it, or change `action`"),
    ))
}

/// Who an `action: approve` rule asks, how many must agree, and how long
/// they have.
fn compile_ask(rc: &RuleConfig, at: &str, problems: &mut Vec<Problem>) -> Ask {
    let mut approvers = Vec::new();
    match &rc.approvers {
        Some(list) if list.is_empty() => problems.push(Problem::new(
            format!("{at}.approvers"),
            "is empty, so nobody could decide: list roles (role:approver) or names, or remove it",
        )),
        Some(list) => {
            for (j, a) in list.iter().enumerate() {
                match Approver::parse(a) {
                    Ok(a) => approvers.push(a),
                    Err(e) => problems.push(Problem::new(format!("{at}.approvers[{j}]"), e)),
                }
            }
        }
        None => approvers.push(Approver::Role(Role::Approver)),
    }
    let quorum = rc.quorum.unwrap_or(1);
    let names = approvers
        .iter()
        .filter(|a| matches!(a, Approver::Name(_)))
        .count();
    if quorum == 0 {
        problems.push(Problem::new(format!("{at}.quorum"), "must be at least 1"));
    } else if quorum > 100 {
        problems.push(Problem::new(
            format!("{at}.quorum"),
            format!("{quorum} is too many: use 1 to 100"),
        ));
    } else if names == approvers.len() && names > 0 && (quorum as usize) > names {
        problems.push(Problem::new(
            format!("{at}.quorum"),
            format!(
                "needs {quorum} distinct approvers but `approvers` names only {names}, so it could never be reached"
            ),
        ));
    }
    let expires_in = match &rc.expires_in {
        None => None,
        Some(t) => match parse_duration(t) {
            Ok(d) => Some(d),
            Err(e) => {
                problems.push(Problem::new(format!("{at}.expires_in"), e));
                None
            }
        },
    };
    Ask {
        approvers,
        quorum,
        expires_in,
    }
}
