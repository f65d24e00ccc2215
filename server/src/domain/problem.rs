//! A problem at one place of a config: its key path and what is wrong. The
//! config and the approval rules (checked while the config loads) both say
//! what is wrong this way.

use std::fmt;

/// One thing wrong at one place in agent.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key path, e.g. `mcp_servers[0].url`; empty for the document root.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "(top level): {}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}
