-- Schema v2: what lets several replicas share the database.

-- One row per conversation that ever ran a turn. `owner` is the replica
-- running it now (NULL when none is); `epoch` grows with every claim and is
-- the fencing token every write of the turn checks; `lease_until` is on the
-- database's clock, so replicas' clocks never matter. `cancel_requested` is
-- set by a replica asked to cancel a turn another replica runs.
CREATE TABLE leases (
    conversation_id  TEXT PRIMARY KEY,
    owner            TEXT,
    epoch            BIGINT NOT NULL,
    lease_until      TIMESTAMPTZ,
    cancel_requested BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX leases_expired ON leases (lease_until) WHERE owner IS NOT NULL;

-- Live events. `seq` comes from the one-row `event_head`, whose row lock
-- is held until commit, so events become visible in `seq` order and a
-- reader that saw N has seen everything before N.
CREATE TABLE event_head (
    only_row BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
    seq      BIGINT NOT NULL
);
INSERT INTO event_head (seq) VALUES (0);
CREATE TABLE events (
    seq             BIGINT PRIMARY KEY,
    conversation_id TEXT,
    at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    payload         JSONB NOT NULL
);
