//! The approver on a phone (REACH.md §1): from navigation start to the
//! first press of Approve that takes effect, on Chromium's emulation of a
//! slow phone link (1.6 Mbps down, 750 kbps up, 150 ms, 375 px, cold
//! cache), median of five, beside the first contentful paint of the same
//! loads; and the WebAssembly's brotli size, which the press no longer
//! waits for. Measured by `end2end/tests/phone.spec.ts` (its `PHONE`
//! line), against the release build.

/// Runs the phone spec and reads its `PHONE` line.
pub fn rows(rows: &mut Vec<(String, String, String)>) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (press, paint, wasm) = measure(&root);
    rows.push((
        "phone: navigation → first effective Approve, median of 5 (ms)".into(),
        press,
        "< 1000 ms".into(),
    ));
    rows.push((
        "  first contentful paint of the same loads (ms)".into(),
        paint,
        "".into(),
    ));
    rows.push((
        "  WebAssembly, brotli (KB)".into(),
        wasm,
        "≤ 535 KB (goal 400)".into(),
    ));
}

fn measure(root: &std::path::Path) -> (String, String, String) {
    let missing = |why: &str| (format!("n/a ({why})"), "n/a".into(), "n/a".into());
    if !root.join("target/site/hash.txt").is_file() {
        return missing("run make build");
    }
    let out = std::process::Command::new("npx")
        .args(["playwright", "test", "phone.spec.ts", "--reporter=line"])
        .current_dir(root.join("end2end"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                root.join(".tools/node_modules/.bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output();
    let Ok(out) = out else {
        return missing("npx did not start");
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.contains("PHONE ")) else {
        return missing("the spec failed");
    };
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or("?")
            .to_string()
    };
    let kb = field("wasm_br_bytes=")
        .parse::<f64>()
        .map(|b| format!("{:.0}", b / 1024.0))
        .unwrap_or_else(|_| "?".into());
    (
        format!("{} (runs {})", field("press_ms="), field("press_runs=")),
        field("paint_ms="),
        kb,
    )
}
