//! Agent Card pins on SQLite: the statements of [`CardPinTx`].

use crate::store::card_pins::{CARD_PIN_COLUMNS, CardPinRow, HeldCard};
use crate::store::error::StoreError;
use crate::store::tx::CardPinTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

impl CardPinTx for Connection {
    fn card_pins(&self) -> Result<Vec<CardPinRow>, StoreError> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {CARD_PIN_COLUMNS} FROM card_pins ORDER BY agent"
        ))?;
        let rows = stmt.query_map([], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
    fn card_pin(&self, agent: &str) -> Result<Option<CardPinRow>, StoreError> {
        Ok(self
            .prepare_cached(&format!(
                "SELECT {CARD_PIN_COLUMNS} FROM card_pins WHERE agent = ?1"
            ))?
            .query_row(params![agent], row)
            .optional()?)
    }
    fn put_card_pin(&self, p: &CardPinRow) -> Result<(), StoreError> {
        let h = p.held.as_ref();
        self.prepare_cached(&format!(
            "INSERT OR REPLACE INTO card_pins ({CARD_PIN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        ))?
        .execute(params![
            p.agent,
            p.url,
            p.digest,
            p.card,
            p.pinned_at,
            p.pinned_by,
            h.map(|h| &h.digest),
            h.map(|h| &h.card),
            h.map(|h| &h.reason),
            h.map(|h| &h.at),
        ])?;
        Ok(())
    }
}

fn row(r: &Row<'_>) -> rusqlite::Result<CardPinRow> {
    Ok(CardPinRow {
        agent: r.get(0)?,
        url: r.get(1)?,
        digest: r.get(2)?,
        card: r.get(3)?,
        pinned_at: r.get(4)?,
        pinned_by: r.get(5)?,
        held: HeldCard::of(r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
    })
}
