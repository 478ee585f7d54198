// SPDX-License-Identifier: GPL-2.0

//! Every message, with its fields at their extremes, written and parsed
//! back to the same value; and every writer refusing a short buffer.

use rtrs_proto::conn::{ConnReq, ConnRsp};
use rtrs_proto::consts::*;
use rtrs_proto::imm::{Imm, IoReq, IoRsp};
use rtrs_proto::msg::{InfoReq, InfoRsp, RdmaMsg, RdmaRead, RdmaWrite, RkeyRsp, SgDesc};
use rtrs_proto::rnbd::{AccessMode, Close, Io, Open, OpenRsp, RnbdMsg, SessInfo, SessInfoRsp};
use rtrs_proto::Error;

/// Writes with `write`, parses with `parse`, compares; and checks that
/// one byte less of output fails.
macro_rules! round_trip {
    ($m:expr, $parse:expr) => {{
        let m = $m;
        let mut out = vec![0u8; 2 * 1024 * 1024];
        let n = m.write(&mut out).unwrap();
        assert_eq!($parse(&out[..n]).unwrap(), m);
        assert!(matches!(
            m.write(&mut out[..n - 1]),
            Err(Error::TooShort { .. })
        ));
        assert!(matches!($parse(&out[..n - 1]), Err(Error::TooShort { .. })));
        n
    }};
}

#[test]
fn conn_messages() {
    for (v, b) in [(0u16, false), (u16::MAX, true), (0x1234, true)] {
        let u = [v as u8; 16];
        let r = ConnReq::new(v, v, v, u, [!(v as u8); 16], b);
        assert_eq!(round_trip!(r, ConnReq::parse), 56);
        let w = ConnReq {
            version: 0x02ff,
            ..r
        };
        round_trip!(w, ConnReq::parse);
    }
    for errno in [i16::MIN, -4095, -1, 0, 1, i16::MAX] {
        round_trip!(ConnRsp::reject(errno), ConnRsp::parse);
    }
    for x in [0u32, 1, u32::MAX] {
        let r = ConnRsp::accept(x as u16, x, x, x);
        assert_eq!(round_trip!(r, ConnRsp::parse), 56);
    }
}

#[test]
fn admin_messages() {
    for name in [&b""[..], b"a", b"sess-1_x", &[b'z'; 254]] {
        let m = InfoReq::new(name).unwrap();
        assert_eq!(round_trip!(m, InfoReq::parse), 272);
        assert_eq!(m.name(), name);
    }
    let many: Vec<SgDesc> = (0..65535u32)
        .map(|i| SgDesc {
            addr: u64::from(i) << 32 | u64::from(!i),
            key: i,
            len: !i,
        })
        .collect();
    for n in [0, 1, 2, 512, 65535] {
        let m = InfoRsp::new(&many[..n]).unwrap();
        assert_eq!(round_trip!(m, InfoRsp::parse), 8 + 16 * n);
    }
    let mut too_many = many.clone();
    too_many.push(SgDesc::default());
    assert_eq!(
        InfoRsp::new(&too_many),
        Err(Error::TooManySg {
            count: 65536,
            max: 65535
        })
    );
    for (buf_id, rkey) in [(0, 0), (u16::MAX, u32::MAX), (511, 0xdead_beef)] {
        assert_eq!(round_trip!(RkeyRsp { buf_id, rkey }, RkeyRsp::parse), 8);
    }
    for d in [
        SgDesc::default(),
        SgDesc {
            addr: u64::MAX,
            key: u32::MAX,
            len: u32::MAX,
        },
    ] {
        assert_eq!(round_trip!(d, SgDesc::parse), 16);
    }
}

#[test]
fn io_messages() {
    let d = [SgDesc {
        addr: u64::MAX,
        key: 1,
        len: 131072,
    }];
    for usr_len in [0, 1, u16::MAX] {
        let w = RdmaWrite { usr_len };
        assert_eq!(round_trip!(w, RdmaWrite::parse), 4);
        assert_eq!(round_trip!(RdmaMsg::Write(w), RdmaMsg::parse), 4);
        for flags in [0, RTRS_MSG_NEED_INVAL_F, u16::MAX] {
            for descs in [&d[..0], &d[..]] {
                let r = RdmaRead::new(usr_len, flags, descs).unwrap();
                let n = round_trip!(r, RdmaRead::parse);
                assert_eq!(n, 8 + 16 * descs.len());
                assert_eq!(round_trip!(RdmaMsg::Read(r), RdmaMsg::parse), n);
                assert_eq!(r.need_inval(), flags & 1 != 0);
            }
        }
    }
}

#[test]
fn immediates() {
    for mem_bits in 12..=28 {
        let ids = 1u32 << (28 - mem_bits);
        for (buf_id, off) in [(0, 0), (ids - 1, (1 << mem_bits) - 1), (ids / 2, 1)] {
            let r = IoReq { buf_id, off };
            let imm = r.to_imm(mem_bits).unwrap();
            let Ok(Imm::IoReq(p)) = Imm::parse(imm) else {
                panic!("{imm:#x}")
            };
            assert_eq!(IoReq::from_payload(p, mem_bits), r);
        }
        // One past each field's width.
        assert_eq!(
            IoReq {
                buf_id: ids,
                off: 0
            }
            .payload(mem_bits),
            Err(Error::TooWide {
                field: "buf_id",
                bits: 28 - mem_bits
            })
        );
        assert_eq!(
            IoReq {
                buf_id: 0,
                off: 1 << mem_bits
            }
            .payload(mem_bits),
            Err(Error::TooWide {
                field: "off",
                bits: mem_bits
            })
        );
    }
    for msg_id in [0, 1, 0x7ffff] {
        for errno in [0, -1, -5, -16, -104, -511] {
            for w_inval in [false, true] {
                let r = IoRsp {
                    msg_id,
                    errno,
                    w_inval,
                };
                assert_eq!(Imm::parse(r.to_imm().unwrap()), Ok(Imm::IoRsp(r)));
            }
        }
    }
    assert!(IoRsp {
        msg_id: 0x80000,
        errno: 0,
        w_inval: false
    }
    .to_imm()
    .is_err());
    assert!(IoRsp {
        msg_id: 0,
        errno: -512,
        w_inval: false
    }
    .to_imm()
    .is_err());
    assert_eq!(
        Imm::IoReq(1 << 28).to_u32(),
        Err(Error::TooWide {
            field: "payload",
            bits: 28
        })
    );
    for t in [3u32, 4, 5, 6, 7, 10, 11, 15] {
        assert_eq!(Imm::parse(t << 28 | 5), Err(Error::BadImmType(t)));
    }
    assert_eq!(RTRS_LAST_IMM, 10);
}

#[test]
fn rnbd_messages() {
    for ver in [0, 1, 2, 255] {
        assert_eq!(round_trip!(SessInfo { ver }, SessInfo::parse), 36);
        assert_eq!(round_trip!(SessInfoRsp { ver }, SessInfoRsp::parse), 36);
        let m = RnbdMsg::SessInfo(SessInfo { ver });
        round_trip!(m, RnbdMsg::parse);
    }
    for mode in [AccessMode::Ro, AccessMode::Rw, AccessMode::Migration] {
        for name in [&b""[..], b"/dev/nullb0", &[b'q'; 254]] {
            let m = Open::new(mode, name).unwrap();
            assert_eq!(round_trip!(m, Open::parse), 264);
            assert_eq!(m.dev_name(), name);
            round_trip!(RnbdMsg::Open(m), RnbdMsg::parse);
        }
    }
    assert_eq!(Open::new(AccessMode::Ro, &[b'q'; 255]), Err(Error::BadName));
    assert_eq!(Open::new(AccessMode::Ro, b"a\0b"), Err(Error::BadName));
    for id in [0, u32::MAX] {
        assert_eq!(round_trip!(Close { device_id: id }, Close::parse), 8);
    }
    let full = OpenRsp {
        device_id: u32::MAX,
        nsectors: u64::MAX,
        max_hw_sectors: u32::MAX,
        max_write_zeroes_sectors: u32::MAX,
        max_discard_sectors: u32::MAX,
        discard_granularity: u32::MAX,
        discard_alignment: u32::MAX,
        physical_block_size: u16::MAX,
        logical_block_size: u16::MAX,
        max_segments: u16::MAX,
        secure_discard: u16::MAX,
        obsolete_rotational: u8::MAX,
        cache_policy: u8::MAX,
    };
    for m in [OpenRsp::default(), full] {
        assert_eq!(round_trip!(m, OpenRsp::parse), 56);
        round_trip!(RnbdMsg::OpenRsp(m), RnbdMsg::parse);
    }
    let io = Io {
        device_id: u32::MAX,
        sector: u64::MAX,
        rw: u32::MAX,
        bi_size: u32::MAX,
        prio: u16::MAX,
    };
    for m in [Io::default(), io] {
        assert_eq!(m.write(&mut [0u8; 32]), Ok(32));
        let mut out = [0u8; 32];
        m.write(&mut out).unwrap();
        assert_eq!(Io::parse(&out), Ok(m));
        assert_eq!(RnbdMsg::parse(&out), Ok(RnbdMsg::Io(m)));
        assert!(Io::parse(&out[..23]).is_err());
    }
    assert_eq!(RnbdMsg::parse(&[6, 0, 0, 0]), Err(Error::BadType(6)));
}
