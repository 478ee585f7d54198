// SPDX-License-Identifier: GPL-2.0

//! The layer check catches what it must: upward imports in every spelling,
//! siblings, gates; and it leaves alone what it must (comments, strings of
//! its own layer, nested modules' `super`).

use std::fs;
use std::path::{Path, PathBuf};

use layercheck::{check_tree, parse_map, rooted, strip_comments, Finding, Map};

const MAP: &str = "
crate k k root.rs
skip host
layer 0 spec
layer 1 low
layer 2 mid other
layer 3 high
layer 3 twin
free helper_macro
gate p k entry
skip inner
";

fn map() -> Map {
    parse_map(MAP).unwrap()
}

fn check(rel: &str, src: &str) -> Vec<Finding> {
    map().crates[0].check_file(rel, src)
}

fn tops(src: &str) -> Vec<String> {
    rooted(&strip_comments(src), "crate")
        .into_iter()
        .map(|i| i.top)
        .collect()
}

#[test]
fn paths_in_every_spelling() {
    assert_eq!(tops("use crate::a::B;"), ["a"]);
    assert_eq!(tops("use crate::{a::x, b::{y, z}, c};"), ["a", "b", "c"]);
    assert_eq!(
        tops("use crate ::\n  {\n a,\n b::{self, Q},\n};"),
        ["a", "b"]
    );
    assert_eq!(tops("let x = crate::m::f(1) + crate::n::g();"), ["m", "n"]);
    assert_eq!(tops("$crate::low::X::new()"), ["low"]);
    assert_eq!(tops("use crate::{self, a};"), ["a"]);
    // Not a path start: another crate's `crate` module, an identifier.
    assert!(tops("foo::crate::a; my_crate::b;").is_empty());
}

#[test]
fn comments_are_not_imports() {
    assert!(
        tops("// use crate::high;\n//! [`crate::high`]\n/* crate::x /* crate::y */ */").is_empty()
    );
    assert_eq!(tops("let s = \"// not a comment\"; crate::a::f();"), ["a"]);
}

#[test]
fn downward_and_own_layer_pass() {
    assert!(check(
        "mid/x.rs",
        "use crate::low::A; use crate::spec::B; use crate::mid::C;"
    )
    .is_empty());
    assert!(check("mid.rs", "use crate::other::D; crate::helper_macro!();").is_empty());
    assert!(check("root.rs", "use crate::high::E;").is_empty());
}

#[test]
fn upward_import_is_found_with_its_line() {
    let f = check("low/deep/x.rs", "\n\nfn f() {\n    crate::mid::g();\n}\n");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].file, "k/low/deep/x.rs");
    assert_eq!(f[0].line, 4);
    assert!(f[0].what.contains("upwards"), "{}", f[0].what);
    let f = check("mid.rs", "use crate::{low::a, high::{b, c}};");
    assert_eq!(f.len(), 1);
    assert!(f[0].what.contains("`high`"));
}

#[test]
fn siblings_may_not_import_each_other() {
    let f = check("twin.rs", "use crate::high::X;");
    assert_eq!(f.len(), 1);
    assert!(f[0].what.contains("sibling"), "{}", f[0].what);
}

#[test]
fn super_that_climbs_to_the_root_counts() {
    // low/x.rs is module low::x: super::super:: is the crate root.
    let f = check("low/x.rs", "use super::super::high::Y; use super::z::W;");
    assert_eq!(f.len(), 1);
    // low.rs: super:: is the root.
    assert_eq!(check("low.rs", "use super::mid;").len(), 1);
    // A nested test module's `use super::*` and names are not the root's.
    assert!(check("low.rs", "mod tests { use super::*; use super::Thing; }").is_empty());
}

#[test]
fn unplaced_modules_and_names_are_findings() {
    let f = check("stray.rs", "");
    assert_eq!(f.len(), 1);
    assert!(f[0].what.contains("no layer"));
    let f = check("low.rs", "crate::Unknown::f();");
    assert_eq!(f.len(), 1);
    assert!(f[0].what.contains("which no layer"));
}

#[test]
fn gate_allows_only_its_entry_point() {
    let g = &map().gates[0];
    assert!(g
        .check_file("a.rs", "use k::entry::{X, Y}; k::entry::f();")
        .is_empty());
    let f = g.check_file("a.rs", "use k::{entry::X, low::Y};\nk::mid::g();");
    assert_eq!(f.len(), 2);
    assert_eq!((f[0].line, f[1].line), (1, 2));
    // `crate::` inside the gated folder is its own crate.
    assert!(g.check_file("a.rs", "use crate::low::Y;").is_empty());
}

#[test]
fn bad_maps_are_refused() {
    for bad in [
        "layer 0 a",
        "crate a b",
        "crate a b c\nlayer x m",
        "crate a b c\nlayer 0",
        "crate a b c\nlayer 0 m\nlayer 1 m",
        "frobnicate",
        "skip x",
    ] {
        assert!(parse_map(bad).is_err(), "{bad:?} was accepted");
    }
}

/// A scratch folder that goes away with the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("layercheck-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write(top: &Path, rel: &str, text: &str) {
    let p = top.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

#[test]
fn tree_walk_skips_other_crates_and_generated_files() {
    let s = Scratch::new("walk");
    write(&s.0, "k/root.rs", "");
    write(&s.0, "k/low.rs", "use crate::low::x;");
    write(&s.0, "k/host/lib.rs", "use crate::high::x;");
    write(&s.0, "k/low/bindings_generated.rs", "use crate::high::x;");
    write(&s.0, "p/a.rs", "use k::entry::A;");
    write(&s.0, "p/inner/lib.rs", "use k::low::A;");
    assert!(check_tree(&s.0, &map()).unwrap().is_empty());
    write(&s.0, "k/low/x.rs", "use crate::high::x;");
    write(&s.0, "p/b.rs", "use k::low::A;");
    let f = check_tree(&s.0, &map()).unwrap();
    let files: Vec<&str> = f.iter().map(|f| f.file.as_str()).collect();
    assert_eq!(files, ["k/low/x.rs", "p/b.rs"]);
}

/// Two crates in one folder: each skips the other's root, top-level
/// files and subfolder.
#[test]
fn skipped_files_are_not_scanned() {
    let s = Scratch::new("files");
    let files = |skip: &[&str]| {
        let skip: Vec<String> = skip.iter().map(|x| x.to_string()).collect();
        layercheck::rust_files(&s.0.join("two"), &skip).unwrap()
    };
    write(&s.0, "two/a.rs", "");
    write(&s.0, "two/a_mod.rs", "");
    write(&s.0, "two/a_mod/x.rs", "");
    write(&s.0, "two/b.rs", "");
    write(&s.0, "two/b_mod.rs", "");
    write(&s.0, "two/b_mod/y.rs", "");
    assert_eq!(
        files(&["b.rs", "b_mod.rs", "b_mod"]),
        ["a.rs", "a_mod.rs", "a_mod/x.rs"]
    );
    assert_eq!(
        files(&["a.rs", "a_mod.rs", "a_mod"]),
        ["b.rs", "b_mod.rs", "b_mod/y.rs"]
    );
    assert_eq!(files(&[]).len(), 6);
}

/// The project's own map on the project's own tree: adding one upward
/// import to a copy of rdma_core's bottom layer makes exactly one more
/// finding, naming it.
#[test]
fn the_real_map_catches_an_added_upward_import() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = fs::read_to_string(repo.join("scripts/layers.conf")).unwrap();
    let mut map = parse_map(&text).unwrap();
    map.gates.clear();
    map.crates.retain(|c| c.name == "rdma");
    assert_eq!(map.crates.len(), 1, "the map has no crate rdma");
    let c = &map.crates[0];
    let s = Scratch::new("real");
    let src = repo.join(&c.folder);
    for f in layercheck::rust_files(&src, &c.skip).unwrap() {
        write(
            &s.0,
            &format!("{}/{f}", c.folder),
            &fs::read_to_string(src.join(&f)).unwrap(),
        );
    }
    let before = check_tree(&s.0, &map).unwrap();
    let victim = format!("{}/kshim/errno.rs", c.folder);
    let mut text = fs::read_to_string(s.0.join(&victim)).unwrap();
    text.push_str("\n#[allow(unused_imports)]\nuse crate::cma::CmId;\n");
    fs::write(s.0.join(&victim), &text).unwrap();
    let after = check_tree(&s.0, &map).unwrap();
    let new: Vec<&Finding> = after.iter().filter(|f| !before.contains(f)).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].file, victim);
    assert_eq!(new[0].line, text.lines().count());
    assert!(
        new[0].what.contains("`kshim` (rank 1) imports `cma`"),
        "{}",
        new[0].what
    );
}
