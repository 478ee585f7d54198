// SPDX-License-Identifier: GPL-2.0

//! `make run`'s demonstration: an RDMA WRITE and an RDMA READ of 1 MiB
//! between two `rdma_rs_rxe` devices, `rxa` (10.78.3.1) and `rxb`
//! (10.78.3.2), which `demo.sh` binds to the two ends of a veth pair in two
//! network namespaces. Prints a summary line per operation (bytes,
//! packets, time, rate, data verified) and fails to load if anything did
//! not work.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::time::{ktime_ms_delta, Ktime};

use rdma::device::{self, DeviceRef};
use rdma::kshim::mem::Buffer;
use rdma::kshim::testing;
use rdma::spec::attr::{Gid, Mtu};
use rdma::spec::opcodes::{Access, WcStatus};
use rdma::spec::qp_state::{required_attrs, AttrMask, QpState, QpType};
use rdma::verbs::ah::{AhAttr, GlobalRoute};
use rdma::verbs::cq::Cq;
use rdma::verbs::mr::Mr;
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{Qp, QpAttr, QpCap, QpInitAttr};
use rdma::verbs::wc::Wc;
use rdma::verbs::wr::{SendOp, SendWr};

module! {
    type: RxeDemo,
    name: "rdma_rxe_demo",
    author: "rdma-rs developers",
    description: "make run: RDMA WRITE and READ between two rdma_rs_rxe devices",
    license: "GPL",
}

const LEN: usize = 1 << 20;

/// One end: fields in destruction order.
struct End {
    qp: Qp,
    mr: Mr,
    cq: Cq,
    _pd: Pd,
    buf: Arc<Buffer>,
    dev: DeviceRef,
    gid: Gid,
}

fn end(name: &CStr, gid: Gid) -> Result<End> {
    let dev = device::get_by_name(name).ok_or(ENODEV)?;
    let pd = Pd::alloc(dev.arc())?;
    let cq = Cq::create(dev.arc(), 16, None)?;
    let qp = Qp::create(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Rc,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: None,
            cap: QpCap {
                max_send_wr: 4,
                max_recv_wr: 4,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: true,
            port_num: 1,
        },
    )?;
    let buf = Buffer::new(LEN)?;
    let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let mr = Mr::reg_buffer(pd.core(), &buf, 0, LEN, access)?;
    Ok(End {
        qp,
        mr,
        cq,
        _pd: pd,
        buf,
        dev,
        gid,
    })
}

fn connect(e: &End, peer: &End) -> Result {
    let (_, sgid_index) = e.dev.find_gid_on_port(1, &e.gid).ok_or(ENODEV)?;
    let attr = |next| QpAttr {
        qp_state: next,
        qp_access_flags: Access::REMOTE_WRITE | Access::REMOTE_READ,
        port_num: 1,
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: peer.qp.qpn(),
        max_rd_atomic: 1,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 1,
        timeout: 16,
        retry_cnt: 7,
        rnr_retry: 7,
        ah_attr: AhAttr {
            port_num: 1,
            grh: GlobalRoute {
                dgid: peer.gid,
                sgid_index: sgid_index as u8,
                hop_limit: 64,
                ..GlobalRoute::default()
            },
            ..AhAttr::default()
        },
        ..QpAttr::default()
    };
    for (cur, next) in [
        (QpState::Reset, QpState::Init),
        (QpState::Init, QpState::Rtr),
        (QpState::Rtr, QpState::Rts),
    ] {
        let mask = required_attrs(cur, next, QpType::Rc).ok_or(EINVAL)? | AttrMask::STATE;
        e.qp.modify(&attr(next), mask)?;
    }
    Ok(())
}

/// Posts one request on `e` and waits for its completion: the time it
/// took in microseconds.
fn run(e: &End, op: SendOp<'_>) -> Result<i64> {
    let sg = [e.buf.sge(0, LEN as u32, e.mr.lkey())?];
    let start = Ktime::ktime_get();
    e.qp.post_send(&[SendWr::new(1, op, &sg)])
        .map_err(|(_, err)| err)?;
    let mut wc: [Wc; 1] = Default::default();
    loop {
        if e.cq.poll(&mut wc) == 1 {
            break;
        }
        if ktime_ms_delta(Ktime::ktime_get(), start) > 30_000 {
            return Err(EAGAIN);
        }
        testing::msleep(1);
    }
    let us = (Ktime::ktime_get().to_ns() - start.to_ns()) / 1000;
    if wc[0].status != WcStatus::Success {
        pr_err!("rxe demo: completion status {:?}\n", wc[0].status);
        return Err(EINVAL);
    }
    Ok(us.max(1))
}

fn pattern(buf: &Buffer, seed: u8) -> Result {
    let mut chunk = [0u8; 4096];
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
    for off in (0..LEN).step_by(chunk.len()) {
        buf.write(off, &chunk)?;
    }
    Ok(())
}

fn same(a: &Buffer, b: &Buffer) -> Result<bool> {
    let mut x = [0u8; 4096];
    let mut y = [0u8; 4096];
    for off in (0..LEN).step_by(x.len()) {
        a.read(off, &mut x)?;
        b.read(off, &mut y)?;
        if x != y {
            return Ok(false);
        }
    }
    Ok(true)
}

fn summary(what: &str, us: i64, verified: bool) {
    // Bytes per millisecond is KB/s (10^3 bytes per second).
    let rate = LEN as i64 * 1000 / us;
    pr_info!(
        "rxe demo: {} {} bytes in {} packets: {}.{:03} ms, {} KB/s, data {}\n",
        what,
        LEN,
        LEN / 1024,
        us / 1000,
        us % 1000,
        rate,
        if verified { "verified" } else { "DIFFERS" }
    );
}

fn demo() -> Result {
    let a = end(c_str!("rxa"), Gid::from_ipv4([10, 78, 3, 1]))?;
    let b = end(c_str!("rxb"), Gid::from_ipv4([10, 78, 3, 2]))?;
    connect(&a, &b)?;
    connect(&b, &a)?;
    pr_info!(
        "rxe demo: RC QP {} on rxa (10.78.3.1) <-> QP {} on rxb (10.78.3.2), path MTU 1024\n",
        a.qp.qpn(),
        b.qp.qpn()
    );
    pattern(&a.buf, 1)?;
    b.buf.fill(0, LEN, 0)?;
    let us = run(
        &a,
        SendOp::Write {
            remote_addr: b.buf.addr(0),
            rkey: b.mr.rkey(),
        },
    )?;
    let ok_write = same(&a.buf, &b.buf)?;
    summary("RDMA WRITE rxa -> rxb", us, ok_write);
    pattern(&b.buf, 7)?;
    let us = run(
        &a,
        SendOp::Read {
            remote_addr: b.buf.addr(0),
            rkey: b.mr.rkey(),
        },
    )?;
    let ok_read = same(&a.buf, &b.buf)?;
    summary("RDMA READ rxa <- rxb", us, ok_read);
    if ok_write && ok_read {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

struct RxeDemo;

impl kernel::Module for RxeDemo {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        demo()?;
        Ok(RxeDemo)
    }
}
