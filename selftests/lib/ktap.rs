// SPDX-License-Identifier: GPL-2.0

//! KTAP output for in-kernel selftest modules.
//!
//! A test module runs its cases in `init` and reports each one on the kernel
//! log as `ktap: ok N name` / `ktap: not ok N name # reason`; the selftest
//! script that loads it lifts those lines out of the log into its own KTAP
//! output (`selftests/lib/ktap.sh`). `init` fails when a case failed, so the
//! load itself reports the verdict too. Include it with
//! `#[path = "../../lib/ktap.rs"] mod ktap;`.

use kernel::error::code::EINVAL;
use kernel::prelude::*;

/// A KTAP test plan being reported on the kernel log.
pub(crate) struct Ktap {
    next: u32,
    planned: u32,
    failed: u32,
}

impl Ktap {
    /// Starts a plan of `planned` cases.
    pub(crate) fn new(planned: u32) -> Self {
        pr_info!("ktap: KTAP version 1\n");
        pr_info!("ktap: 1..{}\n", planned);
        Ktap {
            next: 1,
            planned,
            failed: 0,
        }
    }

    /// Reports one case.
    pub(crate) fn case(&mut self, name: &str, result: Result) {
        match result {
            Ok(()) => pr_info!("ktap: ok {} {}\n", self.next, name),
            Err(e) => {
                self.failed += 1;
                pr_info!(
                    "ktap: not ok {} {} # error {}\n",
                    self.next,
                    name,
                    e.to_errno()
                );
            }
        }
        self.next += 1;
    }

    /// Ends the plan: `Err` if a case failed or the plan was not followed.
    pub(crate) fn finish(self) -> Result {
        if self.next - 1 != self.planned {
            pr_err!("ran {} cases, planned {}\n", self.next - 1, self.planned);
            return Err(EINVAL);
        }
        if self.failed > 0 {
            return Err(EINVAL);
        }
        Ok(())
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
