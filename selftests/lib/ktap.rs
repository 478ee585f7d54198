// SPDX-License-Identifier: GPL-2.0

//! KTAP output for in-kernel selftest modules.
//!
//! A test module runs its cases in `init` and reports each one on the kernel
//! log as `ktap: ok N name` / `ktap: not ok N name # error E`; the selftest
//! script that loads it lifts those lines out of the log into its own KTAP
//! output (`selftests/lib/ktap.sh`). `init` fails when a case failed, so the
//! load itself reports the verdict too.
//!
//! The cases are a table, and the plan is its length: a module lists its
//! cases once and never counts them.
//!
//! ```ignore
//! const CASES: &[FnCase<Ports>] = &[
//!     case!(devices_active),
//!     case!(flush(_)),
//!     case!("all_ops_veth", |p| all_ops(p.a, p.b)),
//! ];
//! ktap::run(CASES, &mut ports)?;
//! ```
//!
//! Cases run in table order on one context, which they may change; a
//! [`Fixture`] in it holds what several cases share. A table can be built
//! at run time too, of any type that implements [`Case`].
//!
//! Include it with `#[path = "../../lib/ktap.rs"] mod ktap;` at the crate
//! root (the [`case!`] macro names `crate::ktap`).

// Each test module uses its own part of this file.
#![allow(dead_code, unused_macros)]

use kernel::error::code::EINVAL;
use kernel::prelude::*;

/// One case of a test module, run on the module's context `C`.
pub(crate) trait Case<C> {
    /// The name KTAP reports.
    fn name(&self) -> &str;

    /// Runs the case.
    fn run(&self, ctx: &mut C) -> Result;
}

/// A case that is a function of the context, for tables known at compile
/// time. Made by [`case!`].
pub(crate) struct FnCase<C> {
    /// The name KTAP reports.
    pub(crate) name: &'static str,
    /// The case.
    pub(crate) run: fn(&mut C) -> Result,
}

impl<C> Case<C> for FnCase<C> {
    fn name(&self) -> &str {
        self.name
    }

    fn run(&self, ctx: &mut C) -> Result {
        (self.run)(ctx)
    }
}

/// A [`FnCase`] named after its function or given a name:
///
/// - `case!(f)`: `f()`, reported as `f`;
/// - `case!(f(_))`: `f(ctx)` on the context, reported as `f`;
/// - `case!("name", |ctx| ...)`: the closure on the context.
macro_rules! case {
    ($f:ident) => {
        $crate::ktap::FnCase {
            name: stringify!($f),
            run: |_| $f(),
        }
    };
    ($f:ident(_)) => {
        $crate::ktap::FnCase {
            name: stringify!($f),
            run: $f,
        }
    };
    ($name:literal, $run:expr) => {
        $crate::ktap::FnCase {
            name: $name,
            run: $run,
        }
    };
}
// Re-exported for `use ktap::case`.
#[allow(unused_imports)]
pub(crate) use case;

/// Runs `cases` in order on `ctx` and reports them: the KTAP header, the
/// plan `1..N` with N the table's length, and one line per case. `Err` if a
/// case failed.
pub(crate) fn run<C, T: Case<C>>(cases: &[T], ctx: &mut C) -> Result {
    pr_info!("ktap: KTAP version 1\n");
    pr_info!("ktap: 1..{}\n", cases.len());
    let mut failed = 0;
    for (i, case) in cases.iter().enumerate() {
        let n = i + 1;
        match case.run(ctx) {
            Ok(()) => pr_info!("ktap: ok {} {}\n", n, case.name()),
            Err(e) => {
                failed += 1;
                pr_info!(
                    "ktap: not ok {} {} # error {}\n",
                    n,
                    case.name(),
                    e.to_errno()
                );
            }
        }
    }
    if failed > 0 {
        return Err(EINVAL);
    }
    Ok(())
}

/// What cases on one context share: made by the first case that asks for
/// it, kept for the next, and replaced when a case asks for another kind
/// (the old one dropped first). A failure to make it fails every case that
/// asks, with its error, until another kind is asked for.
pub(crate) struct Fixture<K, T>(Option<(K, Result<T>)>);

impl<K: Copy + PartialEq, T> Fixture<K, T> {
    /// No fixture yet.
    pub(crate) const fn new() -> Self {
        Fixture(None)
    }

    /// The fixture of `kind`, made by `make` unless it is the one held.
    pub(crate) fn get(&mut self, kind: K, make: impl FnOnce(K) -> Result<T>) -> Result<&T> {
        if !matches!(&self.0, Some((k, _)) if *k == kind) {
            self.0 = None;
            self.0 = Some((kind, make(kind)));
        }
        match &self.0 {
            Some((_, Ok(t))) => Ok(t),
            Some((_, Err(e))) => Err(*e),
            None => Err(EINVAL),
        }
    }
}

/// Fails a case with `EINVAL` and logs `what` when `cond` is false.
pub(crate) fn check(cond: bool, what: &str) -> Result {
    if cond {
        Ok(())
    } else {
        pr_err!("check failed: {}\n", what);
        Err(EINVAL)
    }
}
