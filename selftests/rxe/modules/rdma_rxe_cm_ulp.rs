// SPDX-License-Identifier: GPL-2.0

//! A ULP that keeps rdma_cm ids alive after its init: a listener on rxb
//! (port 5050), the connection a client on rxa made to it, and the
//! server's side of it; `cm.sh` unloads it while they live. Dropping the
//! module drops the ids in field order: the client's goes first, and its
//! DREQ is answered by the server's side before that goes too; nothing
//! runs in the module after its exit returns.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;

use rdma::cma::{CmId, IpAddr, SockAddr};

#[path = "../../lib/ktap.rs"]
mod ktap;

#[path = "../../lib/rping.rs"]
#[allow(dead_code)]
mod rping;
use rping::{connect_pair, listen, Ep, Recorder};

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
        let listener = listen(&b, &rb, 5050)?;
        let (client, server) = connect_pair(
            (&a, &ra),
            (&b, &rb),
            SockAddr {
                ip: IpAddr::V4([10, 84, 0, 2]),
                port: 5050,
            },
        )?;
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
