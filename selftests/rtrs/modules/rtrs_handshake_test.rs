// SPDX-License-Identifier: GPL-2.0

//! Selftest: the RTRS wire codec (`rtrs/proto`, host-tested) against the
//! kernel's RTRS, on the wire.
//!
//! `handshake.sh` loads this module, which listens with our rdma_cm on
//! our rxe `rtb` (10.80.1.2, namespace rt_b) on RTRS's port, then has the
//! kernel's `rnbd_client` map a device from that address over the
//! kernel's rxe: the kernel's RTRS client sends its first connection
//! request. We parse its `rtrs_msg_conn_req` with our codec, check it is
//! what the kernel's client sends first (magic, protocol version 2,
//! connection 0 of a session, first connection, UUIDs set), and refuse it
//! with a consumer reject carrying our `rtrs_msg_conn_rsp` with errno
//! `-EACCES`; the script then finds the kernel client's "rtrs errno -13"
//! log line: it read our message as the kernel's server writes it.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::prelude::*;

use rdma::cma::{CmId, EventKind, IpAddr, SockAddr};

#[path = "../../lib/ktap.rs"]
mod ktap;
use ktap::{case, check, FnCase};

// Of the rping library, only the device endpoint and the event recorder.
#[allow(dead_code)]
#[path = "../../lib/rping.rs"]
mod rping;
use rping::{Ep, Recorder};

/// The RTRS codec, compiled unchanged from the host-tested crate.
#[allow(dead_code)]
#[path = "../../../rtrs/proto/kernel_mod.rs"]
pub mod proto;

use proto::conn::{ConnReq, ConnRsp, CONN_RSP_LEN};
use proto::consts::{version_compatible, RTRS_PORT};

module! {
    type: RtrsHandshakeTest,
    name: "rtrs_handshake_test",
    author: "rdma-rs developers",
    description: "Selftest: our RTRS codec against the kernel's RTRS client",
    license: "GPL",
}

/// The errno our refusal carries (`-EACCES`).
const REFUSAL: i16 = -13;

fn kernel_client_conn_req_refused() -> Result {
    let ep = Ep::new(c_str!("rtb"))?;
    let rec = Recorder::make()?;
    let listener = CmId::new(ep.ns()?, rec.clone())?;
    listener.bind_addr(SockAddr {
        ip: IpAddr::V4([0; 4]),
        port: RTRS_PORT,
    })?;
    listener.listen()?;
    pr_info!("rtrs handshake: listening on {}\n", RTRS_PORT);
    let mut ev = rec.take(EventKind::ConnectRequest, 90)?;
    let id = ev.new_id.take().ok_or(EINVAL)?;
    let req = match ConnReq::parse(&ev.private_data) {
        Ok(r) => r,
        Err(e) => {
            pr_err!(
                "rtrs handshake: conn_req of {} bytes not parsed: {}\n",
                ev.private_data.len(),
                e
            );
            return Err(EINVAL);
        }
    };
    pr_info!(
        "rtrs handshake: conn_req version {:#06x} cid {} of {} recon_cnt {} first_conn {}\n",
        req.version,
        req.cid,
        req.cid_num,
        req.recon_cnt,
        req.first_conn
    );
    check(version_compatible(req.version), "protocol major version 2")?;
    check(req.check().is_ok(), "cid within cid_num, cid_num bounded")?;
    check(
        req.cid == 0 && req.cid_num >= 2,
        "connection 0 (admin) of a session of several",
    )?;
    check(req.first_conn, "the first connection of the path")?;
    check(
        req.sess_uuid != [0; 16] && req.paths_uuid != [0; 16],
        "UUIDs set",
    )?;
    let mut rsp = [0u8; CONN_RSP_LEN];
    let n = ConnRsp::reject(REFUSAL)
        .write(&mut rsp)
        .map_err(|_| EINVAL)?;
    id.reject(&rsp[..n])?;
    pr_info!("rtrs handshake: refused with rtrs errno {}\n", REFUSAL);
    drop(id);
    drop(listener);
    Ok(())
}

const CASES: &[FnCase<()>] = &[case!("kernel_client_conn_req_refused", |()| {
    kernel_client_conn_req_refused()
})];

struct RtrsHandshakeTest;

impl kernel::Module for RtrsHandshakeTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        ktap::run(CASES, &mut ())?;
        Ok(RtrsHandshakeTest)
    }
}
