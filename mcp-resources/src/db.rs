//! The resources table of `mcp-resources`: named integer values.
//!
//! `resources(id TEXT PRIMARY KEY, name TEXT NOT NULL, value INTEGER NOT
//! NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`, as in the
//! seed. Each operation is one transaction on a single connection guarded
//! by a std `Mutex` (held only for the synchronous SQLite call).

use regex::Regex;
use rusqlite::{Connection, params};
use serde::Serialize;
use std::path::Path;
use std::sync::Mutex;

/// One resource, as the tools return it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resource {
    pub id: String,
    pub name: String,
    pub value: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// Why an operation failed; shown to the model as the tool's error.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("invalid pattern {pattern:?}: {message}")]
    Pattern { pattern: String, message: String },
    #[error("give either `id` or `pattern`")]
    NoSelector,
    #[error("no resource with id {0:?}")]
    NoSuchId(String),
    #[error("`name` must not be empty")]
    EmptyName,
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
}

/// The resources database.
pub struct ResourceDb {
    conn: Mutex<Connection>,
}

impl ResourceDb {
    /// Opens (creating) the database at `path`.
    pub fn open(path: &Path) -> Result<ResourceDb, rusqlite::Error> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS resources (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                value INTEGER NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )",
        )?;
        Ok(ResourceDb {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a resource.
    pub fn add(&self, name: &str, value: i64) -> Result<Resource, ResourceError> {
        if name.trim().is_empty() {
            return Err(ResourceError::EmptyName);
        }
        let ts = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let r = Resource {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.to_string(),
            value,
            created_at: ts.clone(),
            updated_at: ts,
        };
        self.conn().execute(
            "INSERT INTO resources (id, name, value, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![r.id, r.name, r.value, r.created_at, r.updated_at],
        )?;
        Ok(r)
    }

    /// Lists resources, optionally those whose name matches `pattern`.
    pub fn list(&self, pattern: Option<&str>) -> Result<Vec<Resource>, ResourceError> {
        let re = pattern.map(compile).transpose()?;
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, name, value, created_at, updated_at FROM resources ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Resource {
                id: r.get(0)?,
                name: r.get(1)?,
                value: r.get(2)?,
                created_at: r.get(3)?,
                updated_at: r.get(4)?,
            })
        })?;
        let mut out = Vec::new();
        for r in rows {
            let r = r?;
            if re.as_ref().is_none_or(|re| re.is_match(&r.name)) {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Removes by id, or every resource whose name matches `pattern`.
    pub fn remove(
        &self,
        id: Option<&str>,
        pattern: Option<&str>,
    ) -> Result<Vec<Resource>, ResourceError> {
        match (id, pattern) {
            (Some(id), _) => {
                let found: Vec<Resource> = self
                    .list(None)?
                    .into_iter()
                    .filter(|r| r.id == id)
                    .collect();
                if found.is_empty() {
                    return Err(ResourceError::NoSuchId(id.to_string()));
                }
                self.conn()
                    .execute("DELETE FROM resources WHERE id = ?1", [id])?;
                Ok(found)
            }
            (None, Some(p)) => {
                let matching = self.list(Some(p))?;
                let mut conn = self.conn();
                let tx = conn.transaction()?;
                for r in &matching {
                    tx.execute("DELETE FROM resources WHERE id = ?1", [&r.id])?;
                }
                tx.commit()?;
                Ok(matching)
            }
            (None, None) => Err(ResourceError::NoSelector),
        }
    }
}

fn compile(pattern: &str) -> Result<Regex, ResourceError> {
    Regex::new(pattern).map_err(|e| ResourceError::Pattern {
        pattern: pattern.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_list_remove_by_id_and_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let db = ResourceDb::open(&dir.path().join("r.db")).unwrap();
        let a = db.add("apples", 3).unwrap();
        db.add("apricots", 5).unwrap();
        db.add("bananas", 7).unwrap();
        assert_eq!(db.list(None).unwrap().len(), 3);
        assert_eq!(db.list(Some("^ap")).unwrap().len(), 2);
        assert_eq!(db.remove(Some(&a.id), None).unwrap()[0].name, "apples");
        assert!(matches!(
            db.remove(Some(&a.id), None),
            Err(ResourceError::NoSuchId(_))
        ));
        assert_eq!(db.remove(None, Some("an")).unwrap().len(), 1);
        assert_eq!(db.list(None).unwrap()[0].name, "apricots");
        assert!(matches!(
            db.list(Some("(")),
            Err(ResourceError::Pattern { .. })
        ));
        assert!(matches!(
            db.remove(None, None),
            Err(ResourceError::NoSelector)
        ));
        assert!(matches!(db.add(" ", 1), Err(ResourceError::EmptyName)));
    }
}
