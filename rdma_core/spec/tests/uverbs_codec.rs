// SPDX-License-Identifier: GPL-2.0

//! The uverbs `write()` codec: round-trips of every structure, the
//! framing of well-formed commands as libibverbs 44 writes them, each
//! hostile framing a user program can write (with the errno it gets), and
//! a deterministic fuzz loop over random and mutated buffers.

use rdma_spec::uverbs::cmd::{self, lookup, Cmd, FLAG_EXTENDED};
use rdma_spec::uverbs::cq::*;
use rdma_spec::uverbs::device::*;
use rdma_spec::uverbs::event::*;
use rdma_spec::uverbs::framing::{
    declared_len, parse, CmdHdr, ExCmdHdr, Request, UserOut, EX_HDR_LEN, HDR_LEN, MAX_WRITE_LEN,
};
use rdma_spec::uverbs::pd_mr::*;
use rdma_spec::uverbs::qp::*;
use rdma_spec::uverbs::rxe::*;
use rdma_spec::uverbs::srq_ah::*;
use rdma_spec::uverbs::{AbiError, Errno, Wire, WireStruct};

/// A small xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random bytes decode to a value that encodes back to the same bytes;
/// a short buffer is refused without a write.
fn round_trip<T: WireStruct + Default + PartialEq + core::fmt::Debug>(rng: &mut Rng) {
    for _ in 0..50 {
        let bytes = rng.bytes(T::SIZE);
        let v = T::decode(&bytes).expect("decodes");
        let mut out = vec![0u8; T::SIZE + 3];
        assert_eq!(v.encode(&mut out), Ok(T::SIZE), "{}", T::C_NAME);
        assert_eq!(&out[..T::SIZE], &bytes[..], "{}", T::C_NAME);
        assert_eq!(
            &out[T::SIZE..],
            &[0, 0, 0],
            "{} writes past its size",
            T::C_NAME
        );
        assert_eq!(T::decode(&out).as_ref(), Ok(&v));
    }
    let short = vec![0u8; T::SIZE - 1];
    assert_eq!(
        T::decode(&short),
        Err(AbiError::TooShort {
            needed: T::SIZE,
            got: T::SIZE - 1
        })
    );
    let mut short = vec![0xaau8; T::SIZE - 1];
    assert_eq!(
        T::default().encode(&mut short),
        Err(AbiError::OutputTooShort {
            needed: T::SIZE,
            got: T::SIZE - 1
        })
    );
    assert!(
        short.iter().all(|b| *b == 0xaa),
        "{}: nothing written",
        T::C_NAME
    );
}

macro_rules! round_trips {
    ($rng:expr; $($t:ty),* $(,)?) => { $( round_trip::<$t>($rng); )* };
}

#[test]
fn every_structure_round_trips() {
    let rng = &mut Rng(0x1234_5678_9abc_def1);
    round_trips!(rng;
        CmdHdr, ExCmdHdr,
        GetContext, GetContextResp, QueryDevice, QueryDeviceResp, ExQueryDevice, OdpCaps,
        RssCaps, TmCaps, CqModerationCaps, ExQueryDeviceResp, QueryPort, QueryPortResp,
        AllocPd, AllocPdResp, DeallocPd, RegMr, RegMrResp, DeregMr, AllocMw, AllocMwResp,
        DeallocMw,
        CreateCompChannel, CreateCompChannelResp, CreateCq, ExCreateCq, CreateCqResp,
        ExCreateCqResp, ResizeCq, ResizeCqResp, ReqNotifyCq, DestroyCq, DestroyCqResp, Wc,
        CreateQp, CreateQpResp, QpDest, QueryQp, QueryQpResp, ModifyQp, DestroyQp,
        DestroyQpResp, PostSend, PostSendResp, AttachMcast,
        CreateSrq, CreateSrqResp, ModifySrq, QuerySrq, QuerySrqResp, DestroySrq,
        DestroySrqResp, GlobalRoute, AhAttr, CreateAh, CreateAhResp, DestroyAh,
        CompEventDesc, AsyncEventDesc,
        Mminfo, RxeCreateCqResp, RxeResizeCqResp, RxeCreateQpResp, RxeCreateSrqResp,
        RxeModifySrqCmd, RxeCreateAhResp,
    );
}

#[test]
fn fields_land_at_their_c_offsets() {
    // A few structures written by hand, byte by byte (x86-64: little-endian).
    let e = AsyncEventDesc {
        element: 0x1122_3344_5566_7788,
        event_type: EVENT_SRQ_LIMIT_REACHED,
        reserved: 0,
    };
    let mut b = [0u8; 16];
    e.encode(&mut b).unwrap();
    assert_eq!(
        b,
        [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 15, 0, 0, 0, 0, 0, 0, 0]
    );
    let mut b = [0u8; 8];
    CompEventDesc { cq_handle: 7 }.encode(&mut b).unwrap();
    assert_eq!(b, [7, 0, 0, 0, 0, 0, 0, 0]);

    let cq = CreateCq {
        response: 0x1000,
        user_handle: 0xdead,
        cqe: 255,
        comp_vector: 1,
        comp_channel: -1,
        reserved: 0,
    };
    let mut b = [0u8; 32];
    cq.encode(&mut b).unwrap();
    assert_eq!(&b[0..8], &0x1000u64.to_le_bytes());
    assert_eq!(&b[8..16], &0xdeadu64.to_le_bytes());
    assert_eq!(&b[16..20], &255u32.to_le_bytes());
    assert_eq!(&b[20..24], &1u32.to_le_bytes());
    assert_eq!(&b[24..28], &[0xff; 4]);

    let mi = RxeCreateSrqResp {
        mi: Mminfo {
            offset: 0x4000,
            size: 0x2180,
            pad: 0,
        },
        srq_num: 9,
        reserved: 0,
    };
    let mut b = [0u8; 24];
    mi.encode(&mut b).unwrap();
    assert_eq!(&b[0..8], &0x4000u64.to_le_bytes());
    assert_eq!(&b[8..12], &0x2180u32.to_le_bytes());
    assert_eq!(&b[16..20], &9u32.to_le_bytes());

    let q = QueryPortResp {
        link_layer: 2,
        gid_tbl_len: 1024,
        ..Default::default()
    };
    let mut b = [0u8; 40];
    q.encode(&mut b).unwrap();
    assert_eq!(&b[16..20], &1024u32.to_le_bytes());
    assert_eq!(b[37], 2);
    // The GUID bytes go out as given (big-endian in C).
    let d = QueryDeviceResp {
        node_guid: [0x02, 0, 0, 0, 0, 0, 0, 0x01],
        ..Default::default()
    };
    let mut b = [0u8; 176];
    d.encode(&mut b).unwrap();
    assert_eq!(&b[8..16], &[0x02, 0, 0, 0, 0, 0, 0, 0x01]);
}

/// A legacy command: header, core request, driver input.
fn legacy(command: u32, core: &[u8], driver: &[u8], out_words: u16) -> Vec<u8> {
    let len = HDR_LEN + core.len() + driver.len();
    let mut b = vec![0u8; HDR_LEN];
    CmdHdr {
        command,
        in_words: (len / 4) as u16,
        out_words,
    }
    .encode(&mut b)
    .unwrap();
    b.extend_from_slice(core);
    b.extend_from_slice(driver);
    b
}

fn bytes_of<T: WireStruct>(v: &T) -> Vec<u8> {
    let mut b = vec![0u8; T::SIZE];
    v.encode(&mut b).unwrap();
    b
}

/// An extended command.
fn extended(
    number: u32,
    core: &[u8],
    driver: &[u8],
    response: u64,
    out_words: u16,
    provider_out_words: u16,
) -> Vec<u8> {
    let mut b = vec![0u8; HDR_LEN + EX_HDR_LEN];
    CmdHdr {
        command: number | FLAG_EXTENDED,
        in_words: (core.len() / 8) as u16,
        out_words,
    }
    .encode(&mut b)
    .unwrap();
    ExCmdHdr {
        response,
        provider_in_words: (driver.len() / 8) as u16,
        provider_out_words,
        cmd_hdr_reserved: 0,
    }
    .encode(&mut b[HDR_LEN..])
    .unwrap();
    b.extend_from_slice(core);
    b.extend_from_slice(driver);
    b
}

fn err(buf: &[u8]) -> AbiError {
    parse(buf).expect_err("rejected")
}

#[test]
fn create_cq_with_driver_data() {
    let req = CreateCq {
        response: 0x7f00_0000_1000,
        user_handle: 42,
        cqe: 100,
        comp_vector: 0,
        comp_channel: 3,
        reserved: 0,
    };
    // librxe: no driver input, an 16-byte mminfo back.
    let buf = legacy(cmd::CREATE_CQ, &bytes_of(&req), &[], ((8 + 16) / 4) as u16);
    assert_eq!(declared_len(&buf), Ok(buf.len()));
    let r = parse(&buf).unwrap();
    assert_eq!(r.spec.cmd, Cmd::CreateCq);
    assert_eq!(r.core::<CreateCq>(), Ok(req));
    assert!(r.driver_in.is_empty());
    assert_eq!(
        r.core_out,
        Some(UserOut {
            addr: 0x7f00_0000_1000,
            len: 8
        })
    );
    assert_eq!(
        r.driver_out,
        Some(UserOut {
            addr: 0x7f00_0000_1008,
            len: 16
        })
    );
    // With driver input: it is cut after the core request.
    let buf = legacy(
        cmd::CREATE_CQ,
        &bytes_of(&req),
        &[1, 2, 3, 4, 5, 6, 7, 8],
        6,
    );
    let r = parse(&buf).unwrap();
    assert_eq!(r.core_in.len(), CreateCq::SIZE);
    assert_eq!(r.driver_in, &[1, 2, 3, 4, 5, 6, 7, 8]);
    // No room for driver output: none.
    let buf = legacy(cmd::CREATE_CQ, &bytes_of(&req), &[], 2);
    assert_eq!(parse(&buf).unwrap().driver_out, None);
}

#[test]
fn commands_without_udata_or_response() {
    // QUERY_DEVICE: the whole response area is the core's.
    let buf = legacy(
        cmd::QUERY_DEVICE,
        &bytes_of(&QueryDevice { response: 0x5000 }),
        &[],
        50,
    );
    let r = parse(&buf).unwrap();
    assert_eq!(
        r.core_out,
        Some(UserOut {
            addr: 0x5000,
            len: 200
        })
    );
    assert_eq!(r.driver_out, None);
    // DEALLOC_PD, MODIFY_QP: no response address at all.
    let buf = legacy(
        cmd::DEALLOC_PD,
        &bytes_of(&DeallocPd { pd_handle: 3 }),
        &[],
        0,
    );
    let r = parse(&buf).unwrap();
    assert_eq!((r.core_out, r.driver_out), (None, None));
    assert_eq!(r.core::<DeallocPd>().unwrap().pd_handle, 3);
    let m = ModifyQp {
        qp_handle: 5,
        attr_mask: 1,
        qp_state: 1,
        ..Default::default()
    };
    let buf = legacy(cmd::MODIFY_QP, &bytes_of(&m), &[], 0);
    assert_eq!(parse(&buf).unwrap().core::<ModifyQp>(), Ok(m));
    // MODIFY_SRQ: driver input (rxe's mmap_info_addr), no output.
    let md = bytes_of(&RxeModifySrqCmd {
        mmap_info_addr: 0x9000,
    });
    let buf = legacy(cmd::MODIFY_SRQ, &bytes_of(&ModifySrq::default()), &md, 0);
    let r = parse(&buf).unwrap();
    assert_eq!(
        RxeModifySrqCmd::decode(r.driver_in).unwrap().mmap_info_addr,
        0x9000
    );
    assert_eq!(r.core_out, None);
    // POST_SEND as a doorbell.
    let ps = PostSend {
        response: 0x6000,
        qp_handle: 1,
        ..Default::default()
    };
    let buf = legacy(cmd::POST_SEND, &bytes_of(&ps), &[], 1);
    let r = parse(&buf).unwrap();
    assert_eq!(r.core::<PostSend>().unwrap().wr_count, 0);
    assert_eq!(
        r.core_out,
        Some(UserOut {
            addr: 0x6000,
            len: 4
        })
    );
}

#[test]
fn every_table_entry_parses_at_its_least_sizes() {
    for s in cmd::WRITE_CMDS {
        let mut core = vec![0u8; s.req_size];
        if s.has_resp {
            core[..8].copy_from_slice(&0x1000u64.to_ne_bytes());
        }
        let buf = legacy(s.number, &core, &[], (s.resp_size.div_ceil(4)) as u16);
        let r: Request<'_> = parse(&buf).unwrap_or_else(|e| panic!("{:?}: {e}", s.cmd));
        assert_eq!(r.spec, s);
        assert_eq!(r.core_in.len(), s.req_size);
        assert_eq!(r.core_out.is_some(), s.has_resp);
        if s.req_size > 4 {
            // One word short of the request: ENOSPC.
            let buf = legacy(s.number, &core[..s.req_size - 4], &[], 64);
            assert_eq!(err(&buf).errno(), Errno::NoSpc, "{:?}", s.cmd);
        }
        if s.resp_size >= 4 {
            let buf = legacy(s.number, &core, &[], ((s.resp_size - 1) / 4) as u16);
            assert_eq!(
                err(&buf),
                AbiError::ResponseTooSmall {
                    needed: s.resp_size,
                    got: (s.resp_size - 1) / 4 * 4
                },
                "{:?}",
                s.cmd
            );
        }
    }
    for s in cmd::WRITE_EX_CMDS {
        let core = vec![0u8; s.req_size];
        let words = s.resp_size.div_ceil(8) as u16;
        let buf = extended(s.number, &core, &[], 0x2000, words, 0);
        let r = parse(&buf).unwrap();
        assert_eq!(r.spec, s);
        assert_eq!(
            r.core_out,
            Some(UserOut {
                addr: 0x2000,
                len: usize::from(words) * 8
            })
        );
        assert_eq!(declared_len(&buf), Ok(buf.len()));
    }
}

#[test]
fn ex_query_device_and_create_cq() {
    // libibverbs asks for the whole extended response.
    let core = bytes_of(&ExQueryDevice::default());
    let words = (ExQueryDeviceResp::SIZE / 8) as u16;
    let b = extended(cmd::QUERY_DEVICE, &core, &[], 0x8000, words, 0);
    let r = parse(&b).unwrap();
    assert_eq!(r.spec.cmd, Cmd::ExQueryDevice);
    assert_eq!(r.core_out.unwrap().len, ExQueryDeviceResp::SIZE);
    // Just up to response_length is enough; one word less is not.
    let min = (EX_QUERY_DEVICE_RESP_MIN / 8) as u16;
    assert!(parse(&extended(cmd::QUERY_DEVICE, &core, &[], 0x8000, min, 0)).is_ok());
    assert_eq!(
        err(&extended(cmd::QUERY_DEVICE, &core, &[], 0x8000, min - 1, 0)).errno(),
        Errno::NoSpc
    );
    // Extended CREATE_CQ with driver data both ways.
    let cq = bytes_of(&ExCreateCq {
        user_handle: 1,
        cqe: 16,
        comp_channel: -1,
        ..Default::default()
    });
    let b = extended(cmd::CREATE_CQ, &cq, &[9; 16], 0x8000, 2, 2);
    let r = parse(&b).unwrap();
    assert_eq!(r.core::<ExCreateCq>().unwrap().comp_channel, -1);
    assert_eq!(r.driver_in, &[9; 16]);
    assert_eq!(
        r.core_out,
        Some(UserOut {
            addr: 0x8000,
            len: 16
        })
    );
    assert_eq!(
        r.driver_out,
        Some(UserOut {
            addr: 0x8010,
            len: 16
        })
    );
}

#[test]
fn hostile_legacy_framing() {
    let dealloc = bytes_of(&DeallocPd { pd_handle: 1 });
    // Shorter than the header.
    for n in 0..HDR_LEN {
        let e = err(&vec![0u8; n]);
        assert_eq!(e, AbiError::TooShort { needed: 8, got: n });
        assert_eq!(e.errno(), Errno::Inval);
    }
    // Stray bits in the command word; unknown and unimplemented commands.
    let mut buf = legacy(cmd::DEALLOC_PD, &dealloc, &[], 0);
    buf[1] = 1;
    assert_eq!(err(&buf), AbiError::BadCommandBits(0x104));
    assert_eq!(err(&buf).errno(), Errno::Inval);
    for n in [
        cmd::POLL_CQ,
        cmd::POST_RECV,
        cmd::REREG_MR,
        cmd::OPEN_QP,
        41,
        0xff,
    ] {
        let e = err(&legacy(n, &dealloc, &[], 0));
        assert_eq!(
            e,
            AbiError::UnknownCommand {
                number: n,
                extended: false
            }
        );
        assert_eq!(e.errno(), Errno::OpNotSupp);
        assert!(lookup(n).is_err());
    }
    // in_words that do not match the write's length, either way.
    let mut buf = legacy(cmd::DEALLOC_PD, &dealloc, &[], 0);
    buf[4] = 4;
    assert_eq!(
        err(&buf),
        AbiError::LengthMismatch {
            declared: 16,
            got: 12
        }
    );
    buf[4] = 2;
    assert_eq!(
        err(&buf),
        AbiError::LengthMismatch {
            declared: 8,
            got: 12
        }
    );
    buf[4..6].copy_from_slice(&u16::MAX.to_ne_bytes());
    assert_eq!(
        err(&buf),
        AbiError::LengthMismatch {
            declared: 262_140,
            got: 12
        }
    );
    assert_eq!(declared_len(&buf), Ok(262_140));
    buf[4..6].copy_from_slice(&0u16.to_ne_bytes());
    assert_eq!(err(&buf).errno(), Errno::Inval);
    // A length that is not a multiple of 4 never matches.
    let mut buf = legacy(cmd::DEALLOC_PD, &dealloc, &[], 0);
    buf.push(0);
    assert_eq!(err(&buf).errno(), Errno::Inval);
    // in_words consistent but smaller than the structure.
    let buf = legacy(cmd::CREATE_QP, &[0u8; 40], &[], 8);
    assert_eq!(
        err(&buf),
        AbiError::RequestTooSmall {
            needed: 56,
            got: 40
        }
    );
    assert_eq!(err(&buf).errno(), Errno::NoSpc);
    // Only the header (in_words 2) for a command that needs a request.
    let buf = legacy(cmd::DESTROY_CQ, &[], &[], 2);
    assert_eq!(err(&buf), AbiError::RequestTooSmall { needed: 16, got: 0 });
    // rdma-core 18/19's 16-byte DESTROY_CQ is not accepted.
    let buf = legacy(cmd::DESTROY_CQ, &[0u8; 8], &[], 2);
    assert_eq!(err(&buf).errno(), Errno::NoSpc);
    // out_words too small for the response.
    let core = bytes_of(&GetContext { response: 0x1000 });
    assert_eq!(
        err(&legacy(cmd::GET_CONTEXT, &core, &[], 1)),
        AbiError::ResponseTooSmall { needed: 8, got: 4 }
    );
    // A response address whose range wraps: EFAULT, for the core and for
    // the driver part.
    let core = bytes_of(&QueryDevice {
        response: u64::MAX - 100,
    });
    let e = err(&legacy(cmd::QUERY_DEVICE, &core, &[], 44));
    assert_eq!((e, e.errno()), (AbiError::AddressOverflow, Errno::Fault));
    let core = bytes_of(&AllocPd {
        response: u64::MAX - 2,
    });
    assert_eq!(
        err(&legacy(cmd::ALLOC_PD, &core, &[], 1)),
        AbiError::AddressOverflow
    );
    // The core part fits, the driver part after it does not.
    let core = bytes_of(&AllocPd {
        response: u64::MAX - 12,
    });
    assert_eq!(
        err(&legacy(cmd::ALLOC_PD, &core, &[], 4)),
        AbiError::AddressOverflow
    );
    assert!(parse(&legacy(cmd::ALLOC_PD, &core, &[], 3)).is_ok());
}

#[test]
fn hostile_extended_framing() {
    let core = bytes_of(&ExQueryDevice::default());
    let good = extended(cmd::QUERY_DEVICE, &core, &[], 0x1000, 38, 0);
    assert!(parse(&good).is_ok());
    // Only the first header.
    for n in HDR_LEN..HDR_LEN + EX_HDR_LEN {
        let e = err(&good[..n]);
        assert_eq!(e, AbiError::TooShort { needed: 24, got: n });
        assert_eq!(declared_len(&good[..n]), Err(e));
    }
    // Extended commands not implemented.
    for n in [cmd::QUERY_QP, cmd::MODIFY_QP, 50, 0] {
        let e = err(&extended(n, &core, &[], 0x1000, 38, 0));
        assert_eq!(
            e,
            AbiError::UnknownCommand {
                number: n,
                extended: true
            }
        );
        assert_eq!(e.errno(), Errno::OpNotSupp);
    }
    // Word counts that do not add up, including the largest ones.
    let mut b = good.clone();
    b[4..6].copy_from_slice(&u16::MAX.to_ne_bytes());
    b[16..18].copy_from_slice(&u16::MAX.to_ne_bytes());
    let e = err(&b);
    assert_eq!(
        e,
        AbiError::LengthMismatch {
            declared: MAX_WRITE_LEN,
            got: 32
        }
    );
    assert_eq!(declared_len(&b), Ok(MAX_WRITE_LEN));
    let mut b = good.clone();
    b.extend_from_slice(&[0; 8]);
    assert_eq!(
        err(&b),
        AbiError::LengthMismatch {
            declared: 32,
            got: 40
        }
    );
    // Driver input but a core request smaller than the command's.
    let b = extended(cmd::CREATE_CQ, &[0u8; 24], &[0u8; 8], 0x1000, 2, 0);
    assert_eq!(
        err(&b),
        AbiError::RequestTooSmall {
            needed: 32,
            got: 24
        }
    );
    assert_eq!(err(&b).errno(), Errno::NoSpc);
    // The reserved word.
    let mut b = good.clone();
    b[20] = 1;
    assert_eq!(err(&b), AbiError::ReservedNotZero);
    // A response address without words, words without an address.
    let e = err(&extended(cmd::QUERY_DEVICE, &core, &[], 0x1000, 0, 0));
    assert_eq!(
        (e, e.errno()),
        (AbiError::ResponseWithoutWords, Errno::Inval)
    );
    let e = err(&extended(cmd::QUERY_DEVICE, &core, &[], 0, 38, 0));
    assert_eq!(
        (e, e.errno()),
        (AbiError::WordsWithoutResponse, Errno::Inval)
    );
    assert_eq!(
        err(&extended(cmd::QUERY_DEVICE, &core, &[], 0, 0, 1)),
        AbiError::WordsWithoutResponse
    );
    // No response at all is allowed (the command then cannot answer).
    let b = extended(cmd::QUERY_DEVICE, &core, &[], 0, 0, 0);
    let r = parse(&b).unwrap();
    assert_eq!((r.core_out, r.driver_out), (None, None));
    // Response words too few; driver words only.
    assert_eq!(
        err(&extended(cmd::QUERY_DEVICE, &core, &[], 0x1000, 22, 0)),
        AbiError::ResponseTooSmall {
            needed: 184,
            got: 176
        }
    );
    assert_eq!(
        err(&extended(cmd::QUERY_DEVICE, &core, &[], 0x1000, 0, 4)).errno(),
        Errno::NoSpc
    );
    // Address ranges that wrap, through the core or the driver part.
    let e = err(&extended(
        cmd::QUERY_DEVICE,
        &core,
        &[],
        u64::MAX - 8,
        38,
        0,
    ));
    assert_eq!((e, e.errno()), (AbiError::AddressOverflow, Errno::Fault));
    let top = u64::MAX - 38 * 8 + 1;
    assert!(parse(&extended(cmd::QUERY_DEVICE, &core, &[], top - 1, 38, 0)).is_ok());
    assert_eq!(
        err(&extended(cmd::QUERY_DEVICE, &core, &[], top - 1, 38, 1)),
        AbiError::AddressOverflow
    );
}

/// What every accepted buffer satisfies; panics otherwise.
fn check_accepted(buf: &[u8], r: &Request<'_>) {
    let s = r.spec;
    assert_eq!(declared_len(buf), Ok(buf.len()));
    assert!(r.core_in.len() >= s.req_size);
    let headers = if s.extended {
        HDR_LEN + EX_HDR_LEN
    } else {
        HDR_LEN
    };
    assert_eq!(headers + r.core_in.len() + r.driver_in.len(), buf.len());
    assert_eq!(&buf[headers..headers + r.core_in.len()], r.core_in);
    if !s.extended && s.has_udata {
        assert_eq!(r.core_in.len(), s.req_size);
    }
    if !s.extended && !s.has_udata {
        assert!(r.driver_in.is_empty());
    }
    if let Some(o) = r.core_out {
        assert!(o.len >= s.resp_size);
        assert!(o.addr.checked_add(o.len as u64).is_some());
        if let Some(d) = r.driver_out {
            assert_eq!(d.addr, o.addr + o.len as u64);
            assert!(d.len > 0 && d.addr.checked_add(d.len as u64).is_some());
        }
    } else {
        assert!(r.driver_out.is_none());
        assert!(!s.has_resp || s.extended);
    }
}

#[test]
fn fuzz_framing() {
    let mut rng = Rng(0x5eed_f00d_0bad_cafe);
    // Seeds: one well-formed buffer per command.
    let mut seeds = Vec::new();
    for s in cmd::WRITE_CMDS {
        let mut core = rng.bytes(s.req_size);
        if s.has_resp {
            core[..8].copy_from_slice(&(rng.next() >> 16).to_ne_bytes());
        }
        let n = 8 * rng.below(3);
        let driver = if s.has_udata {
            rng.bytes(n)
        } else {
            Vec::new()
        };
        let out = (s.resp_size.div_ceil(4) + 2 * rng.below(3)) as u16;
        seeds.push(legacy(s.number, &core, &driver, out));
    }
    for s in cmd::WRITE_EX_CMDS {
        let core = rng.bytes(s.req_size);
        seeds.push(extended(
            s.number,
            &core,
            &[0; 8],
            0x1000,
            s.resp_size.div_ceil(8) as u16,
            1,
        ));
    }
    for seed in &seeds {
        let r = parse(seed).expect("seeds parse");
        check_accepted(seed, &r);
    }
    let (mut accepted, mut rejected) = (0u32, [0u32; 4]);
    for round in 0..200_000u32 {
        let mut buf = if round % 8 == 0 {
            let n = rng.below(96);
            rng.bytes(n)
        } else {
            seeds[rng.below(seeds.len())].clone()
        };
        for _ in 0..1 + rng.below(4) {
            let len = buf.len();
            match rng.below(8) {
                0 if len > 0 => {
                    let i = rng.below(len.min(32));
                    buf[i] = [0, 1, 0x7f, 0x80, 0xff][rng.below(5)];
                }
                1 if len > 0 => {
                    let i = rng.below(len);
                    buf[i] ^= 1 << rng.below(8);
                }
                2 => buf.truncate(rng.below(len + 1)),
                3 => {
                    let n = rng.below(24);
                    buf.extend(rng.bytes(n));
                }
                4 if len >= 8 => {
                    // Keep the words consistent with the new length.
                    let w = (len / 4) as u16;
                    buf[4..6].copy_from_slice(&w.to_ne_bytes());
                }
                5 if len >= 8 => {
                    let w = rng.next() as u16;
                    buf[4 + 2 * rng.below(2)..][..2].copy_from_slice(&w.to_ne_bytes());
                }
                6 if len >= 16 => {
                    // The response address of both framings: near the top.
                    let a = u64::MAX - rng.below(512) as u64;
                    buf[8..16].copy_from_slice(&a.to_ne_bytes());
                }
                _ if len >= 4 => {
                    let c = [0u32, 1, 18, 24, 26, 28, 33, 0xff, 0x100][rng.below(9)];
                    let c = if rng.below(4) == 0 {
                        c | FLAG_EXTENDED
                    } else {
                        c
                    };
                    buf[..4].copy_from_slice(&c.to_ne_bytes());
                }
                _ => {}
            }
        }
        match parse(&buf) {
            Ok(r) => {
                check_accepted(&buf, &r);
                accepted += 1;
            }
            Err(e) => {
                let i = match e.errno() {
                    Errno::Inval => 0,
                    Errno::NoSpc => 1,
                    Errno::OpNotSupp => 2,
                    Errno::Fault => 3,
                };
                rejected[i] += 1;
            }
        }
        let _ = declared_len(&buf);
    }
    // The loop reaches acceptance and every kind of rejection.
    assert!(accepted > 10_000, "accepted {accepted}");
    assert!(rejected.iter().all(|n| *n > 0), "rejected {rejected:?}");
}

#[test]
fn request_extension_rules() {
    // Bytes beyond the structure must be zero (a legacy command without
    // udata takes everything after the header as its core request).
    let mut core = bytes_of(&DestroyCq {
        response: 0x1000,
        cq_handle: 4,
        reserved: 0,
    });
    core.extend_from_slice(&[0; 8]);
    let buf = legacy(cmd::DESTROY_CQ, &core, &[], 2);
    assert_eq!(
        parse(&buf).unwrap().core::<DestroyCq>().unwrap().cq_handle,
        4
    );
    let last = core.len() - 1;
    core[last] = 1;
    let buf = legacy(cmd::DESTROY_CQ, &core, &[], 2);
    let r = parse(&buf).unwrap();
    assert_eq!(r.core::<DestroyCq>(), Err(AbiError::NonZeroTail));
    assert_eq!(AbiError::NonZeroTail.errno(), Errno::OpNotSupp);
    // POST_SEND's work requests follow its header: core_head reads it.
    let mut core = bytes_of(&PostSend {
        response: 0x1000,
        qp_handle: 2,
        wr_count: 1,
        sge_count: 0,
        wqe_size: 48,
    });
    core.extend_from_slice(&[0xee; 48]);
    let buf = legacy(cmd::POST_SEND, &core, &[], 1);
    let r = parse(&buf).unwrap();
    assert_eq!(r.core_head::<PostSend>().unwrap().wr_count, 1);
    assert_eq!(&r.core_in[PostSend::SIZE..], &[0xee; 48]);
}

#[test]
fn responses_fit_any_area() {
    let resp = ExCreateCqResp {
        base: CreateCqResp {
            cq_handle: 0x0102_0304,
            cqe: 0x0506_0708,
        },
        comp_mask: 0,
        response_length: 16,
    };
    let full = bytes_of(&resp);
    // A shorter area gets the first bytes, a longer one zeros after.
    for len in [0usize, 3, 8, 16, 24, 40] {
        let mut area = vec![0xaau8; len];
        let n = resp.encode_response(&mut area);
        assert_eq!(n, len.min(16));
        assert_eq!(&area[..n], &full[..n]);
        assert!(area[n..].iter().all(|b| *b == 0), "len {len}");
    }
    // The extended QUERY_DEVICE response into the least area libibverbs
    // may give: up to response_length.
    let mut q = ExQueryDeviceResp::default();
    q.base.max_qp = 7;
    q.response_length = EX_QUERY_DEVICE_RESP_MIN as u32;
    q.max_dm_size = u64::MAX;
    let mut area = vec![0xaau8; EX_QUERY_DEVICE_RESP_MIN];
    assert_eq!(q.encode_response(&mut area), EX_QUERY_DEVICE_RESP_MIN);
    assert_eq!(ExQueryDeviceResp::read_from(&area).base.max_qp, 7);
    assert_eq!(ExQueryDeviceResp::read_from(&area).max_dm_size, 0);
}
