//! The UI's page links for the layers below: the one place outside the
//! route table that knows where a conversation, the tools page and a
//! signed link live, handed to the notifier (and any engine caller that
//! must point a person at a page) as [`crate::domain::pages::Pages`].

use crate::domain::pages::Pages;

/// Links under one base URL (`public_url`, else the listening address).
pub(crate) struct UiPages {
    base: String,
}

impl UiPages {
    /// Links under `base` (a trailing `/` is dropped).
    pub(crate) fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
        }
    }
}

impl Pages for UiPages {
    fn conversation(&self, id: &str) -> String {
        format!("{}/ui/conversations/{id}", self.base)
    }

    fn tools(&self) -> String {
        format!("{}/ui/tools", self.base)
    }

    fn signed_link(&self, token: &str) -> String {
        format!("{}/ui/link/{token}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_sit_under_the_base_without_a_double_slash() {
        let p = UiPages::new("https://agent.example/");
        assert_eq!(
            p.conversation("c1"),
            "https://agent.example/ui/conversations/c1"
        );
        assert_eq!(p.tools(), "https://agent.example/ui/tools");
        assert_eq!(p.signed_link("t.s"), "https://agent.example/ui/link/t.s");
    }
}
