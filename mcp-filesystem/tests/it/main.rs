//! mcp-filesystem's integration tests in one test binary (one link): the
//! server over stdio and HTTP (`mcp_filesystem`), and the fuzzers `make
//! fuzz` runs (`fuzz_filesystem`, `#[ignore]`d in `make test`).

mod fuzz_filesystem;
mod mcp_filesystem;
