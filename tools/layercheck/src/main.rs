// SPDX-License-Identifier: GPL-2.0

//! `layercheck [MAP [TOP]]`: checks the tree at TOP (default `.`) against
//! the layer map MAP (default `scripts/layers.conf`), prints one line per
//! import that runs upwards or past a gate, and exits 1 if there is any.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let map_path = args.first().map_or("scripts/layers.conf", |s| s.as_str());
    let top = Path::new(args.get(1).map_or(".", |s| s.as_str()));
    let text = match std::fs::read_to_string(map_path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("layercheck: {map_path}: {e}");
            return ExitCode::from(2);
        }
    };
    let map = match layercheck::parse_map(&text) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("layercheck: {map_path}: {e}");
            return ExitCode::from(2);
        }
    };
    match layercheck::check_tree(top, &map) {
        Ok(findings) if findings.is_empty() => {
            println!(
                "layercheck: {} crates and {} gates follow {map_path}",
                map.crates.len(),
                map.gates.len()
            );
            ExitCode::SUCCESS
        }
        Ok(findings) => {
            for f in &findings {
                eprintln!("layercheck: {f}");
            }
            eprintln!("layercheck: {} imports break {map_path}", findings.len());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("layercheck: {e}");
            ExitCode::from(2)
        }
    }
}
