// SPDX-License-Identifier: GPL-2.0

//! The layer check of `make lint`: every import of a kernel crate must run
//! down (or sideways inside one layer) in the map `scripts/layers.conf`
//! draws, and a gated folder may name another crate only through the
//! entry point the map allows it.
//!
//! The check reads source as text, as a reviewer would: comments are
//! dropped, then every path that starts with `crate::` (or climbs out of a
//! top-level module with `super::`) is reduced to the top-level module it
//! names, `use crate::{a::x, b}` groups included. It is deliberately simple:
//! it does not expand macros or follow `#[path]`, and a string that spells
//! `crate::x` would count, which is the safe side.
//!
//! The map's format (one statement a line, `#` starts a comment):
//!
//! ```text
//! crate NAME FOLDER ROOT   a kernel crate: its folder and root file (exempt)
//! skip PATH...             subfolders or files not scanned (another crate
//!                          built from the folder)
//! layer RANK MODULE...     top-level modules forming one layer; a module may
//!                          import its own layer and lower ranks; two layer
//!                          lines of one rank are siblings that may not
//!                          import each other
//! free NAME...             root items anything may name (THIS_MODULE)
//! gate FOLDER CRATE MOD... files in FOLDER name crate CRATE only through
//!                          CRATE::MOD (for each MOD listed); `skip` lines
//!                          after it apply to the gate's folder
//! ```

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// One layer line of a crate.
#[derive(Debug, Clone)]
pub struct Layer {
    pub rank: u32,
    pub line: usize,
    pub modules: Vec<String>,
}

/// A kernel crate and its layers.
#[derive(Debug, Clone, Default)]
pub struct CrateMap {
    pub name: String,
    pub folder: String,
    pub root: String,
    pub skip: Vec<String>,
    pub layers: Vec<Layer>,
    pub free: Vec<String>,
}

/// A folder that may name another crate only through some of its modules.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    pub folder: String,
    pub krate: String,
    pub allowed: Vec<String>,
    pub skip: Vec<String>,
}

/// The whole map.
#[derive(Debug, Clone, Default)]
pub struct Map {
    pub crates: Vec<CrateMap>,
    pub gates: Vec<Gate>,
}

/// What a statement of the map applies to.
enum Target {
    None,
    Crate,
    Gate,
}

/// Parses the map's text.
pub fn parse_map(text: &str) -> Result<Map, String> {
    let mut map = Map::default();
    let mut target = Target::None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let args = &words[1..];
        match words[0] {
            "crate" => {
                let [name, folder, root] = args else {
                    return Err(format!("line {n}: crate NAME FOLDER ROOT"));
                };
                map.crates.push(CrateMap {
                    name: name.to_string(),
                    folder: folder.trim_end_matches('/').to_string(),
                    root: root.to_string(),
                    ..CrateMap::default()
                });
                target = Target::Crate;
            }
            "gate" => {
                if args.len() < 3 {
                    return Err(format!("line {n}: gate FOLDER CRATE MODULE..."));
                }
                map.gates.push(Gate {
                    folder: args[0].trim_end_matches('/').to_string(),
                    krate: args[1].to_string(),
                    allowed: args[2..].iter().map(|s| s.to_string()).collect(),
                    skip: Vec::new(),
                });
                target = Target::Gate;
            }
            "skip" => {
                let list: Vec<String> = args
                    .iter()
                    .map(|s| s.trim_end_matches('/').to_string())
                    .collect();
                match target {
                    Target::Crate => map.crates.last_mut().unwrap().skip.extend(list),
                    Target::Gate => map.gates.last_mut().unwrap().skip.extend(list),
                    Target::None => return Err(format!("line {n}: skip outside a crate or gate")),
                }
            }
            "layer" | "free" => {
                let Target::Crate = target else {
                    return Err(format!("line {n}: {} outside a crate", words[0]));
                };
                let c = map.crates.last_mut().unwrap();
                if words[0] == "free" {
                    c.free.extend(args.iter().map(|s| s.to_string()));
                    continue;
                }
                let Some((rank, modules)) = args.split_first() else {
                    return Err(format!("line {n}: layer RANK MODULE..."));
                };
                let rank: u32 = rank
                    .parse()
                    .map_err(|_| format!("line {n}: the rank {rank:?} is not a number"))?;
                if modules.is_empty() {
                    return Err(format!("line {n}: a layer without modules"));
                }
                for m in modules {
                    if c.layers.iter().any(|l| l.modules.iter().any(|x| x == m)) {
                        return Err(format!("line {n}: module {m} is in two layers"));
                    }
                }
                c.layers.push(Layer {
                    rank,
                    line: n,
                    modules: modules.iter().map(|s| s.to_string()).collect(),
                });
            }
            w => return Err(format!("line {n}: unknown statement {w:?}")),
        }
    }
    Ok(map)
}

/// A path a source file names: the top-level module it reaches and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub line: usize,
    pub top: String,
}

/// Source text without comments (`//` to the end of the line, `/* */`),
/// line breaks kept so offsets still give line numbers. String literals
/// are kept as they are.
pub fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut depth = 0usize;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if depth > 0 {
            if c == b'*' && b.get(i + 1) == Some(&b'/') {
                depth -= 1;
                i += 2;
            } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
                depth += 1;
                i += 2;
            } else {
                if c == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            continue;
        }
        if in_str {
            if c == b'\\' && i + 1 < b.len() {
                out.push_str(&src[i..i + 2]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            depth = 1;
            i += 2;
            continue;
        }
        // Copy one whole character.
        let len = utf8_len(c);
        out.push_str(&src[i..(i + len).min(src.len())]);
        i += len;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The first identifiers of the items of a path's tail at `i`: one for
/// `name...`, one per item for a `{a::x, b, c::{..}}` group.
fn tails(b: &[u8], i: usize) -> Vec<(usize, String)> {
    let i = skip_ws(b, i);
    if i >= b.len() {
        return Vec::new();
    }
    if b[i] != b'{' {
        let end = (i..b.len()).find(|&j| !is_ident(b[j])).unwrap_or(b.len());
        if end == i {
            return Vec::new();
        }
        return vec![(i, String::from_utf8_lossy(&b[i..end]).into_owned())];
    }
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut want = true;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'{' => {
                depth += 1;
                if depth == 1 {
                    want = true;
                }
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b',' if depth == 1 => want = true,
            c if want && depth == 1 && is_ident(c) => {
                let end = (j..b.len()).find(|&k| !is_ident(b[k])).unwrap_or(b.len());
                out.push((j, String::from_utf8_lossy(&b[j..end]).into_owned()));
                want = false;
                j = end;
                continue;
            }
            c if !c.is_ascii_whitespace() => want = false,
            _ => {}
        }
        j += 1;
    }
    out
}

/// Finds `word::` at the start of a path (not after `::` or inside an
/// identifier) and returns the offsets just past the `::`.
fn path_starts(b: &[u8], word: &str) -> Vec<(usize, usize)> {
    let w = word.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + w.len() + 2 <= b.len() {
        let after_path = i >= 2 && &b[i - 2..i] == b"::";
        if &b[i..i + w.len()] == w && (i == 0 || !(is_ident(b[i - 1]) || after_path)) {
            let j = skip_ws(b, i + w.len());
            if b.get(j) == Some(&b':') && b.get(j + 1) == Some(&b':') {
                out.push((i, j + 2));
                i = j + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The paths rooted at crate `root_word` (`crate` for one's own crate, or
/// another crate's name) in comment-free `text`, as their top-level names.
pub fn rooted(text: &str, root_word: &str) -> Vec<Import> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for (_, after) in path_starts(b, root_word) {
        for (at, top) in tails(b, after) {
            if top == "self" {
                continue;
            }
            out.push(Import {
                line: line_of(text, at),
                top,
            });
        }
    }
    out
}

/// The paths of comment-free `text` that climb with `super::` out of the
/// top-level module: `module` is the file's module path (`["device",
/// "sysfs"]` for `device/sysfs.rs`).
pub fn climbing(text: &str, module: &[String]) -> Vec<Import> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for (_, mut after) in path_starts(b, "super") {
        let mut ups = 1;
        loop {
            let j = skip_ws(b, after);
            if b[j..].starts_with(b"super") {
                let k = skip_ws(b, j + 5);
                if b[k..].starts_with(b"::") {
                    ups += 1;
                    after = k + 2;
                    continue;
                }
            }
            break;
        }
        if ups < module.len() {
            continue;
        }
        for (at, top) in tails(b, after) {
            if top == "self" {
                continue;
            }
            out.push(Import {
                line: line_of(text, at),
                top,
            });
        }
    }
    out
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

impl CrateMap {
    fn layer_of(&self, module: &str) -> Option<&Layer> {
        self.layers
            .iter()
            .find(|l| l.modules.iter().any(|m| m == module))
    }

    /// Checks one file of the crate, given its path relative to the
    /// crate's folder and its text.
    pub fn check_file(&self, rel: &str, src: &str) -> Vec<Finding> {
        let file = format!("{}/{}", self.folder, rel);
        if rel == self.root {
            return Vec::new();
        }
        let module: Vec<String> = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(|s| s.to_string())
            .collect();
        let top = &module[0];
        let Some(from) = self.layer_of(top) else {
            return vec![Finding {
                file,
                line: 1,
                what: format!(
                    "module `{top}` of crate {} is in no layer of the map",
                    self.name
                ),
            }];
        };
        let text = strip_comments(src);
        let mut imports = rooted(&text, "crate");
        // A `super::` path that climbs to the crate root counts when it
        // names a module of the map; other names it reaches are a nested
        // module's view (`mod tests { use super::X; }`), not the root's.
        imports.extend(
            climbing(&text, &module)
                .into_iter()
                .filter(|imp| self.layer_of(&imp.top).is_some()),
        );
        let mut out = Vec::new();
        for imp in imports {
            if imp.top == *top || self.free.contains(&imp.top) {
                continue;
            }
            let what = match self.layer_of(&imp.top) {
                None => format!(
                    "`{top}` names `crate::{}`, which no layer of the map holds",
                    imp.top
                ),
                Some(to) if to.line == from.line || to.rank < from.rank => continue,
                Some(to) if to.rank == from.rank => format!(
                    "`{top}` imports its sibling `{}` (both of rank {})",
                    imp.top, to.rank
                ),
                Some(to) => format!(
                    "`{top}` (rank {}) imports `{}` (rank {}): an import that runs upwards",
                    from.rank, imp.top, to.rank
                ),
            };
            out.push(Finding {
                file: file.clone(),
                line: imp.line,
                what,
            });
        }
        out
    }
}

impl Gate {
    /// Checks one file of the gated folder.
    pub fn check_file(&self, rel: &str, src: &str) -> Vec<Finding> {
        let text = strip_comments(src);
        rooted(&text, &self.krate)
            .into_iter()
            .filter(|imp| !self.allowed.contains(&imp.top))
            .map(|imp| Finding {
                file: format!("{}/{}", self.folder, rel),
                line: imp.line,
                what: format!(
                    "names `{}::{}`; this folder uses crate {} only through {}",
                    self.krate,
                    imp.top,
                    self.krate,
                    self.allowed
                        .iter()
                        .map(|m| format!("`{}::{m}`", self.krate))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect()
    }
}

/// The `.rs` files below `dir` (relative paths, sorted), leaving out the
/// The Rust files under `dir`, but for the `skip`ped subfolders and files
/// and generated files.
pub fn rust_files(dir: &Path, skip: &[String]) -> std::io::Result<Vec<String>> {
    fn walk(
        base: &Path,
        rel: &Path,
        skip: &[String],
        out: &mut Vec<String>,
    ) -> std::io::Result<()> {
        for e in fs::read_dir(base.join(rel))? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let r: PathBuf = rel.join(&name);
            let rs = r.to_string_lossy().into_owned();
            if e.file_type()?.is_dir() {
                if name == "target" || name.starts_with('.') || skip.contains(&rs) {
                    continue;
                }
                walk(base, &r, skip, out)?;
            } else if name.ends_with(".rs")
                && !name.ends_with("_generated.rs")
                && !skip.contains(&rs)
            {
                out.push(rs);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), skip, &mut out)?;
    out.sort();
    Ok(out)
}

/// Checks the tree at `top` against the map.
pub fn check_tree(top: &Path, map: &Map) -> Result<Vec<Finding>, String> {
    let mut out = Vec::new();
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    for c in &map.crates {
        let dir = top.join(&c.folder);
        let files = rust_files(&dir, &c.skip).map_err(|e| format!("{}: {e}", dir.display()))?;
        if !files.contains(&c.root) {
            return Err(format!(
                "crate {}: no root file {}/{}",
                c.name, c.folder, c.root
            ));
        }
        for f in files {
            out.extend(c.check_file(&f, &read(&dir.join(&f))?));
        }
    }
    for g in &map.gates {
        let dir = top.join(&g.folder);
        let files = rust_files(&dir, &g.skip).map_err(|e| format!("{}: {e}", dir.display()))?;
        for f in files {
            out.extend(g.check_file(&f, &read(&dir.join(&f))?));
        }
    }
    Ok(out)
}
