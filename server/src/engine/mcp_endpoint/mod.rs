//! The agent as an MCP server's tool, below the HTTP edge (CLIENTS.md §1,
//! §2): [`service`] runs a call and settles its pauses through the
//! engine's commands; [`round_state`] seals a 2026-07-28 round's
//! `requestState`; [`reply`] is what a call comes back with; [`tool`]
//! is the tool itself; [`tasks`] the Tasks extension's view of a call.

pub(crate) mod reply;
pub(crate) mod round_state;
pub(crate) mod service;
pub(crate) mod tasks;
pub(crate) mod tool;
