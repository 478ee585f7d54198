// SPDX-License-Identifier: GPL-2.0

//! The QP of an RTRS connection, client's or server's: RC, one CQ for
//! both queues (polled where the side says: the client's in softirq, as
//! the kernel's; the server's where its ULP answers, a workqueue as the
//! kernel's or softirq), one receive SGE, no inline data,
//! completions only where asked for; and the posting of its work
//! requests, each completing into the handler its side gives.

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::cma::CmIdCore;
use rdma::device::Device;
use rdma::kshim::mem::Sge;
use rdma::spec::qp_state::QpType;
use rdma::verbs::cq::{Cq, PollCtx};
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::{QpCap, QpCore, QpInitAttr};
use rdma::verbs::wc::CqeDone;
use rdma::verbs::wr::{RecvWr, SendWr};

/// Creates the CQ (polled in `poll`) and the QP of `id` with room for
/// `send` and `recv` work requests and `send_sge` SGEs per send.
pub(crate) fn create(
    id: &Arc<CmIdCore>,
    dev: &Arc<Device>,
    pd: &Pd,
    (send, recv, send_sge): (u32, u32, u32),
    poll: PollCtx,
) -> Result<(Cq, Arc<QpCore>)> {
    let cq = Cq::alloc(dev, send + recv, poll)?;
    id.create_qp(
        pd.core(),
        &QpInitAttr {
            qp_type: QpType::Rc,
            send_cq: cq.core(),
            recv_cq: cq.core(),
            srq: None,
            cap: QpCap {
                max_send_wr: send,
                max_recv_wr: recv,
                max_send_sge: send_sge,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            port_num: 1,
        },
    )?;
    let qp = id.qp().ok_or(EINVAL)?;
    Ok((cq, qp))
}

/// Posts a receive of `sg` (no SGE: a receive without memory) with
/// `wr_id` on `qp`, completing into `cqe`.
pub(crate) fn post_recv(qp: &Arc<QpCore>, wr_id: u64, sg: &[Sge], cqe: Arc<dyn CqeDone>) -> Result {
    qp.post_recv(&[RecvWr {
        wr_id,
        cqe: Some(cqe),
        sg,
    }])
    .map_err(|(_, e)| e)
}

/// Posts `wrs` on `qp`, each completing into `cqe`.
pub(crate) fn post_send(
    qp: &Arc<QpCore>,
    wrs: &mut [SendWr<'_>],
    cqe: &Arc<dyn CqeDone>,
) -> Result {
    for w in wrs.iter_mut() {
        w.cqe = Some(cqe.clone());
    }
    qp.post_send(wrs).map_err(|(_, e)| e)
}
