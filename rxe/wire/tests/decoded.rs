// SPDX-License-Identifier: GPL-2.0

//! `decoded` (what a receiver reads of a header a sender writes, without
//! the bytes: `packet::assemble` uses it) against the codecs themselves:
//! for headers whose every field takes any value of its type, wider than
//! the wire holds, `parse(write(h))` is `h.decoded()`.

mod common;

use common::*;
use rxe_wire::headers::{Bth, ExtHeaders};
use rxe_wire::opcode::Opcode;

/// A BTH with every field arbitrary over its whole type.
fn wide_bth(rng: &mut Rng) -> Bth {
    Bth {
        opcode: rng.u8(),
        solicited: rng.bool(),
        migration: rng.bool(),
        pad: rng.u8(),
        tver: rng.u8(),
        pkey: rng.u16(),
        fecn: rng.bool(),
        becn: rng.bool(),
        resv6a: rng.u8(),
        dest_qpn: rng.u32(),
        ack_req: rng.bool(),
        resv7: rng.u8(),
        psn: rng.u32(),
    }
}

#[test]
fn bth_decoded_is_what_parse_reads() {
    let mut rng = Rng::new(0x6465_636f);
    for _ in 0..20_000 {
        let b = wide_bth(&mut rng);
        let mut bytes = [0u8; Bth::LEN];
        b.write(&mut bytes).unwrap();
        assert_eq!(Bth::parse(&bytes).unwrap(), b.decoded(), "{b:?}");
    }
}

#[test]
fn ext_decoded_is_what_parse_reads() {
    let mut rng = Rng::new(0x6578_7468);
    for _ in 0..20_000 {
        let op = *rng.pick(Opcode::ALL);
        let mut ext = sample_ext(op, &mut rng);
        widen_24_bit_fields(&mut ext, &mut rng);
        let mut bytes = [0u8; 64];
        let n = ext.write(&mut bytes).unwrap();
        let read = ExtHeaders::parse(op.info().headers, &bytes[..n]).unwrap();
        assert_eq!(read, ext.decoded(), "{op:?} {ext:?}");
    }
}
