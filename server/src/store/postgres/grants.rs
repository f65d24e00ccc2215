//! Grants on PostgreSQL: the statements of [`GrantTx`] on a [`PgTx`].

use super::tx::PgTx;
use crate::store::error::StoreError;
use crate::store::grants::{GRANT_COLUMNS, GrantRow, RawGrant, encode};
use crate::store::tx::GrantTx;
use postgres::Row;

impl GrantTx for PgTx<'_> {
    fn insert_grant(&self, g: &GrantRow) -> Result<(), StoreError> {
        let (pointers, values) = encode(&g.grant)?;
        let gr = &g.grant;
        let roles = g.roles.join(",");
        let uses = gr.uses as i64;
        self.exec(
            &format!(
                "INSERT INTO grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)"
            ),
            &[
                &gr.id,
                &gr.created_at,
                &gr.created_by,
                &roles,
                &gr.created_via,
                &g.signin,
                &gr.approval_uuid,
                &gr.scope,
                &gr.conversation_id,
                &gr.tool,
                &gr.server,
                &gr.rule,
                &pointers,
                &values,
                &gr.expires_at,
                &uses,
                &gr.last_used_at,
                &gr.revoked_at,
                &gr.revoked_by,
            ],
        )?;
        Ok(())
    }
    fn grant(&self, id: &str) -> Result<Option<GrantRow>, StoreError> {
        self.first(
            &format!("SELECT {GRANT_COLUMNS} FROM grants WHERE id = $1"),
            &[&id],
        )?
        .as_ref()
        .map(|r| raw(r).decode())
        .transpose()
    }
    fn live_grants(
        &self,
        now: &str,
        tool: Option<(&str, Option<&str>)>,
    ) -> Result<Vec<GrantRow>, StoreError> {
        let rows = match tool {
            None => self.query(
                &format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE revoked_at IS NULL AND expires_at > $1 \
                     ORDER BY created_at DESC, id"
                ),
                &[&now],
            )?,
            Some((tool, server)) => self.query(
                &format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE revoked_at IS NULL AND expires_at > $1 \
                     AND tool = $2 AND server IS NOT DISTINCT FROM $3 ORDER BY created_at DESC, id"
                ),
                &[&now, &tool, &server],
            )?,
        };
        rows.iter().map(|r| raw(r).decode()).collect()
    }
    fn use_grant(&self, id: &str, now: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE grants SET uses = uses + 1, last_used_at = $2 \
             WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2",
            &[&id, &now],
        )? == 1)
    }
    fn revoke_grant(&self, id: &str, by: &str, now: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE grants SET revoked_at = $3, revoked_by = $2 \
             WHERE id = $1 AND revoked_at IS NULL AND expires_at > $3",
            &[&id, &by, &now],
        )? == 1)
    }
    fn signin_grants(&self, signin: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .query(
                "SELECT id FROM grants WHERE signin = $1 AND revoked_at IS NULL",
                &[&signin],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }
    fn requester_of(&self, conversation_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .first(
                "SELECT requested_by FROM conversations WHERE id = $1",
                &[&conversation_id],
            )?
            .and_then(|r| r.get::<_, Option<String>>(0)))
    }
}

fn raw(r: &Row) -> RawGrant {
    RawGrant {
        id: r.get(0),
        created_at: r.get(1),
        created_by: r.get(2),
        created_roles: r.get(3),
        created_via: r.get(4),
        signin: r.get(5),
        approval_uuid: r.get(6),
        scope: r.get(7),
        conversation_id: r.get(8),
        tool: r.get(9),
        server: r.get(10),
        rule: r.get(11),
        match_pointers: r.get(12),
        match_values: r.get(13),
        expires_at: r.get(14),
        uses: r.get(15),
        last_used_at: r.get(16),
        revoked_at: r.get(17),
        revoked_by: r.get(18),
    }
}
