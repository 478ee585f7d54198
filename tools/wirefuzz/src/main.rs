// SPDX-License-Identifier: GPL-2.0

//! Bounded mutational fuzzing of the rxe wire codec, for `make check`.
//!
//! usage: wirefuzz CORPUS_DIR [INPUTS [SECONDS]]
//!
//! Runs INPUTS (default 1,000,000) inputs through [`wirefuzz::check`], or
//! as many as SECONDS (default 600) allow, whichever ends first; at least
//! one pass over the corpus always runs. Each input is a corpus entry (the
//! captures of both stacks and hand-made packets), mutated from 1 to 8
//! times: bits flipped, bytes set to boundary values, ranges cut, cloned
//! or spliced from another entry, the frame cut short or extended, the
//! control byte changed. Deterministic: the same corpus gives the same run.
//! A violated property panics, which fails the run (and `make check`).

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// xorshift64*: small, fast, and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const BOUNDARY: [u8; 8] = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x40, 0x3f];

fn mutate(input: &mut Vec<u8>, corpus: &[Vec<u8>], rng: &mut Rng) {
    for _ in 0..1 + rng.below(8) {
        let len = input.len();
        match rng.below(8) {
            0 | 1 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                input[i] = BOUNDARY[rng.below(BOUNDARY.len())];
            }
            3 if len > 1 => {
                // Cut a range out.
                let a = 1 + rng.below(len - 1);
                let b = (a + 1 + rng.below(16)).min(len);
                input.drain(a..b);
            }
            4 if len > 1 => {
                // Clone a range to another place.
                let a = 1 + rng.below(len - 1);
                let n = 1 + rng.below((len - a).min(32));
                let chunk: Vec<u8> = input[a..a + n].to_vec();
                let at = 1 + rng.below(len - 1);
                input.splice(at..at, chunk);
            }
            5 => {
                // Splice the tail of another entry.
                let other = &corpus[rng.below(corpus.len())];
                if other.len() > 1 && len > 1 {
                    let at = 1 + rng.below(len - 1);
                    let from = 1 + rng.below(other.len() - 1);
                    input.truncate(at);
                    input.extend_from_slice(&other[from..]);
                }
            }
            6 => {
                // Cut short or extend.
                if rng.below(2) == 0 {
                    input.truncate(rng.below(len + 1));
                } else {
                    for _ in 0..1 + rng.below(64) {
                        input.push(rng.next() as u8);
                    }
                }
            }
            _ => {
                // The control byte: repair or not, payload limit.
                if let Some(c) = input.first_mut() {
                    *c = rng.next() as u8;
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: wirefuzz CORPUS_DIR [INPUTS [SECONDS]]");
        return ExitCode::FAILURE;
    };
    let inputs: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let seconds: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(600);
    let mut corpus = Vec::new();
    let mut names: Vec<_> = match std::fs::read_dir(Path::new(dir)) {
        Ok(d) => d.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) => {
            eprintln!("wirefuzz: {dir}: {e}");
            return ExitCode::FAILURE;
        }
    };
    names.sort();
    for p in &names {
        match std::fs::read(p) {
            Ok(b) if !b.is_empty() => corpus.push(b),
            Ok(_) => {}
            Err(e) => {
                eprintln!("wirefuzz: {}: {e}", p.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if corpus.is_empty() {
        eprintln!("wirefuzz: empty corpus in {dir}");
        return ExitCode::FAILURE;
    }
    let start = Instant::now();
    let limit = Duration::from_secs(seconds);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut done, mut accepted) = (0u64, 0u64);
    // Every entry as it is, with and without repair, first.
    for entry in &corpus {
        for control in [entry[0], entry[0] | 1, entry[0] & !1] {
            let mut input = entry.clone();
            input[0] = control;
            accepted += u64::from(wirefuzz::check(&input));
            done += 1;
        }
    }
    while done < inputs && start.elapsed() < limit {
        let mut input = corpus[rng.below(corpus.len())].clone();
        mutate(&mut input, &corpus, &mut rng);
        accepted += u64::from(wirefuzz::check(&input));
        done += 1;
    }
    println!(
        "wirefuzz: {done} inputs from {} corpus entries, {accepted} accepted by the parser, in {:.1} s",
        corpus.len(),
        start.elapsed().as_secs_f64()
    );
    if accepted == 0 {
        eprintln!("wirefuzz: the parser accepted nothing: the corpus or the repair is broken");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
