//! Ids and timestamps as every layer writes them.

/// The current time as stored: RFC 3339, UTC, milliseconds.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A fresh id: a UUID v7 (a millisecond timestamp, then random bits).
///
/// Time-ordered ids keep SQLite's `UNIQUE(id)` indexes append-only: new
/// rows land on the same rightmost index page, so a group commit of many
/// new conversations writes that page once instead of one random page per
/// row, and the hot pages stay cached. Seventy-odd random bits per id keep
/// them unguessable; the time they reveal is already in `created_at`.
pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A short random id: 8 hex characters from a CSPRNG, so ids are not
/// guessable from one another (a request's session id, an internal
/// error's correlation id).
pub(crate) fn short_id() -> String {
    use rand::Rng;
    format!("{:08x}", rand::rng().random::<u32>())
}
