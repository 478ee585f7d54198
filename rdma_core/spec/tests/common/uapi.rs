// SPDX-License-Identifier: GPL-2.0

//! What the layout tests share: finding the kernel's uapi RDMA headers and
//! compiling and running a small C program against them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `#include` directory holding `rdma/<probe>`, if any: a private
/// directory in `scratch` with a link to the kernel tree's
/// `include/uapi/rdma` (from `RDMA_RS_UAPI_RDMA`, else the newest
/// `~/.cache/rdma-rs/linux-6.12*`; the rest of that tree is not usable
/// before `headers_install`), or `Some(None)` for the system's headers.
/// `label` names the test in what it says on stderr.
pub(crate) fn header_dir(scratch: &Path, probe: &str, label: &str) -> Option<Option<PathBuf>> {
    let rdma_dir = std::env::var_os("RDMA_RS_UAPI_RDMA")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = PathBuf::from(std::env::var_os("HOME")?).join(".cache/rdma-rs");
            let mut trees: Vec<PathBuf> = std::fs::read_dir(cache)
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("linux-6.12"))
                })
                .map(|p| p.join("include/uapi/rdma"))
                .filter(|p| p.join(probe).is_file())
                .collect();
            trees.sort();
            trees.pop()
        });
    if let Some(dir) = rdma_dir {
        let inc = scratch.join("include");
        std::fs::create_dir_all(&inc).ok()?;
        let link = inc.join("rdma");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).ok()?;
        eprintln!("{label}: headers from {}", dir.display());
        return Some(Some(inc));
    }
    if Path::new("/usr/include/rdma").join(probe).is_file() {
        eprintln!("{label}: headers from /usr/include/rdma");
        return Some(None);
    }
    None
}

/// Compiles `src` (warnings are errors) with the include directory `inc`
/// and runs it; its standard output, or `None` if there is no C compiler.
/// A program that does not compile or fails fails the test.
pub(crate) fn run_c(
    scratch: &Path,
    inc: &Option<PathBuf>,
    name: &str,
    src: &str,
) -> Option<String> {
    let c_file = scratch.join(format!("{name}.c"));
    let exe = scratch.join(name);
    std::fs::write(&c_file, src).expect("write the C program");
    let mut cc = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    if let Some(inc) = inc {
        cc.arg("-I").arg(inc);
    }
    cc.args(["-Wall", "-Werror", "-o"]).arg(&exe).arg(&c_file);
    let out = match cc.output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("no C compiler ({e})");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "the C program does not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the C program");
    assert!(run.status.success());
    Some(String::from_utf8(run.stdout).expect("utf-8"))
}
