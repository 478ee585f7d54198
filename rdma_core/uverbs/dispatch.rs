// SPDX-License-Identifier: GPL-2.0

//! A `write()` of a uverbs file: the whole buffer copied in once (no field
//! is read from user memory twice), its framing checked by
//! `rdma::spec::uverbs` (lengths, command word, response addresses), then
//! the command run with the file's lock held (and what is left of it,
//! `POST_SEND`'s wait for the send run, after). A framing fault fails with
//! the errno the C uverbs gives it; a command's own failure with its
//! errno; a file whose context is gone with `EIO`. Success returns the
//! whole length written, as libibverbs requires.

use kernel::error::code::{EFAULT, EIO, ENOSPC};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceReader;
use rdma::kshim::errno::eopnotsupp;

use rdma::spec::uverbs::framing::MAX_WRITE_LEN;
use rdma::spec::uverbs::parse;
use rdma::spec::uverbs::{AbiError, Errno};

use crate::file::UFile;

/// The kernel error for an ABI error.
pub(crate) fn abi_err(e: AbiError) -> Error {
    match e.errno() {
        Errno::Inval => EINVAL,
        Errno::NoSpc => ENOSPC,
        Errno::OpNotSupp => eopnotsupp(),
        Errno::Fault => EFAULT,
    }
}

/// Runs one command written to `file`.
pub(crate) fn write(file: &Arc<UFile>, data: UserSliceReader) -> Result<usize> {
    let count = data.len();
    if count > MAX_WRITE_LEN {
        return Err(EINVAL);
    }
    let mut buf = KVec::new();
    data.read_all(&mut buf, GFP_KERNEL)?;
    let req = parse(&buf).map_err(abi_err)?;
    let mut st = file.state.lock();
    if st.dead {
        return Err(EIO);
    }
    let then = crate::cmd::run(file, &mut st, &req)?;
    drop(st);
    match then {
        crate::cmd::Then::Done => {}
        crate::cmd::Then::WaitSends(qp) => qp.wait_doorbell(),
    }
    Ok(count)
}
