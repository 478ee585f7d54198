// SPDX-License-Identifier: GPL-2.0

//! Packets sent by the Linux 6.12 kernel's own `rdma_rxe`, captured in the
//! QEMU test guest by `selftests/rxe/c_capture.sh` (the C device on
//! 10.79.0.1 sends to 10.79.0.2, driven by `ibv_ud_pingpong` and
//! `ibv_rc_pingpong` with 64-byte messages; `pktcap` prints the IP
//! datagrams). Each must parse with our codec (the ICRC is checked), say
//! what the tools sent, and build again from its parsed headers and
//! payload to the very same bytes: our builder and the C stack agree on
//! every header field, the pad, the IP checksum and the ICRC.

use rxe_wire::icrc::crc32_le;
use rxe_wire::opcode::Opcode;
use rxe_wire::packet::{build, parse, IpHeader};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// UD SEND ONLY from QP 0x11 to QP 0x11, Q_Key 0x11111111, PSN 0xf28c3e,
/// 64 bytes of 0x7b.
const C_UD_SEND: &str = "45000074a4dd4000401180fb0a4f00010a4f0002df9412b7006000006400ffff0000001100f28c3e11111111000000117b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b07ad88d6";

/// RC SEND ONLY to QP 0x11 with the ACK request bit, PSN 0xedb9bb, 64
/// bytes of 0x7b.
const C_RC_SEND: &str = "4500006ca683400040117f5d0a4f00010a4f0002c13212b7005800000400ffff0000001180edb9bb7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b6989ae30";

fn check(frame: &[u8], opcode: Opcode, psn: u32, ack_req: bool) {
    let pkt = parse(frame, 4096, &crc32_le).expect("the C stack's packet parses");
    assert_eq!(pkt.opcode, opcode);
    assert_eq!(pkt.dest_qpn(), 0x11);
    assert_eq!(pkt.psn(), psn);
    assert_eq!(pkt.headers.bth.ack_req, ack_req);
    assert_eq!(pkt.headers.bth.pkey, 0xffff);
    assert_eq!(pkt.headers.udp.checksum, 0);
    assert_eq!(pkt.payload, &[0x7b; 64][..]);
    match pkt.headers.ip {
        IpHeader::V4(ip) => {
            assert_eq!(ip.src, [10, 79, 0, 1]);
            assert_eq!(ip.dst, [10, 79, 0, 2]);
            assert!(ip.dont_fragment);
        }
        IpHeader::V6(_) => panic!("an IPv4 packet"),
    }
    let mut out = vec![0u8; frame.len() + 64];
    let n = build(&pkt.headers, pkt.payload, &crc32_le, &mut out).expect("builds");
    assert_eq!(&out[..n], frame, "rebuilt byte for byte");
}

#[test]
fn ud_send_only_from_the_c_stack() {
    let frame = hex(C_UD_SEND);
    check(&frame, Opcode::UdSendOnly, 0xf2_8c3e, false);
    let pkt = parse(&frame, 4096, &crc32_le).unwrap();
    let deth = pkt.headers.ext.deth.unwrap();
    assert_eq!(deth.qkey, 0x1111_1111);
    assert_eq!(deth.src_qpn, 0x11);
}

#[test]
fn rc_send_only_from_the_c_stack() {
    check(&hex(C_RC_SEND), Opcode::RcSendOnly, 0xed_b9bb, true);
}

#[test]
fn a_flipped_payload_bit_breaks_the_c_stacks_icrc() {
    let mut frame = hex(C_RC_SEND);
    let at = frame.len() - 10;
    frame[at] ^= 1;
    assert!(parse(&frame, 4096, &crc32_le).is_err());
}
