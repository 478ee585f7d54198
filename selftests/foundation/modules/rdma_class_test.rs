// SPDX-License-Identifier: GPL-2.0

//! Selftest of `rdma::kshim::class`, sysfs classes of other modules.
//!
//! `init` checks names, duplicates and the order of removal, then leaves a
//! tree for `class.sh` to read and write, laid out as the kernel's RTRS
//! client's:
//!
//! ```text
//! /sys/class/rdma_rs_class_test/sess0/{reads,limit}
//! /sys/class/rdma_rs_class_test/sess0/paths/ip:10.0.0.1@ip:10.0.0.<2|3>/remove_path
//! /sys/class/rdma_rs_class_test/sess0/paths/ip:10.0.0.1@ip:10.0.0.<2|3>/stats/rdma
//! ```
//!
//! The class has files of its own, `/sys/class/rdma_rs_class_test/abi_version`
//! (0444, `6`) and `.../class_limit` (0644, as `limit`).
//!
//! `reads` (0444) counts the reads of itself; `limit` and `rdma` (0644)
//! show the last number written; writing to `remove_path` removes its path
//! from a work item, as a store must not drop its own directory.

#![forbid(unsafe_code)]

use core::fmt::Write;
use core::sync::atomic::{AtomicU32, Ordering};

use kernel::c_str;
use kernel::error::code::{EACCES, EEXIST, EINVAL};
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use rdma::kshim::class::{Page, SysClass, SysDir, SysFile, SysFiles};
use rdma::kshim::work;

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

module! {
    type: ClassTest,
    name: "rdma_class_test",
    author: "rdma-rs developers",
    description: "Selftest: sysfs classes of other modules (kshim::class)",
    license: "GPL",
}

/// The class `class.sh` reads.
const CLASS: &CStr = c_str!("rdma_rs_class_test");
/// A second class, for its lifetime.
const CLASS2: &CStr = c_str!("rdma_rs_class_test2");

// File ids.
const READS: u32 = 0;
const LIMIT: u32 = 1;
const REMOVE: u32 = 2;
const RDMA: u32 = 3;
const ABI: u32 = 4;

const SESS_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("reads"),
        id: READS,
        writable: false,
    },
    SysFile {
        name: c_str!("limit"),
        id: LIMIT,
        writable: true,
    },
];
const PATH_FILES: &[SysFile] = &[SysFile {
    name: c_str!("remove_path"),
    id: REMOVE,
    writable: true,
}];
const STATS_FILES: &[SysFile] = &[SysFile {
    name: c_str!("rdma"),
    id: RDMA,
    writable: true,
}];
/// The class's own files.
const CLASS_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("abi_version"),
        id: ABI,
        writable: false,
    },
    SysFile {
        name: c_str!("class_limit"),
        id: LIMIT,
        writable: true,
    },
];
/// A file named as one a class device has of its own.
const UEVENT_FILES: &[SysFile] = &[SysFile {
    name: c_str!("uevent"),
    id: READS,
    writable: false,
}];
/// Two files of one name.
const DUP_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("a"),
        id: READS,
        writable: false,
    },
    SysFile {
        name: c_str!("a"),
        id: LIMIT,
        writable: false,
    },
];
/// A file name with a `/`.
const SLASH_FILES: &[SysFile] = &[SysFile {
    name: c_str!("a/b"),
    id: READS,
    writable: false,
}];

/// A number written to a file: decimal, with or without a newline.
fn parse(input: &[u8]) -> Result<u32> {
    let s = core::str::from_utf8(input).map_err(|_| EINVAL)?;
    s.strip_suffix('\n')
        .unwrap_or(s)
        .parse::<u32>()
        .map_err(|_| EINVAL)
}

/// The session's files (and the `paths` directory's, which has none).
struct Sess {
    reads: AtomicU32,
    limit: AtomicU32,
}

impl SysFiles for Sess {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let v = match id {
            READS => self.reads.fetch_add(1, Ordering::Relaxed) + 1,
            LIMIT => self.limit.load(Ordering::Relaxed),
            ABI => 6,
            _ => return Err(EINVAL),
        };
        writeln!(out, "{v}").map_err(|_| EINVAL)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        match id {
            LIMIT => self.limit.store(parse(input)?, Ordering::Relaxed),
            _ => return Err(EACCES),
        }
        Ok(())
    }
}

/// One path: its directory and its `stats`, dropped by `work` once
/// `remove_path` is written, or when the module goes.
#[pin_data]
struct Path {
    #[pin]
    dir: Mutex<Option<SysDir>>,
    #[pin]
    stats: Mutex<Option<SysDir>>,
    rdma: AtomicU32,
    #[pin]
    work: Work<Path>,
}

impl_has_work! {
    impl HasWork<Self> for Path { self.work }
}

impl WorkItem for Path {
    type Pointer = Arc<Path>;

    fn run(this: Arc<Path>) {
        this.remove();
    }
}

impl Path {
    /// Makes path `i` in `paths`.
    fn add(paths: &SysDir, i: u32) -> Result<Arc<Path>> {
        let path = Arc::pin_init(
            pin_init!(Path {
                dir <- new_mutex!(None),
                stats <- new_mutex!(None),
                rdma: AtomicU32::new(0),
                work <- new_work!("rdma_class_test::Path::work"),
            }),
            GFP_KERNEL,
        )?;
        let name = CString::try_from_fmt(kernel::fmt!("ip:10.0.0.1@ip:10.0.0.{}", 2 + i))?;
        let files: Arc<dyn SysFiles> = Arc::new(PathFiles { path: path.clone() }, GFP_KERNEL)?;
        let dir = paths.child(&name, PATH_FILES, files.clone())?;
        let stats = dir.child(c_str!("stats"), STATS_FILES, files)?;
        *path.stats.lock() = Some(stats);
        *path.dir.lock() = Some(dir);
        Ok(path)
    }

    /// Drops the directories: the child first, as a caller would (the
    /// other order works too, see `parent_waits_for_children`).
    fn remove(&self) {
        let stats = self.stats.lock().take();
        drop(stats);
        let dir = self.dir.lock().take();
        drop(dir);
    }
}

/// The files of a path and of its `stats`.
struct PathFiles {
    path: Arc<Path>,
}

impl SysFiles for PathFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        match id {
            RDMA => writeln!(out, "{}", self.path.rdma.load(Ordering::Relaxed)),
            REMOVE => writeln!(out, "write anything to remove the path"),
            _ => return Err(EINVAL),
        }
        .map_err(|_| EINVAL)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        match id {
            RDMA => self.path.rdma.store(parse(input)?, Ordering::Relaxed),
            // Dropping the directory here would wait for this very store.
            REMOVE => {
                let _ = workqueue::system().enqueue(self.path.clone());
            }
            _ => return Err(EACCES),
        }
        Ok(())
    }
}

/// What the cases build; the module keeps the tree for `class.sh`.
struct Ctx {
    class: Option<Arc<SysClass>>,
    sess: Option<SysDir>,
    paths_dir: Option<SysDir>,
    paths: KVec<Arc<Path>>,
}

impl Ctx {
    fn new() -> Ctx {
        Ctx {
            class: None,
            sess: None,
            paths_dir: None,
            paths: KVec::new(),
        }
    }

    fn class(&self) -> Result<&Arc<SysClass>> {
        self.class.as_ref().ok_or(EINVAL)
    }

    fn sess(&self) -> Result<&SysDir> {
        self.sess.as_ref().ok_or(EINVAL)
    }
}

fn is(r: Result<impl Sized>, e: Error) -> bool {
    matches!(r, Err(x) if x == e)
}

fn sess_ops() -> Result<Arc<dyn SysFiles>> {
    Ok(Arc::new(
        Sess {
            reads: AtomicU32::new(0),
            limit: AtomicU32::new(10),
        },
        GFP_KERNEL,
    )?)
}

fn class_names_are_checked() -> Result {
    check(
        is(SysClass::new(c_str!("")), EINVAL)
            && is(SysClass::new(c_str!("a/b")), EINVAL)
            && is(SysClass::new(c_str!("..")), EINVAL),
        "empty, '/' and '..' class names are EINVAL",
    )
}

fn class_registers_once(c: &mut Ctx) -> Result {
    check(
        is(SysClass::with_files(CLASS, DUP_FILES, sess_ops()?), EINVAL)
            && is(
                SysClass::with_files(CLASS, SLASH_FILES, sess_ops()?),
                EINVAL,
            ),
        "class files of one name, or with a '/', are EINVAL",
    )?;
    c.class = Some(SysClass::with_files(CLASS, CLASS_FILES, sess_ops()?)?);
    check(
        is(SysClass::new(CLASS), EEXIST),
        "a second class of one name is EEXIST",
    )?;
    check(
        is(
            SysDir::top(c.class()?, c_str!("abi_version"), SESS_FILES, sess_ops()?),
            EEXIST,
        ),
        "a top-level directory named as a class file is EEXIST",
    )
}

fn tree_is_made(c: &mut Ctx) -> Result {
    let sess = SysDir::top(c.class()?, c_str!("sess0"), SESS_FILES, sess_ops()?)?;
    let paths_dir = sess.child(c_str!("paths"), &[], sess_ops()?)?;
    for i in 0..2 {
        let p = Path::add(&paths_dir, i)?;
        c.paths.push(p, GFP_KERNEL)?;
    }
    c.sess = Some(sess);
    c.paths_dir = Some(paths_dir);
    Ok(())
}

fn duplicates_are_eexist(c: &mut Ctx) -> Result {
    let class = c.class()?;
    let sess = c.sess()?;
    check(
        is(
            SysDir::top(class, c_str!("sess0"), SESS_FILES, sess_ops()?),
            EEXIST,
        ),
        "a second top-level directory of one name is EEXIST",
    )?;
    check(
        is(sess.child(c_str!("paths"), &[], sess_ops()?), EEXIST),
        "a second child of one name is EEXIST",
    )?;
    check(
        is(sess.child(c_str!("limit"), &[], sess_ops()?), EEXIST),
        "a child named as a file is EEXIST",
    )?;
    check(
        is(
            SysDir::top(class, c_str!("sess1"), UEVENT_FILES, sess_ops()?),
            EEXIST,
        ),
        "a file named as a device's own is EEXIST",
    )?;
    // The failed attempt left nothing behind.
    let sess1 = SysDir::top(class, c_str!("sess1"), SESS_FILES, sess_ops()?);
    check(sess1.is_ok(), "the name is free after a failed add")
}

fn bad_names_are_einval(c: &mut Ctx) -> Result {
    let class = c.class()?;
    let sess = c.sess()?;
    check(
        is(
            SysDir::top(class, c_str!(""), SESS_FILES, sess_ops()?),
            EINVAL,
        ) && is(
            SysDir::top(class, c_str!("x/y"), SESS_FILES, sess_ops()?),
            EINVAL,
        ) && is(sess.child(c_str!("."), &[], sess_ops()?), EINVAL),
        "empty, '/' and '.' directory names are EINVAL",
    )?;
    check(
        is(sess.child(c_str!("d"), DUP_FILES, sess_ops()?), EINVAL)
            && is(sess.child(c_str!("d"), SLASH_FILES, sess_ops()?), EINVAL),
        "two files of one name, or a '/' in one, are EINVAL",
    )
}

fn parent_waits_for_children(c: &mut Ctx) -> Result {
    let class = c.class()?;
    let top = SysDir::top(class, c_str!("order"), SESS_FILES, sess_ops()?)?;
    let child = top.child(c_str!("c"), SESS_FILES, sess_ops()?)?;
    let grandchild = child.child(c_str!("g"), SESS_FILES, sess_ops()?)?;
    drop(top);
    drop(child);
    check(
        is(
            SysDir::top(class, c_str!("order"), SESS_FILES, sess_ops()?),
            EEXIST,
        ),
        "the parents stay while a grandchild is there",
    )?;
    drop(grandchild);
    let again = SysDir::top(class, c_str!("order"), SESS_FILES, sess_ops()?);
    check(again.is_ok(), "they go with it")
}

fn class_waits_for_its_directories() -> Result {
    let class = SysClass::with_files(CLASS2, CLASS_FILES, sess_ops()?)?;
    let dir = SysDir::top(&class, c_str!("x"), SESS_FILES, sess_ops()?)?;
    drop(class);
    check(
        is(SysClass::new(CLASS2), EEXIST),
        "the class stays while a directory is there",
    )?;
    drop(dir);
    check(
        SysClass::with_files(CLASS2, CLASS_FILES, sess_ops()?).is_ok(),
        "it goes with the last one, files and all",
    )
}

const CASES: &[FnCase<Ctx>] = &[
    case!(class_names_are_checked),
    case!(class_registers_once(_)),
    case!(tree_is_made(_)),
    case!(duplicates_are_eexist(_)),
    case!(bad_names_are_einval(_)),
    case!(parent_waits_for_children(_)),
    case!(class_waits_for_its_directories),
];

struct ClassTest {
    ctx: Ctx,
}

impl kernel::Module for ClassTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut ctx = Ctx::new();
        ktap::run(CASES, &mut ctx)?;
        Ok(ClassTest { ctx })
    }
}

impl Drop for ClassTest {
    fn drop(&mut self) {
        for p in self.ctx.paths.iter() {
            // Once the directory is gone no store queues the work; then
            // wait for one queued before.
            p.remove();
            work::flush(&p.work);
        }
        // The fields go next: the paths, `paths`, the session (in either
        // order), then the class.
        self.ctx.paths_dir = None;
        self.ctx.sess = None;
        self.ctx.class = None;
    }
}
