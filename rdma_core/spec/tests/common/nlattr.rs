// SPDX-License-Identifier: GPL-2.0

//! The netlink attribute builder the netlink tests share (included by
//! path, `#[path = "common/nlattr.rs"] mod nlattr;`, so tests that do not
//! build attributes do not carry it).

/// One attribute: its header (length, type), `value`, padding to 4 bytes.
pub(crate) fn nla(ty: u16, value: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    b.extend_from_slice(&ty.to_ne_bytes());
    b.extend_from_slice(value);
    while b.len() % 4 != 0 {
        b.push(0);
    }
    b
}
