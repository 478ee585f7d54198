//! `guestlog`: the host side's verdict on a guest run.
//!
//! `guestlog check --ktap FILE --console FILE [--expect-splat]` prints every
//! failed test, each counted failure followed by the last of the diagnostics
//! its test printed before its result (`guestlog:   | ...`, bounded), every
//! splat, the last KTAP lines (`guestlog:   last: ...`) if the guest did not
//! reach its end marker, and last the KTAP summary (`guest: N passed, ...`).
//! It exits 0 only if the guest reached its end marker, no test failed, at
//! least one test ran, and there was no splat (with `--expect-splat`: only if
//! there was one, which is how the harness proves its own detector).

use std::process::ExitCode;

use guestlog::{ktap, splat, END_MARKER};

fn usage() -> ExitCode {
    eprintln!("usage: guestlog check --ktap FILE --console FILE [--expect-splat]");
    ExitCode::from(2)
}

fn read(path: &str) -> Result<String, ExitCode> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| {
            eprintln!("guestlog: {path}: {e}");
            ExitCode::from(2)
        })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("check") {
        return usage();
    }
    let (mut ktap_path, mut console_path, mut expect_splat) = (None, None, false);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ktap" => ktap_path = it.next(),
            "--console" => console_path = it.next(),
            "--expect-splat" => expect_splat = true,
            _ => return usage(),
        }
    }
    let (Some(ktap_path), Some(console_path)) = (ktap_path, console_path) else {
        return usage();
    };
    let ktap_text = match read(ktap_path) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let console = match read(console_path) {
        Ok(t) => t,
        Err(c) => return c,
    };

    let results = ktap::parse(&ktap_text);
    let summary = ktap::summarize(&results);
    let splats = splat::scan(&console);
    let finished = ktap_text.lines().any(|l| l.trim_end() == END_MARKER);

    for line in ktap::failure_report(&results) {
        println!("guestlog: {line}");
    }
    for s in &splats {
        println!(
            "guestlog: splat ({}) at console line {}: {}",
            s.kind, s.line_no, s.line
        );
    }
    if !finished {
        println!("guestlog: the guest did not reach its end marker (crash, panic or timeout)");
        for line in ktap::tail(&ktap_text, ktap::TAIL_LINES) {
            println!("guestlog:   last: {line}");
        }
    }
    println!("guest: {}", summary.line());

    let ok = if expect_splat {
        finished && !splats.is_empty()
    } else {
        finished && summary.failed == 0 && splats.is_empty() && summary.passed + summary.skipped > 0
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
