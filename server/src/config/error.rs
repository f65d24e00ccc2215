//! Config errors. Every problem names the file, the key path (as written in
//! YAML, e.g. `agent.agents[1].type`) and what is expected, because the person
//! reading it is editing that file at that key.

use std::fmt;
use std::path::PathBuf;

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

/// Why agent.yaml could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read the config file: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not valid YAML: {message}", file.display())]
    Syntax { file: PathBuf, message: String },
    #[error("{}: {}", file.display(), format_problems(problems))]
    Invalid {
        file: PathBuf,
        problems: Vec<Problem>,
    },
}

impl ConfigError {
    /// The individual problems (one for read and syntax errors).
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            ConfigError::Read { source, .. } => vec![Problem::new("", source.to_string())],
            ConfigError::Syntax { message, .. } => vec![Problem::new("", message.clone())],
            ConfigError::Invalid { problems, .. } => problems.clone(),
        }
    }
}

fn format_problems(problems: &[Problem]) -> String {
    match problems {
        [one] => one.to_string(),
        many => {
            let mut s = format!("{} problems:", many.len());
            for p in many {
                s.push_str("\n  - ");
                s.push_str(&p.to_string());
            }
            s
        }
    }
}
