// SPDX-License-Identifier: GPL-2.0

//! How a connected-QP message is cut into packets: the packet count for a
//! length and path MTU, each packet's slice of the message, the opcode of
//! each packet of a SEND, RDMA WRITE or RDMA READ response, and the local
//! ACK timeout a QP's `timeout` code stands for.
//!
//! A message of `len` bytes takes `max(1, ceil(len / mtu))` packets (a
//! zero-length message is one packet without payload); every packet but
//! the last carries exactly `mtu` bytes.

use super::opcode::Opcode;

/// The kind of a request message that may span several packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Message {
    /// SEND, with immediate data or with an rkey to invalidate (not both).
    Send {
        /// SEND with immediate.
        imm: bool,
        /// SEND with invalidate (RC only).
        inv: bool,
    },
    /// RDMA WRITE, with or without immediate data.
    Write {
        /// RDMA WRITE with immediate.
        imm: bool,
    },
}

/// Packets a message of `len` bytes takes at path MTU `mtu` (at least one;
/// an MTU of 0 is taken as 256, the smallest IB MTU).
pub const fn packet_count(len: u32, mtu: u32) -> u32 {
    let mtu = if mtu == 0 { 256 } else { mtu };
    if len == 0 {
        1
    } else {
        len.div_ceil(mtu)
    }
}

/// The part of a message of `len` bytes packet `index` carries:
/// `(offset, length)`. An index past the end gives an empty slice at the
/// end.
pub const fn slice(index: u32, len: u32, mtu: u32) -> (u32, u32) {
    let mtu = if mtu == 0 { 256 } else { mtu };
    let off = (index as u64) * (mtu as u64);
    if off >= len as u64 {
        return (len, 0);
    }
    let off = off as u32;
    let rest = len - off;
    (off, if rest < mtu { rest } else { mtu })
}

/// Where packet `index` of `count` sits: 0 first, 1 middle, 2 last, 3 only.
const fn position(index: u32, count: u32) -> u8 {
    if count <= 1 {
        3
    } else if index == 0 {
        0
    } else if index + 1 >= count {
        2
    } else {
        1
    }
}

/// The opcode of packet `index` of `count` of a request message, on RC or
/// (`uc`) UC. None for a SEND with invalidate on UC, or with both
/// immediate and invalidate.
pub const fn request_opcode(uc: bool, msg: Message, index: u32, count: u32) -> Option<Opcode> {
    let pos = position(index, count);
    let rc_value: u8 = match msg {
        Message::Send {
            imm: true,
            inv: true,
        } => return None,
        Message::Send { inv: true, .. } if uc => return None,
        Message::Send { imm, inv } => match pos {
            0 => 0x00,
            1 => 0x01,
            2 if imm => 0x03,
            2 if inv => 0x16,
            2 => 0x02,
            _ if imm => 0x05,
            _ if inv => 0x17,
            _ => 0x04,
        },
        Message::Write { imm } => match pos {
            0 => 0x06,
            1 => 0x07,
            2 if imm => 0x09,
            2 => 0x08,
            _ if imm => 0x0b,
            _ => 0x0a,
        },
    };
    Opcode::from_u8(if uc { rc_value | 0x20 } else { rc_value })
}

/// The opcode of packet `index` of `count` of an RDMA READ response.
pub const fn read_response_opcode(index: u32, count: u32) -> Opcode {
    match position(index, count) {
        0 => Opcode::RcRdmaReadResponseFirst,
        1 => Opcode::RcRdmaReadResponseMiddle,
        2 => Opcode::RcRdmaReadResponseLast,
        _ => Opcode::RcRdmaReadResponseOnly,
    }
}

/// The local ACK timeout of a QP's `timeout` code in microseconds:
/// 4.096 us times 2 to the code; None for code 0 (no timeout). Codes above
/// 31 are taken as 31.
pub const fn ack_timeout_usec(code: u8) -> Option<u64> {
    if code == 0 {
        return None;
    }
    let code = if code > 31 { 31 } else { code };
    Some((4096u64 << code) / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcode::{Operation, Position, Transport};

    #[test]
    fn counts_at_the_boundaries() {
        assert_eq!(packet_count(0, 1024), 1);
        assert_eq!(packet_count(1, 1024), 1);
        assert_eq!(packet_count(1024, 1024), 1);
        assert_eq!(packet_count(1025, 1024), 2);
        assert_eq!(packet_count(1 << 20, 1024), 1024);
        assert_eq!(packet_count(u32::MAX, 4096), 1 << 20);
        assert_eq!(packet_count(300, 0), 2);
    }

    #[test]
    fn slices_cover_the_message_exactly() {
        for &mtu in &[256u32, 1024, 4096] {
            for &len in &[0u32, 1, 255, 256, 257, 4095, 4096, 4097, 65536, 100_003] {
                let n = packet_count(len, mtu);
                let mut next = 0;
                for i in 0..n {
                    let (off, l) = slice(i, len, mtu);
                    assert_eq!(off, next);
                    if i + 1 < n {
                        assert_eq!(l, mtu);
                    } else {
                        assert!(l <= mtu);
                        assert!(len == 0 || l > 0);
                    }
                    next += l;
                }
                assert_eq!(next, len);
                assert_eq!(slice(n + 3, len, mtu), (len, 0));
            }
        }
    }

    fn pos(p: Position) -> u8 {
        match p {
            Position::First => 0,
            Position::Middle => 1,
            Position::Last => 2,
            Position::Only => 3,
        }
    }

    #[test]
    fn opcodes_agree_with_the_table() {
        let msgs = [
            Message::Send {
                imm: false,
                inv: false,
            },
            Message::Send {
                imm: true,
                inv: false,
            },
            Message::Send {
                imm: false,
                inv: true,
            },
            Message::Write { imm: false },
            Message::Write { imm: true },
        ];
        for uc in [false, true] {
            for msg in msgs {
                for count in 1..5u32 {
                    for i in 0..count {
                        let op = request_opcode(uc, msg, i, count);
                        if uc && matches!(msg, Message::Send { inv: true, .. }) {
                            assert_eq!(op, None);
                            continue;
                        }
                        let info = op.unwrap().info();
                        assert_eq!(pos(info.position), position(i, count));
                        assert_eq!(
                            info.transport,
                            if uc { Transport::Uc } else { Transport::Rc }
                        );
                        let (imm, inv, send) = match msg {
                            Message::Send { imm, inv } => (imm, inv, true),
                            Message::Write { imm } => (imm, false, false),
                        };
                        assert_eq!(
                            info.operation,
                            if send {
                                Operation::Send
                            } else {
                                Operation::RdmaWrite
                            }
                        );
                        let last = info.position.is_last();
                        assert_eq!(info.has_immediate(), imm && last);
                        assert_eq!(info.has_invalidate(), inv && last);
                    }
                }
            }
        }
        assert_eq!(
            request_opcode(
                false,
                Message::Send {
                    imm: true,
                    inv: true
                },
                0,
                1
            ),
            None
        );
    }

    #[test]
    fn read_responses() {
        assert_eq!(read_response_opcode(0, 1), Opcode::RcRdmaReadResponseOnly);
        assert_eq!(read_response_opcode(0, 3), Opcode::RcRdmaReadResponseFirst);
        assert_eq!(read_response_opcode(1, 3), Opcode::RcRdmaReadResponseMiddle);
        assert_eq!(read_response_opcode(2, 3), Opcode::RcRdmaReadResponseLast);
    }

    #[test]
    fn timeouts() {
        assert_eq!(ack_timeout_usec(0), None);
        assert_eq!(ack_timeout_usec(1), Some(8));
        assert_eq!(ack_timeout_usec(14), Some(67_108));
        assert_eq!(ack_timeout_usec(31), Some(8_796_093_022));
        assert_eq!(ack_timeout_usec(40), ack_timeout_usec(31));
    }
}
