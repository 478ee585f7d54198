// SPDX-License-Identifier: GPL-2.0

//! The pace of a keeper (the client's and the server's heartbeats and
//! reconnects): a work item that visits every second until stopped.

use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, CondVar, Mutex};
use kernel::time::msecs_to_jiffies;

/// A stop flag a keeper waits on between its visits.
#[pin_data]
pub(crate) struct Ticker {
    #[pin]
    stopped: Mutex<bool>,
    #[pin]
    cv: CondVar,
}

impl Ticker {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Ticker {
            stopped <- new_mutex!(false, "rtrs::Ticker::stopped"),
            cv <- new_condvar!("rtrs::Ticker::cv"),
        })
    }

    /// Waits `ms` milliseconds, less if stopped meanwhile; `false` once
    /// stopped (the keeper returns).
    pub(crate) fn wait(&self, ms: u32) -> bool {
        let mut stopped = self.stopped.lock();
        if !*stopped {
            let _ = self
                .cv
                .wait_interruptible_timeout(&mut stopped, msecs_to_jiffies(ms));
        }
        !*stopped
    }

    /// Stops the keeper (at its next wait, at once if waiting).
    pub(crate) fn stop(&self) {
        *self.stopped.lock() = true;
        self.cv.notify_all();
    }
}
