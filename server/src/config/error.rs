//! Config errors. Every problem names the file, the key path (as written in
//! YAML, e.g. `agent.agents[1].type`) and what is expected, because the person
//! reading it is editing that file at that key.

pub use crate::domain::problem::Problem;
use std::path::PathBuf;

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
