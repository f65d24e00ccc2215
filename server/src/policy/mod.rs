//! Approval rules (POLICY.md §1): what happens to a tool call before its
//! annotations are consulted.
//!
//! The rules of `approvals:` are compiled once at startup (tool globs,
//! predicates, approvers) and evaluated in order for every call; the first
//! whose tool glob, server and predicates all hold decides: `allow` runs
//! the call without asking (even a destructive tool), `approve` asks the
//! rule's approvers, `deny` never runs it. No match leaves the decision to
//! the tool's annotations, as before rules existed.
//!
//! Everything that could make a rule silently useless is a startup error
//! naming the rule: a bad glob, regex or pointer, a predicate that can
//! never hold, a server that does not exist, a rule shadowed by an earlier
//! one (it could never be reached), options of another action.

mod explain;
pub mod grants;
mod predicate;
#[cfg(test)]
mod tests;

pub(crate) use crate::domain::duration::{parse as parse_duration, show as show_duration};
pub use explain::{explain, grants_note};
pub(crate) use predicate::Predicate;

use crate::domain::principal::{Principal, Role};
pub(crate) mod config;

use crate::domain::problem::Problem;
use config::{ApprovalsConfig, PredicateConfig, RuleAction, RuleConfig};
use serde_json::Value;
use std::time::Duration;

/// The compiled rules.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// How long any approval may wait (`approvals.expires_in`); a rule's
    /// own `expires_in` wins.
    pub(crate) expires_in: Option<Duration>,
    /// What an expiry does (POLICY.md §2).
    pub(crate) on_expiry: Expiry,
    /// What a call to a changed tool does (POLICY.md §4).
    pub(crate) on_tool_change: config::OnToolChange,
}

/// `on_expiry`, compiled.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum Expiry {
    /// The approval expires: the call never runs, the model is told.
    #[default]
    Reject,
    /// The first expiry adds these approvers and restarts the clock once;
    /// the second rejects.
    Escalate(Vec<Approver>),
}

/// One compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(crate) name: String,
    /// 1-based, as `agent policy explain` numbers them.
    pub(crate) number: usize,
    /// The tool glob as written.
    pub(crate) tool: String,
    matcher: globset::GlobMatcher,
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

/// An entry of `approvers:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Approver {
    Role(Role),
    Name(String),
}

impl Approver {
    /// `role:admin` or a principal's name.
    pub(crate) fn parse(s: &str) -> Result<Approver, String> {
        let s = s.trim();
        if let Some(r) = s.strip_prefix("role:") {
            return Role::parse(r.trim()).map(Approver::Role).ok_or_else(|| {
                format!(
                    "{s:?} names no role: use role:viewer, role:requester, role:approver or role:admin"
                )
            });
        }
        if s.is_empty() || s.chars().any(char::is_whitespace) {
            return Err(format!(
                "{s:?} is neither `role:<role>` nor a principal's name"
            ));
        }
        Ok(Approver::Name(s.to_string()))
    }

    /// Whether `p` is one of these.
    pub(crate) fn admits(&self, p: &Principal) -> bool {
        match self {
            Approver::Role(r) => p.allow(*r),
            Approver::Name(n) => &p.name == n,
        }
    }
}

/// Whether a rule's recorded `approvers` (`role:approver`, names) admit
/// `p`; empty admits everyone (the role the route needs still applies).
pub(crate) fn admitted(approvers: &[String], p: &Principal) -> bool {
    approvers.is_empty()
        || approvers
            .iter()
            .any(|entry| Approver::parse(entry).is_ok_and(|who| who.admits(p)))
}

impl std::fmt::Display for Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Approver::Role(r) => write!(f, "role:{r}"),
            Approver::Name(n) => f.write_str(n),
        }
    }
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

impl Policy {
    /// Compiles `config`; `servers` are the names a rule's `server:` may
    /// use (MCP servers and sub-agents).
    pub fn compile(config: &ApprovalsConfig, servers: &[String]) -> Result<Policy, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut rules: Vec<Rule> = Vec::new();
        let expires_in = match &config.expires_in {
            None => None,
            Some(t) => match parse_duration(t) {
                Ok(d) => Some(d),
                Err(e) => {
                    problems.push(Problem::new("approvals.expires_in", e));
                    None
                }
            },
        };
        let mut escalate_to = Vec::new();
        for (j, a) in config.escalate_to.iter().enumerate() {
            match Approver::parse(a) {
                Ok(a) => escalate_to.push(a),
                Err(e) => problems.push(Problem::new(format!("approvals.escalate_to[{j}]"), e)),
            }
        }
        let on_expiry = match config.on_expiry {
            config::OnExpiry::Reject => {
                if !config.escalate_to.is_empty() {
                    problems.push(Problem::new(
                        "approvals.escalate_to",
                        "only applies with `on_expiry: escalate`: set it, or remove escalate_to",
                    ));
                }
                Expiry::Reject
            }
            config::OnExpiry::Escalate => {
                if config.escalate_to.is_empty() {
                    problems.push(Problem::new(
                        "approvals.escalate_to",
                        "is required with `on_expiry: escalate`: who may decide after the first expiry, e.g. [role:admin]",
                    ));
                }
                let any_expiry = config.expires_in.is_some()
                    || config.rules.iter().any(|r| r.expires_in.is_some());
                if !any_expiry {
                    problems.push(Problem::new(
                        "approvals.on_expiry",
                        "nothing expires: set approvals.expires_in (or a rule's expires_in)",
                    ));
                }
                Expiry::Escalate(escalate_to)
            }
        };
        for (i, rc) in config.rules.iter().enumerate() {
            let at = format!("approvals.rules[{i}]");
            match compile_rule(rc, i + 1, &at, servers, &mut problems) {
                Some(rule) => {
                    if let Some(earlier) = rules.iter().find(|e| e.shadows(&rule)) {
                        problems.push(Problem::new(
                            at,
                            format!(
                                "rule `{}` can never match: rule `{}` before it matches every call it would",
                                rule.name, earlier.name
                            ),
                        ));
                    }
                    if rules.iter().any(|e| e.name == rule.name) {
                        problems.push(Problem::new(
                            format!("approvals.rules[{i}].name"),
                            format!("`{}` names two rules: give each its own name", rule.name),
                        ));
                    }
                    rules.push(rule);
                }
                None => continue,
            }
        }
        if problems.is_empty() {
            Ok(Policy {
                rules,
                expires_in,
                on_expiry,
                on_tool_change: config.on_tool_change,
            })
        } else {
            Err(problems)
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule that decides a call to `tool` on `server` with `args`, if
    /// any (else the annotations decide).
    pub fn evaluate(&self, tool: &str, server: Option<&str>, args: &Value) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matches(tool, server, args))
    }

    /// The rules that may decide calls to `tool` on `server`, in order, up
    /// to the first that decides every call (the rest cannot be reached).
    pub(crate) fn rules_for(&self, tool: &str, server: &str) -> (Vec<RuleRef>, bool) {
        let mut out = Vec::new();
        for r in &self.rules {
            if !r.applies_to(tool, Some(server)) {
                continue;
            }
            out.push(RuleRef {
                name: r.name.clone(),
                action: r.action.as_str(),
                conditional: !r.when.is_empty(),
            });
            if r.when.is_empty() {
                return (out, true);
            }
        }
        (out, false)
    }
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
    fn shadows(&self, later: &Rule) -> bool {
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

fn compile_rule(
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
    let not_here = |field: &str, what: &str, problems: &mut Vec<Problem>| {
        problems.push(Problem::new(
            format!("{at}.{field}"),
            format!("only applies to {what}: remove it, or change `action`"),
        ))
    };
    let action = match rc.action {
        RuleAction::Allow | RuleAction::Deny => {
            for (field, set) in [
                ("approvers", rc.approvers.is_some()),
                ("quorum", rc.quorum.is_some()),
                ("expires_in", rc.expires_in.is_some()),
            ] {
                if set {
                    not_here(field, "`action: approve`", problems);
                }
            }
            if rc.action == RuleAction::Allow {
                if rc.reason.is_some() {
                    not_here("reason", "`action: deny`", problems);
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
                not_here("reason", "`action: deny`", problems);
            }
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
                            Err(e) => {
                                problems.push(Problem::new(format!("{at}.approvers[{j}]"), e))
                            }
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
            Action::Approve(Ask {
                approvers,
                quorum,
                expires_in,
            })
        }
    };
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
