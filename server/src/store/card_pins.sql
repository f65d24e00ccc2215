-- Agent Card pins (A2A signed cards): per sub-agent whose signing key is
-- pinned (`a2a[].trust`), the card last trusted (its signature verified,
-- or an admin accepted it: `pinned_by`) and a card held because it cannot
-- be trusted, waiting for an admin. One text for both backends: SQLite
-- migration 15 and PostgreSQL schema v12.
CREATE TABLE card_pins (
    agent       TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    digest      TEXT,
    card        TEXT,
    pinned_at   TEXT,
    pinned_by   TEXT,
    held_digest TEXT,
    held_card   TEXT,
    held_reason TEXT,
    held_at     TEXT
);
