//! Grants on SQLite: the statements of [`GrantTx`], as plain functions on
//! a connection.

use crate::store::error::StoreError;
use crate::store::grants::{GRANT_COLUMNS, GrantRow, RawGrant, encode};
use crate::store::tx::GrantTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

impl GrantTx for Connection {
    fn insert_grant(&self, g: &GrantRow) -> Result<(), StoreError> {
        let (pointers, values) = encode(&g.grant)?;
        let gr = &g.grant;
        self.prepare_cached(&format!(
            "INSERT INTO grants ({GRANT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
        ))?
        .execute(params![
            gr.id,
            gr.created_at,
            gr.created_by,
            g.roles.join(","),
            gr.created_via,
            g.signin,
            gr.approval_uuid,
            gr.scope,
            gr.conversation_id,
            gr.tool,
            gr.server,
            gr.rule,
            pointers,
            values,
            gr.expires_at,
            gr.uses as i64,
            gr.last_used_at,
            gr.revoked_at,
            gr.revoked_by,
        ])?;
        Ok(())
    }
    fn grant(&self, id: &str) -> Result<Option<GrantRow>, StoreError> {
        self.prepare_cached(&format!("SELECT {GRANT_COLUMNS} FROM grants WHERE id = ?1"))?
            .query_row([id], raw)
            .optional()?
            .map(RawGrant::decode)
            .transpose()
    }
    fn live_grants(
        &self,
        now: &str,
        tool: Option<(&str, Option<&str>)>,
    ) -> Result<Vec<GrantRow>, StoreError> {
        let raws: Vec<RawGrant> = match tool {
            None => self
                .prepare_cached(&format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE revoked_at IS NULL AND expires_at > ?1 \
                     ORDER BY created_at DESC, id"
                ))?
                .query_map([now], raw)?
                .collect::<Result<_, _>>()?,
            Some((tool, server)) => self
                .prepare_cached(&format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE revoked_at IS NULL AND expires_at > ?1 \
                     AND tool = ?2 AND server IS ?3 ORDER BY created_at DESC, id"
                ))?
                .query_map(params![now, tool, server], raw)?
                .collect::<Result<_, _>>()?,
        };
        raws.into_iter().map(RawGrant::decode).collect()
    }
    fn use_grant(&self, id: &str, now: &str) -> Result<bool, StoreError> {
        Ok(self
            .prepare_cached(
                "UPDATE grants SET uses = uses + 1, last_used_at = ?2 \
                 WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2",
            )?
            .execute(params![id, now])?
            == 1)
    }
    fn revoke_grant(&self, id: &str, by: &str, now: &str) -> Result<bool, StoreError> {
        Ok(self
            .prepare_cached(
                "UPDATE grants SET revoked_at = ?3, revoked_by = ?2 \
                 WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?3",
            )?
            .execute(params![id, by, now])?
            == 1)
    }
    fn signin_grants(&self, signin: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .prepare_cached("SELECT id FROM grants WHERE signin = ?1 AND revoked_at IS NULL")?
            .query_map([signin], |r| r.get(0))?
            .collect::<Result<_, _>>()?)
    }
    fn requester_of(&self, conversation_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .prepare_cached("SELECT requested_by FROM conversations WHERE id = ?1")?
            .query_row([conversation_id], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .flatten())
    }
}

fn raw(r: &Row<'_>) -> rusqlite::Result<RawGrant> {
    Ok(RawGrant {
        id: r.get(0)?,
        created_at: r.get(1)?,
        created_by: r.get(2)?,
        created_roles: r.get(3)?,
        created_via: r.get(4)?,
        signin: r.get(5)?,
        approval_uuid: r.get(6)?,
        scope: r.get(7)?,
        conversation_id: r.get(8)?,
        tool: r.get(9)?,
        server: r.get(10)?,
        rule: r.get(11)?,
        match_pointers: r.get(12)?,
        match_values: r.get(13)?,
        expires_at: r.get(14)?,
        uses: r.get(15)?,
        last_used_at: r.get(16)?,
        revoked_at: r.get(17)?,
        revoked_by: r.get(18)?,
    })
}
