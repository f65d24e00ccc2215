-- Schema v8: A2A push notification configs (their token and credentials
-- sealed), with the last task state each was sent; the conditional update
-- of last_state makes each state queued once across replicas.
CREATE TABLE push_configs (
    uid         TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    config_id   TEXT NOT NULL,
    url         TEXT NOT NULL,
    token       TEXT,
    auth_scheme TEXT,
    credentials TEXT,
    dialect     TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    last_state  TEXT,
    UNIQUE (task_id, config_id)
);
