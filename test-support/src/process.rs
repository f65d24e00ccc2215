//! The one process harness of the tests and the benchmark: start a binary,
//! wait (with a timeout) for its ready line, keep everything it writes, and
//! kill it by pid (SIGKILL, or SIGTERM for a clean stop). A process is
//! killed when its handle drops, so a failing test leaves nothing behind.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A started process.
pub struct Process {
    child: Child,
    /// What followed the ready marker on its line, up to the first space
    /// (an address, for the servers here).
    pub ready: String,
    /// Everything it wrote to stdout and stderr so far.
    pub log: Arc<Mutex<String>>,
}

impl Process {
    /// Starts `cmd` and waits up to `timeout` for a line (stdout or stderr)
    /// containing `marker`; panics with the log if none comes.
    pub fn start(cmd: Command, marker: &str, what: &str, timeout: Duration) -> Process {
        Process::try_start(cmd, marker, what, timeout).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Process::start`], saying why it failed instead of panicking (for
    /// an optional peer).
    pub fn try_start(
        mut cmd: Command,
        marker: &str,
        what: &str,
        timeout: Duration,
    ) -> Result<Process, String> {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let streams: [Box<dyn std::io::Read + Send>; 2] = [
            Box::new(child.stdout.take().expect("piped stdout")),
            Box::new(child.stderr.take().expect("piped stderr")),
        ];
        for stream in streams {
            let (log, tx, marker) = (log.clone(), tx.clone(), marker.to_string());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Some(rest) = line.split(marker.as_str()).nth(1) {
                        let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                    }
                    let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        match rx.recv_timeout(timeout) {
            Ok(ready) => Ok(Process { child, ready, log }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!(
                    "{what} did not print {marker:?} within {timeout:?}; log:\n{}",
                    log.lock().unwrap_or_else(|p| p.into_inner())
                ))
            }
        }
    }

    /// Starts a server that logs `listening on http://ADDR`; `ready` is ADDR.
    pub fn server(cmd: Command, what: &str) -> Process {
        Process::start(cmd, "listening on http://", what, Duration::from_secs(20))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits up to 5 s for `needle` in the log (lines arrive
    /// asynchronously); returns the log either way.
    pub fn wait_for_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.log();
            if log.contains(needle) || Instant::now() > deadline {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`, and reaps it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then its exit status (panics if it is still running after
    /// `timeout`).
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "cannot signal {pid}");
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "process {pid} did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its own child processes: pid and command line (arguments joined by
    /// spaces), read from `/proc`. A test that must kill one of them (an
    /// MCP server the agent started) picks it here and kills that pid
    /// alone ([`kill9_pid`]), never a process found by name.
    pub fn children(&self) -> Vec<(u32, String)> {
        children_of(self.child.id())
    }

    /// Its peak resident memory (`VmHWM`) in MiB, while it runs.
    pub fn peak_rss_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kib: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The processes whose parent is `parent`: pid and command line.
pub fn children_of(parent: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline)
            .split('\0')
            .filter(|a| !a.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        found.push((pid, cmdline));
    }
    found
}

/// `kill -9 PID`: that process alone. Panics when the signal cannot be sent.
pub fn kill9_pid(pid: u32) {
    let pid = pid.to_string();
    let sent = Command::new("kill").args(["-KILL", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "cannot kill {pid}");
}

/// Whether `pid` has ended: gone from `/proc`, or a zombie its parent has
/// not reaped yet.
pub fn has_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// The path of the workspace binary `name` (`mcp-resources`,
/// `mcp-filesystem`) built with the same profile as the running test or
/// bench: `target/<profile>/<name>`, beside the `deps/` folder the test
/// runs from. Cargo gives a test `CARGO_BIN_EXE_*` only for its own
/// package's binaries; the built-in MCP servers are crates of their own,
/// so `make unit` and `make build` build them first. Panics, saying how to
/// build it, when it is missing.
pub fn workspace_bin(name: &str) -> String {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("a test runs from target/<profile>/deps");
    let path = profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p {name}` (add --release for benches); `make unit` and `make build` do",
        path.display()
    );
    path.display().to_string()
}
