//! The agent as an AG-UI back end, below the HTTP edge (CLIENTS.md §3): a
//! run binds its `threadId` to one conversation, appends the user messages
//! it has not seen, decides what the `resume` entries answer through the
//! engine's one command (`decided_via: ag-ui`), and hands the edge the
//! conversation with what is new since the run began and what it waits on.
//! `http/ag_ui` writes the events.

pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod service;
