//! The intents of one entity each (`impl Store` blocks), kept apart from
//! the entity's types and decoders in `store/<entity>.rs`: the backends and
//! [`Tx`](super::tx::Tx) import those types, and the intents import the
//! facade, so one file holding both would close a ring through the
//! backends.

mod card_pins;
mod conversations;
mod grants;
mod notifications;
mod pins;
mod push;
mod questions;
mod sessions;
