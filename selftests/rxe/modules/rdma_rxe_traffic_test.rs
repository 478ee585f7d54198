// SPDX-License-Identifier: GPL-2.0

//! Selftest: a ULP whose RC traffic between `rxa` and `rxb` runs until a
//! device is removed under it.
//!
//! On load it connects a QP on `rxa` (10.78.2.1) to one on `rxb`
//! (10.78.2.2) and starts a worker that keeps 16 RDMA WRITEs and READs of
//! 64 KiB in flight, checking each completion. It is an `ib_client`: when
//! either device goes away (`traffic.sh` deletes the veth pair under it),
//! `remove` stops the worker and destroys every object, then logs how many
//! requests had completed, which the script checks.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kernel::c_str;
use kernel::error::code::EAGAIN;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use rdma::device::client::{Client, ClientRegistration};
use rdma::device::{Device, DeviceRef};
use rdma::kshim::mem::Buffer;
use rdma::kshim::time;
use rdma::spec::opcodes::{Access, WcStatus};
use rdma::verbs::cq::CqCore;
use rdma::verbs::qp::{QpCap, QpCore};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{SendOp, SendWr};

#[path = "../../lib/rc.rs"]
mod rc;
use rc::{End, Opts, RxePair};

module! {
    type: TrafficTest,
    name: "rdma_rxe_traffic_test",
    author: "rdma-rs developers",
    description: "Selftest: RC traffic until its device is removed",
    license: "GPL",
}

const LEN: usize = 64 * 1024;
const DEPTH: u64 = 16;

/// Each end: every request signaled, one SGE, 8 READs outstanding, no
/// atomics, and room for two requests' data.
const OPTS: Opts = Opts {
    access: Access(Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0),
    mr_access: rc::RW_ACCESS,
    buf_len: 2 * LEN,
    cqe: 256,
    cap: QpCap {
        max_send_wr: 64,
        max_recv_wr: 64,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    },
    sq_sig_all: true,
    max_rd_atomic: 8,
    ..rc::RC
};

/// The worker: keeps requests in flight on `qp` and counts completions.
#[pin_data]
struct Flow {
    t: Target,
    posted: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    stop: AtomicBool,
    #[pin]
    stopped: Mutex<bool>,
    #[pin]
    cv: CondVar,
    #[pin]
    work: Work<Flow>,
}

/// Where the worker's requests go.
struct Target {
    qp: Arc<QpCore>,
    cq: Arc<CqCore>,
    local: Arc<Buffer>,
    lkey: u32,
    remote_addr: u64,
    rkey: u32,
}

impl_has_work! {
    impl HasWork<Self> for Flow { self.work }
}

impl WorkItem for Flow {
    type Pointer = Arc<Flow>;

    fn run(this: Arc<Flow>) {
        // A slice of work, then queue again so removal can stop it.
        for _ in 0..50 {
            if this.stop.load(Ordering::Acquire) {
                break;
            }
            this.step();
        }
        if this.stop.load(Ordering::Acquire) {
            *this.stopped.lock() = true;
            this.cv.notify_all();
            return;
        }
        time::msleep(1);
        let _ = workqueue::system().enqueue(this);
    }
}

impl Flow {
    fn step(&self) {
        let mut wcs: [Wc; 16] = Default::default();
        let n = self.t.cq.poll(&mut wcs);
        for wc in &wcs[..n] {
            if wc.status == WcStatus::Success {
                self.done.fetch_add(1, Ordering::Relaxed);
            } else {
                if self.failed.fetch_add(1, Ordering::Relaxed) == 0 {
                    pr_info!(
                        "rxetraffic: request {} completed with {:?}\n",
                        wc.wr_id,
                        wc.status
                    );
                }
            }
        }
        if self.failed.load(Ordering::Relaxed) > 0 {
            return;
        }
        while self.posted.load(Ordering::Relaxed) - self.done.load(Ordering::Relaxed) < DEPTH {
            let i = self.posted.load(Ordering::Relaxed);
            let Ok(sg) = self.t.local.sge(0, LEN as u32, self.t.lkey) else {
                return;
            };
            let op = if i % 2 == 0 {
                SendOp::Write {
                    remote_addr: self.t.remote_addr,
                    rkey: self.t.rkey,
                }
            } else {
                SendOp::Read {
                    remote_addr: self.t.remote_addr,
                    rkey: self.t.rkey,
                }
            };
            let sgs = [sg];
            if self.t.qp.post_send(&[SendWr::new(i, op, &sgs)]).is_err() {
                return;
            }
            self.posted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Stops the worker and waits until it has returned: after its last
    /// run said it stopped, that run's code (this module's) still ends and
    /// may drop the last reference to the flow.
    fn halt(&self) {
        self.stop.store(true, Ordering::Release);
        {
            let mut stopped = self.stopped.lock();
            while !*stopped {
                let _ = self.cv.wait_interruptible_timeout(&mut stopped, 10);
            }
        }
        rdma::kshim::work::flush(&self.work);
    }
}

/// The connection and its worker.
struct Pair {
    flow: Arc<Flow>,
    x: End,
    y: End,
}

fn start() -> Result<Pair> {
    let p = RxePair::ipv4(2);
    let (x, y) = rc::pair(p.a, p.b, &OPTS)?;
    let t = Target {
        qp: x.qp.core().clone(),
        cq: x.cq.core().clone(),
        local: x.buf.clone(),
        lkey: x.mr.lkey(),
        remote_addr: y.buf.addr(0),
        rkey: y.mr.rkey(),
    };
    let flow = Arc::pin_init(
        pin_init!(Flow {
            t,
            posted: AtomicU64::new(0),
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stopped <- new_mutex!(false, "Flow::stopped"),
            cv <- new_condvar!("Flow::cv"),
            work <- new_work!("Flow::work"),
        }),
        GFP_KERNEL,
    )?;
    let _ = workqueue::system().enqueue(flow.clone());
    Ok(Pair { flow, x, y })
}

fn same_dev(a: &DeviceRef, b: &Arc<Device>) -> bool {
    a.name().as_bytes() == b.name().as_bytes()
}

/// The client: stops the traffic when either device goes.
struct Traffic {
    pair: Arc<Mutex<Option<Pair>>>,
}

impl Client for Traffic {
    type Data = ();

    fn name(&self) -> &CStr {
        c_str!("rxetraffic")
    }

    fn add(&self, _dev: &Arc<Device>) -> Result<()> {
        Ok(())
    }

    fn remove(&self, dev: &Arc<Device>, _data: &()) {
        let mut pair = self.pair.lock();
        let mine = pair
            .as_ref()
            .is_some_and(|p| same_dev(&p.x.dev, dev) || same_dev(&p.y.dev, dev));
        if !mine {
            return;
        }
        if let Some(p) = pair.take() {
            p.flow.halt();
            pr_info!(
                "rxetraffic: remove {:?}: {} requests completed, {} failed\n",
                dev.name(),
                p.flow.done.load(Ordering::Relaxed),
                p.flow.failed.load(Ordering::Relaxed)
            );
            // Destroyed here, before the device can finish going.
            drop(p);
        }
    }
}

struct TrafficTest {
    _reg: ClientRegistration<Traffic>,
    pair: Arc<Mutex<Option<Pair>>>,
}

impl kernel::Module for TrafficTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let p = start()?;
        // Traffic must be flowing before the module reports ready.
        let mut waited = 0;
        while p.flow.done.load(Ordering::Relaxed) < 2 * DEPTH {
            if p.flow.failed.load(Ordering::Relaxed) > 0 || waited > 30_000 {
                p.flow.halt();
                pr_err!(
                    "rxetraffic: traffic does not flow: {} posted, {} done, {} failed\n",
                    p.flow.posted.load(Ordering::Relaxed),
                    p.flow.done.load(Ordering::Relaxed),
                    p.flow.failed.load(Ordering::Relaxed)
                );
                return Err(EAGAIN);
            }
            time::msleep(10);
            waited += 10;
        }
        let pair = Arc::pin_init(new_mutex!(Some(p), "TrafficTest::pair"), GFP_KERNEL)?;
        let reg = ClientRegistration::new(Traffic { pair: pair.clone() })?;
        pr_info!("rxetraffic: running\n");
        Ok(TrafficTest { _reg: reg, pair })
    }
}

impl Drop for TrafficTest {
    fn drop(&mut self) {
        if let Some(p) = self.pair.lock().take() {
            p.flow.halt();
            pr_info!(
                "rxetraffic: unload: {} requests completed, {} failed\n",
                p.flow.done.load(Ordering::Relaxed),
                p.flow.failed.load(Ordering::Relaxed)
            );
        }
    }
}
