//! Who may decide an approval a rule asks for: an `approvers:` entry
//! (`role:<role>` or a principal's name), parsed once and checked against
//! the principal deciding. Its own file because rules, the compiled table
//! and the engine's grant checks all read it.

use crate::domain::principal::{Principal, Role};

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
