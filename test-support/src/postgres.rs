//! A fresh database in the throwaway test cluster (`make unit` and
//! `make bench` start one with `scripts/pg.sh` and name it in
//! `STOPGO_TEST_DATABASE_URL`), for the store suite, the integration tests
//! and the bench alike.

/// Creates a database with a fresh name in the cluster and returns its URL.
/// Panics with the way to get a cluster when `STOPGO_TEST_DATABASE_URL` is
/// not set. Runs the synchronous client on a thread of its own, so it may
/// be called from async code.
pub fn fresh_database(prefix: &str) -> String {
    let admin = std::env::var("STOPGO_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!(
            "STOPGO_TEST_DATABASE_URL is not set: `make unit` starts a throwaway PostgreSQL \
             (scripts/pg.sh start DIR prints the URL to set)"
        )
    });
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot reach the test cluster: {e}"));
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("cannot create {name}: {e}"));
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
        format!("{base}/{name}")
    })
    .join()
    .unwrap_or_else(|_| panic!("creating a test database failed"))
}

/// [`fresh_database`], reached over the cluster's Unix socket: the URL in
/// `STOPGO_TEST_DATABASE_SOCKET_URL` (`scripts/pg.sh` writes it to
/// `DIR/socket_url`), or `None` when that is not set. A database on the
/// same host as the agent is reached this way in production too: no TCP
/// stack on either side of each round trip.
pub fn fresh_database_on_socket(prefix: &str) -> Option<String> {
    let socket = std::env::var("STOPGO_TEST_DATABASE_SOCKET_URL").ok()?;
    let tcp = fresh_database(prefix);
    let name = tcp.rsplit_once('/').map(|(_, n)| n)?;
    let base = socket.rsplit_once('/').map(|(b, _)| b)?;
    Some(format!("{base}/{name}"))
}

/// Every row of every table in the database at `url`, as PostgreSQL's
/// text form of the row (`t::text`), one a line: for a test that must
/// read what the store holds (a secret never in the clear). Runs the
/// synchronous client on a thread of its own; panics when the database
/// cannot be read.
pub fn dump(url: &str) -> String {
    let url = url.to_string();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot reach {url}: {e}"));
        let tables = c
            .query(
                "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) \
                 FROM information_schema.tables \
                 WHERE table_type = 'BASE TABLE' \
                 AND table_schema NOT IN ('pg_catalog', 'information_schema')",
                &[],
            )
            .unwrap_or_else(|e| panic!("cannot list the tables of {url}: {e}"));
        let mut out = String::new();
        for t in tables {
            let table: String = t.get(0);
            let rows = c
                .query(&format!("SELECT t::text FROM {table} t"), &[])
                .unwrap_or_else(|e| panic!("cannot read {table}: {e}"));
            for r in rows {
                out.push_str(&table);
                out.push(' ');
                out.push_str(&r.get::<_, String>(0));
                out.push('\n');
            }
        }
        out
    })
    .join()
    .unwrap_or_else(|_| panic!("reading a test database failed"))
}
