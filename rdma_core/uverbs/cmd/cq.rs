// SPDX-License-Identifier: GPL-2.0

//! Completion queues and their channels: `CREATE_COMP_CHANNEL` (the CQ
//! commands themselves need rxe's shared rings, not built yet).

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::spec::uverbs::cq::{CreateCompChannel, CreateCompChannelResp};
use rdma::spec::uverbs::Request;

use super::{core, respond};
use crate::event_file::EventQueue;
use crate::file::UFile;

/// Makes a completion channel: an event file of 8-byte records, whose
/// descriptor is installed once the response is written. The context
/// keeps the channel (to close it with the context) until its file is
/// released.
pub(super) fn create_comp_channel(
    file: &Arc<UFile>,
    channels: &mut KVec<Arc<EventQueue>>,
    req: &Request<'_>,
) -> Result {
    let _: CreateCompChannel = core(req)?;
    rdma::kshim::vec::retain(channels, |ch| !ch.is_released());
    channels.reserve(1, GFP_KERNEL)?;
    let queue = EventQueue::new_comp()?;
    let afile = queue.new_file(file.udev.module)?;
    respond(
        req,
        &CreateCompChannelResp {
            fd: afile.fd() as u32,
        },
    )?;
    channels.push(queue, GFP_KERNEL)?;
    afile.install();
    Ok(())
}
