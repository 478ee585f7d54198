// SPDX-License-Identifier: GPL-2.0

//! Whether a request's data, given as pieces of pages (a block request's
//! own pages), makes one region a fast-registration memory region can map
//! without a copy: every piece inside its page and not empty, every piece
//! but the first starting its page, every piece but the last ending it.
//! The RNBD client copies the data of any other request through a buffer.

/// Whether `pieces` (offset in the page, length) make one region of
/// pages of `page` bytes; an empty list does not.
pub fn pieces_fit<I>(pieces: I, page: usize) -> bool
where
    I: IntoIterator<Item = (usize, usize)>,
{
    let mut any = false;
    // Where the previous piece ended (`page`: at its page's end).
    let mut prev_end = page;
    for (offset, len) in pieces {
        if len == 0 || offset > page || len > page - offset {
            return false;
        }
        if any && (offset != 0 || prev_end != page) {
            return false;
        }
        any = true;
        prev_end = offset + len;
    }
    any
}
