//! Mode `tokens`: static operator credentials from the environment.
//!
//! Only SHA-256 digests of the tokens are kept in memory. A presented token
//! is hashed and compared with every entry in constant time
//! (`subtle::ConstantTimeEq`), without stopping at a match, so neither the
//! time nor the length of the comparison tells an attacker how close a
//! guess was.

use crate::config::TokenConfig;
use crate::domain::principal::{Principal, Roles, Source};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

struct Entry {
    digest: [u8; 32],
    name: String,
    roles: Roles,
}

/// The configured tokens.
#[derive(Default)]
pub(crate) struct Tokens {
    entries: Vec<Entry>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Tokens {
    pub(crate) fn new(config: &[TokenConfig]) -> Tokens {
        Tokens {
            entries: config
                .iter()
                .map(|t| Entry {
                    digest: digest(t.token.expose()),
                    name: t.name.clone(),
                    roles: Roles::from_names(t.roles.iter().map(String::as_str)),
                })
                .collect(),
        }
    }

    /// The principal `token` belongs to, if any.
    pub(crate) fn find(&self, token: &str) -> Option<Principal> {
        let d = digest(token);
        let mut found = None;
        for e in &self.entries {
            if bool::from(e.digest.ct_eq(&d)) {
                found = Some(e);
            }
        }
        found.map(|e| Principal {
            name: e.name.clone(),
            roles: e.roles,
            source: Source::Token,
            expires_at: None,
        })
    }

    /// The roles of the principal named `name` (the union when several
    /// tokens carry that name).
    pub(crate) fn roles_of(&self, name: &str) -> Option<Roles> {
        self.entries
            .iter()
            .filter(|e| e.name == name)
            .map(|e| e.roles)
            .reduce(Roles::union)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    #[test]
    fn a_token_finds_its_principal_and_nothing_else_does() {
        let t = Tokens::new(&[
            TokenConfig {
                name: "alice".into(),
                token: Secret("a".repeat(20)),
                roles: vec!["approver".into()],
            },
            TokenConfig {
                name: "bob".into(),
                token: Secret("b".repeat(20)),
                roles: vec!["requester".into()],
            },
        ]);
        let p = t.find(&"a".repeat(20)).unwrap();
        assert_eq!(p.name, "alice");
        assert!(p.allow(crate::domain::principal::Role::Approver));
        assert_eq!(t.find(&"b".repeat(20)).unwrap().name, "bob");
        assert!(t.find(&"a".repeat(19)).is_none());
        assert!(t.find("").is_none());
    }
}
