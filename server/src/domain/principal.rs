//! Who is calling: a [`Principal`] (a name and its [`Roles`]), and who may
//! decide an approval ([`may_decide`]).
//!
//! Roles add up (AUTH.md §2): `viewer` reads; `requester` also starts and
//! sends; `approver` also decides; `admin` may do everything. Every other
//! role implies `viewer`, so "may read" is "has any role".

use std::fmt;

/// One of the four roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    Viewer,
    Requester,
    Approver,
    Admin,
}

impl Role {
    pub(crate) fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "requester" => Some(Role::Requester),
            "approver" => Some(Role::Approver),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Requester => "requester",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Role::Viewer => 1,
            Role::Requester => 2,
            Role::Approver => 4,
            Role::Admin => 8,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of roles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Roles(u8);

impl Roles {
    /// Every role (mode `none`: nothing is enforced).
    pub(crate) const ALL: Roles = Roles(15);
    pub(crate) const NONE: Roles = Roles(0);

    pub(crate) fn with(self, r: Role) -> Roles {
        Roles(self.0 | r.bit())
    }

    /// The roles of either.
    pub(crate) fn union(self, other: Roles) -> Roles {
        Roles(self.0 | other.0)
    }

    /// Parses role names, skipping unknown ones (config validation has
    /// refused those already; claims from an IdP may carry others).
    pub(crate) fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Roles {
        names
            .into_iter()
            .filter_map(Role::parse)
            .fold(Roles::NONE, Roles::with)
    }

    /// Whether these roles grant what `need` grants.
    pub(crate) fn allow(self, need: Role) -> bool {
        if self.0 & Role::Admin.bit() != 0 {
            return true;
        }
        match need {
            Role::Viewer => self.0 != 0,
            r => self.0 & r.bit() != 0,
        }
    }

    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The role names, in the table's order.
    pub(crate) fn names(self) -> Vec<&'static str> {
        [Role::Viewer, Role::Requester, Role::Approver, Role::Admin]
            .into_iter()
            .filter(|r| self.0 & r.bit() != 0)
            .map(Role::as_str)
            .collect()
    }
}

/// How a principal proved who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Source {
    /// Mode `none`: nobody is asked.
    #[default]
    Anonymous,
    /// A static operator token (mode `tokens`).
    Token,
    /// A bearer JWT from the OpenID provider.
    Jwt,
    /// Headers from a trusted authenticating proxy.
    Proxy,
    /// A browser session cookie.
    Session,
    /// A Slack user mapped to the principal (REACH.md §2), proved by the
    /// signature of Slack's request.
    Slack,
}

/// Who is calling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Principal {
    /// The name recorded in approvals and the audit trail.
    pub(crate) name: String,
    pub(crate) roles: Roles,
    pub(crate) source: Source,
    /// When the credential that proved it ends: an OpenID bearer's `exp`,
    /// a browser session's end; `None` when it does not end on its own (an
    /// operator token, a proxy's headers). What this principal grants ends
    /// with it (REACH.md §3).
    pub(crate) expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A browser sign-in session, as a request carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SignIn {
    /// The hash of the session's id (its key in the store).
    pub(crate) id_hash: String,
    /// When it ends (RFC 3339).
    pub(crate) expires_at: String,
}

/// The principal of mode `none`.
pub(crate) const ANONYMOUS: &str = "anonymous";

impl Default for Principal {
    fn default() -> Self {
        Principal::anonymous()
    }
}

impl Principal {
    /// Mode `none`: an unnamed caller who may do everything.
    pub(crate) fn anonymous() -> Principal {
        Principal {
            name: ANONYMOUS.into(),
            roles: Roles::ALL,
            source: Source::Anonymous,
            expires_at: None,
        }
    }

    /// Whether this principal may act as `need`.
    pub(crate) fn allow(&self, need: Role) -> bool {
        self.roles.allow(need)
    }
}

/// Why a principal may not decide an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecideRefusal {
    /// The role is missing.
    Role,
    /// Separation of duties: they raised it.
    OwnRequest,
}

impl DecideRefusal {
    pub(crate) fn message(&self, who: &str) -> String {
        match self {
            DecideRefusal::Role => format!(
                "{who} may not decide approvals: the role `approver` (or `admin`) is missing"
            ),
            DecideRefusal::OwnRequest => format!(
                "{who} raised this approval and may not decide it (separation of duties): another approver must"
            ),
        }
    }
}

/// Whether `p` may decide an approval raised by `requested_by`. `Ok(true)`
/// means an admin overrode separation of duties (the audit row says so).
pub(crate) fn may_decide(
    enforced: bool,
    separation_of_duties: bool,
    p: &Principal,
    requested_by: Option<&str>,
) -> Result<bool, DecideRefusal> {
    if !enforced {
        return Ok(false);
    }
    if !p.allow(Role::Approver) {
        return Err(DecideRefusal::Role);
    }
    let own = separation_of_duties && requested_by == Some(p.name.as_str());
    if own && !p.allow(Role::Admin) {
        return Err(DecideRefusal::OwnRequest);
    }
    Ok(own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_add_up_and_admin_may_do_everything() {
        let r = Roles::from_names(["requester", "approver"]);
        assert!(r.allow(Role::Viewer) && r.allow(Role::Requester) && r.allow(Role::Approver));
        assert!(!r.allow(Role::Admin));
        let v = Roles::from_names(["viewer"]);
        assert!(v.allow(Role::Viewer) && !v.allow(Role::Requester) && !v.allow(Role::Approver));
        let a = Roles::from_names(["admin"]);
        assert!(
            [Role::Viewer, Role::Requester, Role::Approver, Role::Admin]
                .iter()
                .all(|x| a.allow(*x))
        );
        assert!(!Roles::NONE.allow(Role::Viewer));
        assert_eq!(
            Roles::from_names(["bogus", "approver"]).names(),
            vec!["approver"]
        );
    }

    fn p(name: &str, roles: &[&str]) -> Principal {
        Principal {
            name: name.into(),
            roles: Roles::from_names(roles.iter().copied()),
            source: Source::Token,
            expires_at: None,
        }
    }

    #[test]
    fn deciding_needs_the_role_and_someone_else_s_request() {
        assert_eq!(
            may_decide(true, true, &p("bob", &["requester"]), Some("x")),
            Err(DecideRefusal::Role)
        );
        assert_eq!(
            may_decide(true, true, &p("al", &["approver"]), Some("bob")),
            Ok(false)
        );
        assert_eq!(
            may_decide(true, true, &p("al", &["requester", "approver"]), Some("al")),
            Err(DecideRefusal::OwnRequest)
        );
        assert_eq!(
            may_decide(true, false, &p("al", &["approver"]), Some("al")),
            Ok(false)
        );
        assert_eq!(
            may_decide(true, true, &p("ops", &["admin"]), Some("ops")),
            Ok(true)
        );
        assert_eq!(
            may_decide(false, true, &Principal::anonymous(), Some("anonymous")),
            Ok(false)
        );
    }
}
