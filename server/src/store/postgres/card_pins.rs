//! Agent Card pins on PostgreSQL: the statements of [`CardPinTx`] on a
//! [`PgTx`].

use super::tx::PgTx;
use crate::store::card_pins::{CARD_PIN_COLUMNS, CardPinRow, HeldCard};
use crate::store::error::StoreError;
use crate::store::tx::CardPinTx;
use postgres::Row;

impl CardPinTx for PgTx<'_> {
    fn card_pins(&self) -> Result<Vec<CardPinRow>, StoreError> {
        let sql = format!("SELECT {CARD_PIN_COLUMNS} FROM card_pins ORDER BY agent");
        Ok(self.query(&sql, &[])?.iter().map(row).collect())
    }
    fn card_pin(&self, agent: &str) -> Result<Option<CardPinRow>, StoreError> {
        // `FOR UPDATE` locks nothing while the row does not exist: two
        // replicas seeing an agent's first card would both record (and
        // audit) it. A lock on the agent's name serializes them.
        self.query(
            "SELECT pg_advisory_xact_lock(hashtext('card_pins:' || $1))",
            &[&agent],
        )?;
        let sql = format!("SELECT {CARD_PIN_COLUMNS} FROM card_pins WHERE agent = $1 FOR UPDATE");
        Ok(self.first(&sql, &[&agent])?.as_ref().map(row))
    }
    fn put_card_pin(&self, p: &CardPinRow) -> Result<(), StoreError> {
        let h = p.held.as_ref();
        let (hd, hc, hr, ha) = (
            h.map(|h| &h.digest),
            h.map(|h| &h.card),
            h.map(|h| &h.reason),
            h.map(|h| &h.at),
        );
        self.exec(
            &format!(
                "INSERT INTO card_pins ({CARD_PIN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 ON CONFLICT (agent) DO UPDATE SET url = EXCLUDED.url, digest = EXCLUDED.digest, \
                 card = EXCLUDED.card, pinned_at = EXCLUDED.pinned_at, pinned_by = EXCLUDED.pinned_by, \
                 held_digest = EXCLUDED.held_digest, held_card = EXCLUDED.held_card, \
                 held_reason = EXCLUDED.held_reason, held_at = EXCLUDED.held_at"
            ),
            &[
                &p.agent,
                &p.url,
                &p.digest,
                &p.card,
                &p.pinned_at,
                &p.pinned_by,
                &hd,
                &hc,
                &hr,
                &ha,
            ],
        )?;
        Ok(())
    }
}

fn row(r: &Row) -> CardPinRow {
    CardPinRow {
        agent: r.get(0),
        url: r.get(1),
        digest: r.get(2),
        card: r.get(3),
        pinned_at: r.get(4),
        pinned_by: r.get(5),
        held: HeldCard::of(r.get(6), r.get(7), r.get(8), r.get(9)),
    }
}
