// SPDX-License-Identifier: GPL-2.0

//! Byte images of the RTRS and RNBD messages, written by hand from the C
//! structure definitions of Linux 6.12 (drivers/infiniband/ulp/rtrs/
//! rtrs-pri.h, drivers/block/rnbd/rnbd-proto.h): every field at its
//! natural offset, little-endian (`__le16`, `__le32`, `__le64`), arrays
//! of `u8` as they are, tail padding from the structure's alignment.
//!
//! Each test builds a message with distinct byte values in every field,
//! checks the written bytes one by one against the image, and parses the
//! image back to the same message.

use rtrs_proto::conn::{ConnReq, ConnRsp, CONN_REQ_LEN, CONN_REQ_OFFSET_IP, CONN_RSP_LEN};
use rtrs_proto::consts::*;
use rtrs_proto::imm::{to_imm, Imm, IoReq, IoRsp};
use rtrs_proto::msg::{
    InfoReq, InfoRsp, RdmaMsg, RdmaRead, RdmaWrite, RkeyRsp, SgDesc, INFO_REQ_LEN,
    RDMA_READ_HDR_LEN, RDMA_WRITE_LEN, RKEY_RSP_LEN,
};
use rtrs_proto::rnbd::{self, AccessMode, Close, Io, Open, OpenRsp, SessInfo, SessInfoRsp};

/// `write` into a buffer of 0xee bytes larger than the message; checks
/// the returned length, the image, and that nothing after it was touched.
fn check_image(write: impl Fn(&mut [u8]) -> Result<usize, rtrs_proto::Error>, want: &[u8]) {
    let mut out = [0xeeu8; 400];
    let n = write(&mut out).unwrap();
    assert_eq!(n, want.len());
    for (i, (g, w)) in out.iter().zip(want).enumerate() {
        assert_eq!(g, w, "byte {i}: got {g:#04x}, want {w:#04x}");
    }
    assert!(
        out[n..].iter().all(|b| *b == 0xee),
        "wrote past the message"
    );
}

const SESS_UUID: [u8; 16] = [
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
];
const PATHS_UUID: [u8; 16] = [
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
];

#[rustfmt::skip]
const CONN_REQ_IMAGE: [u8; 56] = [
    0x00,                   // __cma_version
    0x00,                   // __ip_version
    0xbd, 0x1b,             // magic 0x1bbd
    0x00, 0x02,             // version 2.0
    0x02, 0x01,             // cid 0x0102
    0x04, 0x03,             // cid_num 0x0304
    0x06, 0x05,             // recon_cnt 0x0506
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, // sess_uuid
    0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, // paths_uuid
    0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
    0x01,                   // first_conn : 1, reserved_bits : 7
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved[11]
];

fn conn_req() -> ConnReq {
    ConnReq::new(0x0102, 0x0304, 0x0506, SESS_UUID, PATHS_UUID, true)
}

#[test]
fn conn_req_image() {
    assert_eq!(CONN_REQ_LEN, 56);
    check_image(|o| conn_req().write(o), &CONN_REQ_IMAGE);
    assert_eq!(ConnReq::parse(&CONN_REQ_IMAGE), Ok(conn_req()));
}

#[test]
fn conn_req_ignores_what_the_server_ignores() {
    let mut b = CONN_REQ_IMAGE;
    b[0] = 0xff;
    b[1] = 0x40;
    b[44] = 0xff; // reserved_bits set, first_conn still bit 0
    b[45..].fill(0xff);
    assert_eq!(ConnReq::parse(&b), Ok(conn_req()));
    b[44] = 0xfe;
    assert!(!ConnReq::parse(&b).unwrap().first_conn);
}

#[test]
fn conn_req_follows_the_rdma_cm_header_in_a_req() {
    use rdma_spec::cm_msg::{CmaHeader, CMA_HDR_LEN, REQ_PRIVATE_DATA_LEN};
    assert_eq!(CONN_REQ_OFFSET_IP, CMA_HDR_LEN);
    // conn_req fills the rest of the REQ's private data exactly.
    assert_eq!(CMA_HDR_LEN + CONN_REQ_LEN, REQ_PRIVATE_DATA_LEN);
    let mut pd = [0u8; REQ_PRIVATE_DATA_LEN];
    let hdr = CmaHeader::ipv4(0xc000, [10, 0, 0, 1], [10, 0, 0, 2]);
    hdr.write(&mut pd).unwrap();
    conn_req().write(&mut pd[CONN_REQ_OFFSET_IP..]).unwrap();
    assert_eq!(CmaHeader::parse(&pd), Ok(hdr));
    assert_eq!(&pd[CONN_REQ_OFFSET_IP..], &CONN_REQ_IMAGE);
    assert_eq!(ConnReq::parse(&pd[CONN_REQ_OFFSET_IP..]), Ok(conn_req()));
}

#[rustfmt::skip]
const CONN_RSP_IMAGE: [u8; 56] = [
    0xbd, 0x1b,             // magic
    0x00, 0x02,             // version 2.0
    0x00, 0x00,             // errno 0
    0x00, 0x02,             // queue_depth 512
    0x00, 0xf0, 0x01, 0x00, // max_io_size 128 KiB - 4 KiB = 0x1f000
    0x00, 0x10, 0x00, 0x00, // max_hdr_size 4096
    0x02, 0x00, 0x00, 0x00, // flags RTRS_MSG_NEW_RKEY_F
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved[36]
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

#[test]
fn conn_rsp_image() {
    assert_eq!(CONN_RSP_LEN, 56);
    let rsp = ConnRsp::accept(
        DEFAULT_SESS_QUEUE_DEPTH as u16,
        DEFAULT_MAX_CHUNK_SIZE - MAX_HDR_SIZE,
        MAX_HDR_SIZE,
        RTRS_MSG_NEW_RKEY_F,
    );
    check_image(|o| rsp.write(o), &CONN_RSP_IMAGE);
    assert_eq!(ConnRsp::parse(&CONN_RSP_IMAGE), Ok(rsp));
    assert_eq!(rsp.chunk_size(), Some(DEFAULT_MAX_CHUNK_SIZE));
}

#[test]
fn conn_rsp_reject_image() {
    // rtrs_rdma_do_reject(cm_id, -ECONNRESET): -104 as a __le16.
    let mut want = [0u8; 56];
    want[..6].copy_from_slice(&[0xbd, 0x1b, 0x00, 0x02, 0x98, 0xff]);
    check_image(|o| ConnRsp::reject(-104).write(o), &want);
    assert_eq!(ConnRsp::parse(&want).unwrap().errno, -104);
    // The client reads a rejection's errno without looking at the magic.
    want[0] = 0;
    assert_eq!(ConnRsp::reject_errno(&want), Ok(-104));
    assert_eq!(
        ConnRsp::reject_errno(&want[..55]).unwrap_err(),
        rtrs_proto::Error::TooShort {
            needed: 56,
            got: 55
        }
    );
}

#[test]
fn version_and_magic_checks() {
    use rtrs_proto::Error;
    let mut req = CONN_REQ_IMAGE;
    let mut rsp = CONN_RSP_IMAGE;
    // Other minors are accepted, as the C checks only `version >> 8`.
    for minor in [0x01u8, 0x7f, 0xff] {
        req[4] = minor;
        rsp[2] = minor;
        let r = ConnReq::parse(&req).unwrap();
        assert_eq!(version_major(r.version), 2);
        assert_eq!(version_minor(r.version), minor);
        assert_eq!(
            ConnRsp::parse(&rsp).unwrap().version,
            0x0200 | u16::from(minor)
        );
    }
    for major in [0x00u8, 0x01, 0x03, 0xff] {
        req[5] = major;
        rsp[3] = major;
        let v = u16::from(major) << 8 | 0xff;
        assert_eq!(ConnReq::parse(&req), Err(Error::BadVersion(v)));
        assert_eq!(ConnRsp::parse(&rsp), Err(Error::BadVersion(v)));
    }
    req[5] = 2;
    rsp[3] = 2;
    req[2] = 0xbe;
    rsp[1] = 0x1c;
    assert_eq!(ConnReq::parse(&req), Err(Error::BadMagic(0x1bbe)));
    assert_eq!(ConnRsp::parse(&rsp), Err(Error::BadMagic(0x1cbd)));
    // The magic is checked before the version.
    req[5] = 9;
    assert_eq!(ConnReq::parse(&req), Err(Error::BadMagic(0x1bbe)));
    for n in 0..56 {
        assert_eq!(
            ConnReq::parse(&CONN_REQ_IMAGE[..n]),
            Err(Error::TooShort { needed: 56, got: n })
        );
        assert_eq!(
            ConnRsp::parse(&CONN_RSP_IMAGE[..n]),
            Err(Error::TooShort { needed: 56, got: n })
        );
    }
}

#[test]
fn info_req_image() {
    let mut want = [0u8; INFO_REQ_LEN];
    want[0] = 0x00; // type RTRS_MSG_INFO_REQ, __le16
    want[2..2 + 9].copy_from_slice(b"rnbd-sess"); // pathname[NAME_MAX], NUL-padded
    assert_eq!(INFO_REQ_LEN, 2 + NAME_MAX + 15);
    let m = InfoReq::new(b"rnbd-sess").unwrap();
    check_image(|o| m.write(o), &want);
    assert_eq!(InfoReq::parse(&want), Ok(m));
    assert_eq!(m.name(), b"rnbd-sess");
    // Reserved bytes and bytes after the NUL are ignored.
    want[257..].fill(0xff);
    want[20] = b'x';
    assert_eq!(InfoReq::parse(&want), Ok(m));
    want[0] = 1;
    assert_eq!(InfoReq::parse(&want), Err(rtrs_proto::Error::BadType(1)));
    assert_eq!(
        InfoReq::parse(&want[..271]),
        Err(rtrs_proto::Error::TooShort {
            needed: 272,
            got: 271
        })
    );
}

const DESCS: [SgDesc; 2] = [
    SgDesc {
        addr: 0x1122_3344_5566_7788,
        key: 0xaabb_ccdd,
        len: 0x0002_0000,
    },
    SgDesc {
        addr: 0x0000_7f00_0010_0000,
        key: 0x0102_0304,
        len: 0x0004_0000,
    },
];

#[rustfmt::skip]
const INFO_RSP_IMAGE: [u8; 8 + 2 * 16] = [
    0x01, 0x00,             // type RTRS_MSG_INFO_RSP
    0x02, 0x00,             // sg_cnt 2
    0x00, 0x00, 0x00, 0x00, // reserved[4]
    // desc[0]: __le64 addr, __le32 key, __le32 len
    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
    0xdd, 0xcc, 0xbb, 0xaa,
    0x00, 0x00, 0x02, 0x00,
    // desc[1]
    0x00, 0x00, 0x10, 0x00, 0x00, 0x7f, 0x00, 0x00,
    0x04, 0x03, 0x02, 0x01,
    0x00, 0x00, 0x04, 0x00,
];

#[test]
fn info_rsp_image() {
    let m = InfoRsp::new(&DESCS).unwrap();
    assert_eq!(m.len(), INFO_RSP_IMAGE.len());
    check_image(|o| m.write(o), &INFO_RSP_IMAGE);
    let p = InfoRsp::parse(&INFO_RSP_IMAGE).unwrap();
    assert_eq!(p, m);
    assert_eq!(p.descs().iter().collect::<Vec<_>>(), DESCS);
    // Reserved bytes ignored; bytes after the descriptors ignored.
    let mut b = INFO_RSP_IMAGE.to_vec();
    b[4..8].fill(0xff);
    b.extend_from_slice(&[0xff; 16]);
    assert_eq!(InfoRsp::parse(&b), Ok(m));
}

#[test]
fn info_rsp_count_beyond_the_buffer() {
    use rtrs_proto::Error;
    let mut b = INFO_RSP_IMAGE;
    b[2] = 3;
    assert_eq!(
        InfoRsp::parse(&b),
        Err(Error::TooShort {
            needed: 56,
            got: 40
        })
    );
    b[2] = 0xff;
    b[3] = 0xff;
    assert_eq!(
        InfoRsp::parse(&b),
        Err(Error::TooShort {
            needed: 8 + 65535 * 16,
            got: 40
        })
    );
    for n in 0..INFO_RSP_IMAGE.len() {
        assert!(matches!(
            InfoRsp::parse(&INFO_RSP_IMAGE[..n]),
            Err(Error::TooShort { .. })
        ));
    }
    b[0] = 4;
    assert_eq!(InfoRsp::parse(&b), Err(Error::BadType(4)));
}

#[test]
fn rkey_rsp_image() {
    let want = [0x04, 0x00, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12];
    assert_eq!(RKEY_RSP_LEN, 8);
    let m = RkeyRsp {
        buf_id: 0x1234,
        rkey: 0x1234_5678,
    };
    check_image(|o| m.write(o), &want);
    assert_eq!(RkeyRsp::parse(&want), Ok(m));
    assert!(RkeyRsp::parse(&want[..7]).is_err());
}

#[test]
fn rdma_write_image() {
    let want = [0x02, 0x00, 0x30, 0x01];
    assert_eq!(RDMA_WRITE_LEN, 4);
    let m = RdmaWrite { usr_len: 0x0130 };
    check_image(|o| m.write(o), &want);
    assert_eq!(RdmaWrite::parse(&want), Ok(m));
    assert_eq!(RdmaMsg::parse(&want), Ok(RdmaMsg::Write(m)));
}

#[test]
fn rdma_read_image() {
    use rtrs_proto::Error;
    #[rustfmt::skip]
    let want = [
        0x03, 0x00,             // type RTRS_MSG_READ
        0x20, 0x00,             // usr_len 32
        0x01, 0x00,             // flags RTRS_MSG_NEED_INVAL_F
        0x01, 0x00,             // sg_cnt 1
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
        0xdd, 0xcc, 0xbb, 0xaa,
        0x00, 0x00, 0x02, 0x00,
    ];
    assert_eq!(RDMA_READ_HDR_LEN, 8);
    let m = RdmaRead::new(32, RTRS_MSG_NEED_INVAL_F, &DESCS[..1]).unwrap();
    check_image(|o| m.write(o), &want);
    assert_eq!(RdmaRead::parse(&want), Ok(m));
    assert_eq!(RdmaMsg::parse(&want), Ok(RdmaMsg::Read(m)));
    // Without data: no descriptor, no flag (the C client's `else` branch).
    let empty = RdmaRead::new(32, 0, &[]).unwrap();
    check_image(|o| empty.write(o), &[3, 0, 0x20, 0, 0, 0, 0, 0]);
    // More than one descriptor: refused, however long the buffer.
    let mut two = [0u8; 40];
    two[..8].copy_from_slice(&[3, 0, 0x20, 0, 1, 0, 2, 0]);
    assert_eq!(
        RdmaRead::parse(&two),
        Err(Error::TooManySg { count: 2, max: 1 })
    );
    two[6..8].copy_from_slice(&[0xff, 0xff]);
    assert_eq!(
        RdmaRead::parse(&two),
        Err(Error::TooManySg {
            count: 65535,
            max: 1
        })
    );
    assert_eq!(
        RdmaRead::new(0, 0, &DESCS),
        Err(Error::TooManySg { count: 2, max: 1 })
    );
    // One announced, none there.
    assert_eq!(
        RdmaRead::parse(&want[..23]),
        Err(Error::TooShort {
            needed: 24,
            got: 23
        })
    );
    assert_eq!(RdmaMsg::parse(&[4, 0, 0, 0]), Err(Error::BadType(4)));
    assert_eq!(
        RdmaMsg::parse(&[3]),
        Err(Error::TooShort { needed: 2, got: 1 })
    );
}

#[test]
fn immediate_values() {
    // The default session: 512 chunks, so mem_bits = 28 - 9 = 19.
    let mem_bits = rtrs_proto::imm::mem_bits(512).unwrap();
    assert_eq!(mem_bits, 19);
    let req = IoReq {
        buf_id: 5,
        off: 0x1234,
    };
    // type 0 in bits 31-28, 5 << 19 = 0x280000, plus the offset.
    assert_eq!(req.to_imm(mem_bits), Ok(0x0028_1234));
    // IO_RSP, msg_id 5, -EIO (5): 5 << 19 | 5, type 1.
    let rsp = IoRsp {
        msg_id: 5,
        errno: -5,
        w_inval: false,
    };
    assert_eq!(rsp.to_imm(), Ok(0x1028_0005));
    let inv = IoRsp {
        w_inval: true,
        ..rsp
    };
    assert_eq!(inv.to_imm(), Ok(0x2028_0005));
    assert_eq!(Imm::HbMsg.to_u32(), Ok(0x8000_0000));
    assert_eq!(Imm::HbAck.to_u32(), Ok(0x9000_0000));
    assert_eq!(Imm::parse(0x1028_0005), Ok(Imm::IoRsp(rsp)));
    assert_eq!(Imm::parse(0x2028_0005), Ok(Imm::IoRsp(inv)));
    assert_eq!(Imm::parse(0x0028_1234), Ok(Imm::IoReq(0x28_1234)));
    assert_eq!(Imm::parse(0x8000_0000), Ok(Imm::HbMsg));
    assert_eq!(Imm::parse(0x9fff_ffff), Ok(Imm::HbAck));
    assert_eq!(to_imm(RTRS_HB_ACK_IMM, 0), 0x9000_0000);
    // The positive errno of a careless caller travels as its magnitude.
    assert_eq!(IoRsp { errno: 5, ..rsp }.to_imm(), Ok(0x1028_0005));
    // Max fields: errno 511, msg_id 2^19 - 1.
    let max = IoRsp {
        msg_id: 0x7ffff,
        errno: -511,
        w_inval: false,
    };
    assert_eq!(max.to_imm(), Ok(0x1fff_ffff));
    assert_eq!(Imm::parse(0x1fff_ffff), Ok(Imm::IoRsp(max)));
}

#[rustfmt::skip]
const RNBD_IO_IMAGE: [u8; 32] = [
    0x04, 0x00,             // hdr.type RNBD_MSG_IO
    0x00, 0x00,             // hdr.__padding
    0x07, 0x00, 0x00, 0x00, // device_id 7
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // sector
    0x01, 0x03, 0x00, 0x00, // rw: WRITE | SYNC | FUA
    0x00, 0x10, 0x00, 0x00, // bi_size 4096
    0x04, 0x40,             // prio 0x4004
    0, 0, 0, 0, 0, 0,       // tail padding to 8-byte alignment
];

#[test]
fn rnbd_images() {
    let io = Io {
        device_id: 7,
        sector: 0x0102_0304_0506_0708,
        rw: rnbd::RNBD_OP_WRITE | rnbd::RNBD_F_SYNC | rnbd::RNBD_F_FUA,
        bi_size: 4096,
        prio: 0x4004,
    };
    check_image(|o| io.write(o), &RNBD_IO_IMAGE);
    assert_eq!(Io::parse(&RNBD_IO_IMAGE), Ok(io));
    assert_eq!(io.op(), rnbd::RNBD_OP_WRITE);
    assert_eq!(io.flags(), rnbd::RNBD_F_SYNC | rnbd::RNBD_F_FUA);
    // A protocol 1 IO (24 bytes) has no prio.
    assert_eq!(Io::parse(&RNBD_IO_IMAGE[..24]), Ok(Io { prio: 0, ..io }));
    assert!(Io::parse(&RNBD_IO_IMAGE[..23]).is_err());

    #[rustfmt::skip]
    let open_rsp_image: [u8; 56] = [
        0x03, 0x00, 0x00, 0x00, // hdr RNBD_MSG_OPEN_RSP
        0x07, 0x00, 0x00, 0x00, // device_id
        0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, // nsectors 1 Mi
        0x00, 0x01, 0x00, 0x00, // max_hw_sectors 256
        0x00, 0x02, 0x00, 0x00, // max_write_zeroes_sectors 512
        0x00, 0x04, 0x00, 0x00, // max_discard_sectors 1024
        0x00, 0x10, 0x00, 0x00, // discard_granularity 4096
        0x00, 0x00, 0x00, 0x00, // discard_alignment 0
        0x00, 0x10,             // physical_block_size 4096
        0x00, 0x02,             // logical_block_size 512
        0x80, 0x00,             // max_segments 128
        0x01, 0x00,             // secure_discard
        0x00,                   // obsolete_rotational
        0x03,                   // cache_policy WRITEBACK | FUA
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved[10]
    ];
    let rsp = OpenRsp {
        device_id: 7,
        nsectors: 1 << 20,
        max_hw_sectors: 256,
        max_write_zeroes_sectors: 512,
        max_discard_sectors: 1024,
        discard_granularity: 4096,
        discard_alignment: 0,
        physical_block_size: 4096,
        logical_block_size: 512,
        max_segments: 128,
        secure_discard: 1,
        obsolete_rotational: 0,
        cache_policy: rnbd::RNBD_WRITEBACK | rnbd::RNBD_FUA,
    };
    check_image(|o| rsp.write(o), &open_rsp_image);
    assert_eq!(OpenRsp::parse(&open_rsp_image), Ok(rsp));

    let mut open_image = [0u8; 264];
    open_image[0] = 0x02; // RNBD_MSG_OPEN
    open_image[4] = 0x01; // access_mode RW
    open_image[6..6 + 6].copy_from_slice(b"nullb0"); // dev_name at 6
    let open = Open::new(AccessMode::Rw, b"nullb0").unwrap();
    check_image(|o| open.write(o), &open_image);
    assert_eq!(Open::parse(&open_image), Ok(open));
    open_image[4] = 3;
    assert!(Open::parse(&open_image).is_err());

    let mut sess_info_image = [0u8; 36];
    sess_info_image[4] = 2;
    check_image(|o| SessInfo { ver: 2 }.write(o), &sess_info_image);
    assert_eq!(SessInfo::parse(&sess_info_image), Ok(SessInfo { ver: 2 }));
    sess_info_image[0] = 1;
    check_image(|o| SessInfoRsp { ver: 2 }.write(o), &sess_info_image);
    assert_eq!(
        SessInfoRsp::parse(&sess_info_image),
        Ok(SessInfoRsp { ver: 2 })
    );

    let close_image = [0x05, 0x00, 0x00, 0x00, 0x44, 0x33, 0x22, 0x11];
    check_image(
        |o| {
            Close {
                device_id: 0x1122_3344,
            }
            .write(o)
        },
        &close_image,
    );
    assert_eq!(
        rnbd::RnbdMsg::parse(&close_image),
        Ok(rnbd::RnbdMsg::Close(Close {
            device_id: 0x1122_3344
        }))
    );
}
