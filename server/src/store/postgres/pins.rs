//! Tool pins on PostgreSQL: the statements of [`PinTx`] on a [`PgTx`].

use super::tx::PgTx;
use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::pins::{PIN_COLUMNS, PinRow};
use crate::store::tx::PinTx;
use postgres::Row;

impl PinTx for PgTx<'_> {
    fn pins(&self) -> Result<Vec<PinRow>, StoreError> {
        let sql = format!(
            "SELECT {} FROM tool_pins ORDER BY server, tool",
            PIN_COLUMNS
        );
        Ok(self.query(&sql, &[])?.iter().map(pin_row).collect())
    }
    fn pin(&self, server: &str, tool: &str) -> Result<Option<PinRow>, StoreError> {
        let sql = format!(
            "SELECT {} FROM tool_pins WHERE server = $1 AND tool = $2 FOR UPDATE",
            PIN_COLUMNS
        );
        Ok(self.first(&sql, &[&server, &tool])?.as_ref().map(pin_row))
    }
    fn insert_pin(&self, p: &PinRow) -> Result<bool, StoreError> {
        Ok(self.exec(
            "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (server, tool) DO NOTHING",
            &[&p.server, &p.tool, &p.digest, &p.definition, &p.pinned_at],
        )? == 1)
    }
    fn set_pin_change(
        &self,
        server: &str,
        tool: &str,
        change: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError> {
        let (d, j, at) = match change {
            Some((d, j, at)) => (Some(d), Some(j), Some(at)),
            None => (None, None, None),
        };
        self.exec(
            "UPDATE tool_pins SET changed_digest = $3, changed_definition = $4, changed_at = $5 \
             WHERE server = $1 AND tool = $2",
            &[&server, &tool, &d, &j, &at],
        )?;
        Ok(())
    }
    fn accept_pin(&self, server: &str, tool: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE tool_pins SET digest = changed_digest, definition = changed_definition, pinned_at = $3, \
             changed_digest = NULL, changed_definition = NULL, changed_at = NULL \
             WHERE server = $1 AND tool = $2 AND changed_digest IS NOT NULL",
            &[&server, &tool, &now()],
        )? == 1)
    }
}

fn pin_row(r: &Row) -> PinRow {
    PinRow {
        server: r.get(0),
        tool: r.get(1),
        digest: r.get(2),
        definition: r.get(3),
        pinned_at: r.get(4),
        changed: match (r.get(5), r.get(6), r.get(7)) {
            (Some(d), Some(j), Some(at)) => Some((d, j, at)),
            _ => None,
        },
    }
}
