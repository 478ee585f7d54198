// SPDX-License-Identifier: GPL-2.0

//! A ULP that keeps rdma_cm ids alive after its init: a listener on rxb
//! (port 5050), the connection a client on rxa made to it, and the
//! server's side of it; `cm.sh` unloads it while they live. Dropping the
//! module drops the ids in field order: the client's goes first, and its
//! DREQ is answered by the server's side before that goes too; nothing
//! runs in the module after its exit returns.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::EINVAL;
use kernel::prelude::*;

use rdma::cma::{CmId, EventKind, IpAddr, SockAddr};

#[path = "../../lib/ktap.rs"]
mod ktap;

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{param, Ep, Recorder};

module! {
    type: RxeCmUlp,
    name: "rdma_rxe_cm_ulp",
    author: "rdma-rs developers",
    description: "Test ULP: rdma_cm ids alive until the module goes",
    license: "GPL",
}

/// The module's state, dropped at unload in field order.
struct RxeCmUlp {
    _client: CmId,
    _server: CmId,
    _listener: CmId,
    _client_ep: Ep,
    _server_ep: Ep,
}

impl kernel::Module for RxeCmUlp {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let (a, b) = (Ep::new(c_str!("rxa"))?, Ep::new(c_str!("rxb"))?);
        let (ra, rb) = (Recorder::make()?, Recorder::make()?);
        let listener = CmId::new(b.ns()?, rb.clone())?;
        listener.bind_addr(SockAddr {
            ip: IpAddr::V4([0; 4]),
            port: 5050,
        })?;
        listener.listen()?;
        let client = CmId::new(a.ns()?, ra.clone())?;
        client.resolve_addr(
            None,
            SockAddr {
                ip: IpAddr::V4([10, 84, 0, 2]),
                port: 5050,
            },
        )?;
        ra.take(EventKind::AddrResolved, 20)?;
        client.resolve_route()?;
        ra.take(EventKind::RouteResolved, 20)?;
        a.make_qp(&client)?;
        client.connect(&param())?;
        let mut ev = rb.take(EventKind::ConnectRequest, 20)?;
        let server = ev.new_id.take().ok_or(EINVAL)?;
        b.make_qp(&server)?;
        server.accept(&param())?;
        ra.take(EventKind::Established, 20)?;
        rb.take(EventKind::Established, 20)?;
        pr_info!("cm ulp: connected; unload me\n");
        Ok(RxeCmUlp {
            _client: client,
            _server: server,
            _listener: listener,
            _client_ep: a,
            _server_ep: b,
        })
    }
}

impl Drop for RxeCmUlp {
    fn drop(&mut self) {
        pr_info!("cm ulp: unloading with its ids\n");
    }
}
