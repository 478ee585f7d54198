// SPDX-License-Identifier: GPL-2.0

//! The rxe user rings (`rdma_spec::uverbs::rxe_ring`): geometry and index
//! math, send and receive WQEs built byte by byte the way librxe
//! (rdma-core 44, `providers/rxe/rxe.c`) fills them, each malformed field
//! refused, completions written into a CQ slot, and a randomized loop that
//! decodes many hostile buffers.
//!
//! The builders below write at the offsets of the 6.12
//! `rdma_user_rxe.h` as numbers, not through the module's constants, so
//! a wrong constant fails here as well as in the layout test.

use rdma_spec::opcodes::{Access, SendFlags, WcFlags, WcOpcode, WcStatus, WrOpcode};
use rdma_spec::qp_state::QpType;
use rdma_spec::uverbs::rxe_ring::*;

/// Element size of the test send queue: 208 + max(8 SGEs, 256 inline)
/// rounded up.
const ELEM: usize = 512;

const RC: SqLimits = SqLimits {
    qp_type: QpType::Rc,
    max_sge: 8,
    max_inline: 256,
};

/// A send WQE as librxe writes it: zeroed, then the fields it sets.
struct Wqe(Vec<u8>);

impl Wqe {
    fn new(opcode: u32, flags: u32) -> Self {
        let mut w = Wqe(vec![0; ELEM]);
        w.u64(0, 0x1122_3344_5566_7788); // wr.wr_id
        w.u32(12, opcode); // wr.opcode
        w.u32(16, flags); // wr.send_flags
        w
    }
    fn u8(&mut self, at: usize, v: u8) -> &mut Self {
        self.0[at] = v;
        self
    }
    fn u32(&mut self, at: usize, v: u32) -> &mut Self {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, at: usize, v: u64) -> &mut Self {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    /// `wr.ex` (imm_data or invalidate_rkey).
    fn ex(&mut self, v: u32) -> &mut Self {
        self.u32(20, v)
    }
    /// `wr.wr.rdma` (also where ATOMIC_WRITE puts its address).
    fn rdma(&mut self, addr: u64, rkey: u32) -> &mut Self {
        self.u64(24, addr).u32(32, rkey)
    }
    /// `wr.wr.atomic`.
    fn atomic(&mut self, addr: u64, compare_add: u64, swap: u64, rkey: u32) -> &mut Self {
        self.u64(24, addr)
            .u64(32, compare_add)
            .u64(40, swap)
            .u32(48, rkey)
    }
    /// `wr.wr.ud`.
    fn ud(&mut self, qpn: u32, qkey: u32, ah_num: u32) -> &mut Self {
        self.u32(24, qpn).u32(28, qkey).u32(36, ah_num)
    }
    /// `dma.length`, `dma.resid`, `dma.num_sge` (at 184 + 0, 4, 12).
    fn dma(&mut self, length: u32, num_sge: u32) -> &mut Self {
        self.u32(184, length).u32(188, length).u32(196, num_sge)
    }
    /// SGEs from offset 208, and the dma fields librxe derives from them.
    fn sges(&mut self, sges: &[(u64, u32, u32)]) -> &mut Self {
        let mut total = 0u32;
        for (i, (addr, len, lkey)) in sges.iter().enumerate() {
            let at = 208 + 16 * i;
            self.u64(at, *addr).u32(at + 8, *len).u32(at + 12, *lkey);
            total = total.wrapping_add(*len);
        }
        self.dma(total, sges.len() as u32)
    }
    /// Inline bytes from offset 208 (librxe's post_send path also leaves
    /// the number of user buffers in num_sge).
    fn inline(&mut self, data: &[u8], num_bufs: u32) -> &mut Self {
        self.0[208..208 + data.len()].copy_from_slice(data);
        self.dma(data.len() as u32, num_bufs)
    }
    fn decode(&self, lim: &SqLimits) -> Result<UserSendWqe<'_>, RingError> {
        decode_send_wqe(&self.0, lim)
    }
}

const ONE_SGE: &[(u64, u32, u32)] = &[(0x7f00_0000_1000, 64, 0x101)];
const WR_ID: u64 = 0x1122_3344_5566_7788;

fn sges_of(p: &Payload<'_>) -> Vec<(u64, u32, u32)> {
    match p {
        Payload::Sges(s) => s.iter().map(|g| (g.addr, g.length, g.lkey)).collect(),
        Payload::Inline(_) => panic!("inline payload"),
    }
}

#[test]
fn geometry_rounds_like_rxe() {
    let g = RingGeometry::new(1, 40, PAGE_SIZE).unwrap();
    assert_eq!((g.slots(), g.capacity(), g.index_mask()), (2, 1, 1));
    assert_eq!((g.elem_size(), g.log2_elem_size()), (64, 6));
    assert_eq!(g.buf_size(), 4096);
    let g = RingGeometry::new(3, 100, PAGE_SIZE).unwrap();
    assert_eq!((g.slots(), g.elem_size()), (4, 128));
    let g = RingGeometry::new(4, 464, PAGE_SIZE).unwrap();
    assert_eq!((g.slots(), g.capacity(), g.elem_size()), (8, 7, 512));
    // 384 + 8 * 512 = 4480: two pages.
    assert_eq!(g.buf_size(), 8192);
    let g = RingGeometry::new(4, 464, 65536).unwrap();
    assert_eq!(g.buf_size(), 65536);
    // The largest ring: 2^20 slots.
    let g = RingGeometry::new(MAX_SLOTS - 1, 64, PAGE_SIZE).unwrap();
    assert_eq!(g.slots(), MAX_SLOTS);
    assert_eq!(g.capacity(), MAX_SLOTS - 1);
    assert_eq!(g.buf_size(), (64 << 20) + 4096);
    let g = RingGeometry::new(1, MAX_ELEM_SIZE, PAGE_SIZE).unwrap();
    assert_eq!(g.elem_size(), MAX_ELEM_SIZE);
}

#[test]
fn geometry_refuses_bad_sizes() {
    assert_eq!(
        RingGeometry::new(0, 64, PAGE_SIZE),
        Err(RingError::NoEntries)
    );
    assert_eq!(
        RingGeometry::new(MAX_SLOTS, 64, PAGE_SIZE),
        Err(RingError::TooManyEntries(MAX_SLOTS))
    );
    assert_eq!(
        RingGeometry::new(u32::MAX, 64, PAGE_SIZE),
        Err(RingError::TooManyEntries(u32::MAX))
    );
    assert_eq!(
        RingGeometry::new(1, 0, PAGE_SIZE),
        Err(RingError::BadElemSize(0))
    );
    assert_eq!(
        RingGeometry::new(1, MAX_ELEM_SIZE + 1, PAGE_SIZE),
        Err(RingError::BadElemSize(MAX_ELEM_SIZE + 1))
    );
    assert_eq!(
        RingGeometry::new(1, usize::MAX, PAGE_SIZE),
        Err(RingError::BadElemSize(usize::MAX))
    );
    for p in [0, 3, 4095] {
        assert_eq!(RingGeometry::new(1, 64, p), Err(RingError::BadPageSize(p)));
    }
    // 2^20 slots of 16 KiB: 16 GiB.
    assert_eq!(
        RingGeometry::new(MAX_SLOTS - 1, MAX_ELEM_SIZE, PAGE_SIZE),
        Err(RingError::BufferTooLarge)
    );
    // Just above and at the bound: 2^14 slots of 16 KiB plus the header
    // is above 256 MiB; 2^13 slots is not.
    assert_eq!(
        RingGeometry::new(1 << 14, MAX_ELEM_SIZE, PAGE_SIZE),
        Err(RingError::BufferTooLarge)
    );
    assert!(RingGeometry::new((1 << 14) - 1, MAX_ELEM_SIZE, PAGE_SIZE).is_err());
    let g = RingGeometry::new((1 << 14) - 2, MAX_ELEM_SIZE / 2, PAGE_SIZE).unwrap();
    assert!(g.buf_size() <= MAX_BUF_SIZE);
}

#[test]
fn index_math_masks_untrusted_indexes() {
    let g = RingGeometry::new(7, 512, PAGE_SIZE).unwrap();
    assert_eq!(g.slots(), 8);
    assert_eq!(g.count(5, 3), 2);
    assert_eq!(g.count(1, 7), 2, "producer wrapped");
    assert_eq!(g.count(3, 3), 0);
    assert!(g.is_empty(4, 4));
    assert!(g.is_full(7, 0));
    assert!(g.is_full(2, 3));
    assert!(!g.is_full(3, 3));
    assert_eq!(g.next(7), 0);
    assert_eq!(g.next(u32::MAX), 0);
    assert_eq!(g.slot_offset(0), 384);
    assert_eq!(g.slot_offset(3), 384 + 3 * 512);
    assert_eq!(g.slot_offset(8), 384, "masked");
    for (p, c) in [(u32::MAX, 0), (0, u32::MAX), (0x8000_0000, 1), (12345, 999)] {
        assert!(g.count(p, c) <= g.capacity());
        for i in [p, c] {
            assert!(g.slot_offset(i) + g.elem_size() <= g.buf_size());
        }
    }
    let g = RingGeometry::new(MAX_SLOTS - 1, 64, PAGE_SIZE).unwrap();
    assert!(g.slot_offset(u32::MAX) + g.elem_size() <= g.buf_size());
    assert_eq!(g.count(0, 1), MAX_SLOTS - 1);
}

#[test]
fn resize_carries_waiting_entries_in_order() {
    let old = RingGeometry::new(7, 48, PAGE_SIZE).unwrap();
    let big = RingGeometry::new(30, 48, PAGE_SIZE).unwrap();
    let small = RingGeometry::new(1, 48, PAGE_SIZE).unwrap();
    assert_eq!((old.slots(), big.slots(), small.slots()), (8, 32, 2));
    // Three waiting from slot 6, the producer wrapped (unmasked 9).
    let c = old.carry_into(9, 6, &big, 30).unwrap();
    assert_eq!(c.count(), 3);
    assert_eq!(c.producer(), 3);
    let moves: Vec<_> = c.moves().collect();
    assert_eq!(moves, [(6, 0), (7, 1), (0, 2)]);
    // Down to one entry: fits only when at most one waits.
    let c = old.carry_into(5, 4, &small, 1).unwrap();
    assert_eq!(c.moves().collect::<Vec<_>>(), [(4, 0)]);
    assert_eq!(
        old.carry_into(6, 4, &small, 1),
        Err(RingError::WontFit {
            waiting: 2,
            room: 1
        })
    );
    // The asked-for size counts, not the rounded-up ring: 3 do not fit
    // in 2 even though the new ring holds 3.
    let four = RingGeometry::new(2, 48, PAGE_SIZE).unwrap();
    assert_eq!(four.capacity(), 3);
    assert_eq!(
        old.carry_into(3, 0, &four, 2),
        Err(RingError::WontFit {
            waiting: 3,
            room: 2
        })
    );
    assert_eq!(old.carry_into(3, 0, &four, 3).unwrap().count(), 3);
    // Empty: nothing moves, the new producer is 0.
    let c = old.carry_into(5, 5, &small, 1).unwrap();
    assert_eq!((c.count(), c.producer(), c.moves().count()), (0, 0, 0));
    // Elements of another size are refused.
    let wide = RingGeometry::new(7, 128, PAGE_SIZE).unwrap();
    assert_eq!(
        old.carry_into(1, 0, &wide, 7),
        Err(RingError::ElemSizeMismatch)
    );
}

#[test]
fn resize_with_wild_consumer_stays_in_bounds() {
    let big = RingGeometry::new(MAX_SLOTS - 1, 64, PAGE_SIZE).unwrap();
    for old_n in [1u32, 7, 100, 4095] {
        let old = RingGeometry::new(old_n, 64, PAGE_SIZE).unwrap();
        for (p, cons) in [(0, u32::MAX), (3, 0x8000_0000), (u32::MAX, 1), (17, 12345)] {
            // Into a ring that holds anything: every move is in bounds.
            let c = old.carry_into(p, cons, &big, u32::MAX).unwrap();
            assert!(c.count() <= old.capacity());
            for (from, to) in c.moves() {
                assert!(old.slot_offset(from) + old.elem_size() <= old.buf_size());
                assert_eq!(from, from & old.index_mask());
                assert!(to < big.slots());
            }
            // Into one entry: the waiting count from a wild index either
            // fits or is refused, never more than the room moves.
            let small = RingGeometry::new(1, 64, PAGE_SIZE).unwrap();
            match old.carry_into(p, cons, &small, 1) {
                Ok(c) => assert!(c.count() <= 1),
                Err(RingError::WontFit { waiting, room }) => {
                    assert!(waiting > room && room == 1 && waiting <= old.capacity())
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn send_with_sges() {
    let mut w = Wqe::new(2, SendFlags::SIGNALED.bits());
    w.sges(&[(0x1000, 100, 7), (0x2000, 200, 8)]);
    let d = w.decode(&RC).unwrap();
    assert_eq!(d.wr_id, WR_ID);
    assert_eq!(d.op, UserSendOp::Send);
    assert_eq!(d.flags, SendFlags::SIGNALED);
    assert_eq!(d.ud, None);
    assert_eq!(
        sges_of(&d.payload),
        vec![(0x1000, 100, 7), (0x2000, 200, 8)]
    );
    assert_eq!(d.payload.len(), 300);
    let Payload::Sges(s) = d.payload else {
        unreachable!()
    };
    assert_eq!(s.len(), 2);
    assert_eq!(s.get(1).unwrap().lkey, 8);
    assert_eq!(s.get(2), None);
    // No data at all is a zero-length send.
    let mut w = Wqe::new(2, 0);
    w.sges(&[]);
    assert!(w.decode(&RC).unwrap().payload.is_empty());
}

#[test]
fn send_variants_and_rdma() {
    let imm = u32::from_be(0xdead_beef);
    let mut w = Wqe::new(3, 0);
    w.ex(imm).sges(ONE_SGE);
    assert_eq!(w.decode(&RC).unwrap().op, UserSendOp::SendWithImm(imm));

    let mut w = Wqe::new(9, 0);
    w.ex(0x4242).sges(ONE_SGE);
    assert_eq!(w.decode(&RC).unwrap().op, UserSendOp::SendWithInv(0x4242));

    let mut w = Wqe::new(0, SendFlags::FENCE.bits());
    w.rdma(0xabc0_0000, 0x55).sges(ONE_SGE);
    let d = w.decode(&RC).unwrap();
    assert_eq!(
        d.op,
        UserSendOp::Write {
            remote_addr: 0xabc0_0000,
            rkey: 0x55
        }
    );
    assert_eq!(d.flags, SendFlags::FENCE);

    let mut w = Wqe::new(1, 0);
    w.rdma(0x10, 0x66).ex(imm).sges(ONE_SGE);
    assert_eq!(
        w.decode(&RC).unwrap().op,
        UserSendOp::WriteWithImm {
            remote_addr: 0x10,
            rkey: 0x66,
            imm
        }
    );

    let mut w = Wqe::new(4, 0);
    w.rdma(0x20, 0x77).sges(ONE_SGE);
    let d = w.decode(&RC).unwrap();
    assert_eq!(
        d.op,
        UserSendOp::Read {
            remote_addr: 0x20,
            rkey: 0x77
        }
    );
    assert_eq!(d.op.opcode(), WrOpcode::RdmaRead);
    assert_eq!(sges_of(&d.payload), ONE_SGE.to_vec());
}

#[test]
fn atomics() {
    let mut w = Wqe::new(5, 0);
    w.atomic(0x1008, 1, 2, 0x99).sges(&[(0x3000, 8, 3)]);
    assert_eq!(
        w.decode(&RC).unwrap().op,
        UserSendOp::CmpAndSwp {
            remote_addr: 0x1008,
            rkey: 0x99,
            compare: 1,
            swap: 2
        }
    );
    let mut w = Wqe::new(6, 0);
    w.atomic(0x1010, 5, 0, 0x98).sges(&[(0x3000, 8, 3)]);
    assert_eq!(
        w.decode(&RC).unwrap().op,
        UserSendOp::FetchAndAdd {
            remote_addr: 0x1010,
            rkey: 0x98,
            add: 5
        }
    );
    // ATOMIC_WRITE: address in wr.rdma, the 8 bytes in dma.atomic_wr,
    // length and resid 8, no SGE.
    let mut w = Wqe::new(15, 0);
    w.rdma(0x2000, 0x11).dma(8, 0);
    w.0[208..216].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let d = w.decode(&RC).unwrap();
    assert_eq!(
        d.op,
        UserSendOp::AtomicWrite {
            remote_addr: 0x2000,
            rkey: 0x11,
            value: [1, 2, 3, 4, 5, 6, 7, 8]
        }
    );
    assert!(d.payload.is_empty());
}

#[test]
fn atomics_refused() {
    // Unaligned address.
    let mut w = Wqe::new(5, 0);
    w.atomic(0x1004, 1, 2, 0x99).sges(&[(0x3000, 8, 3)]);
    assert_eq!(w.decode(&RC), Err(RingError::BadAtomic));
    // Fewer than 8 bytes to receive the old value.
    let mut w = Wqe::new(6, 0);
    w.atomic(0x1000, 1, 0, 0x99).sges(&[(0x3000, 4, 3)]);
    assert_eq!(w.decode(&RC), Err(RingError::BadAtomic));
    // ATOMIC_WRITE: unaligned, or a length other than 8, or SGEs.
    let mut w = Wqe::new(15, 0);
    w.rdma(0x2001, 0x11).dma(8, 0);
    assert_eq!(w.decode(&RC), Err(RingError::BadAtomic));
    let mut w = Wqe::new(15, 0);
    w.rdma(0x2000, 0x11).dma(16, 0);
    assert_eq!(w.decode(&RC), Err(RingError::BadDmaState));
    let mut w = Wqe::new(15, 0);
    w.rdma(0x2000, 0x11).dma(8, 1);
    assert_eq!(w.decode(&RC), Err(RingError::BadDmaState));
    // Not on UC.
    let uc = SqLimits {
        qp_type: QpType::Uc,
        ..RC
    };
    let mut w = Wqe::new(6, 0);
    w.atomic(0x1000, 1, 0, 0x99).sges(&[(0x3000, 8, 3)]);
    assert_eq!(
        w.decode(&uc),
        Err(RingError::OpcodeNotAllowed(WrOpcode::AtomicFetchAndAdd))
    );
}

#[test]
fn local_operations() {
    let mut w = Wqe::new(7, SendFlags::SIGNALED.bits());
    w.ex(0x1234_5601);
    assert_eq!(w.decode(&RC).unwrap().op, UserSendOp::LocalInv(0x1234_5601));
    // BIND_MW: wr.mw at 24 (addr), 32 (length), 40 (mr_lkey), 44
    // (mw_rkey), 48 (rkey), 52 (access).
    let access = (Access::REMOTE_READ | Access::REMOTE_WRITE | Access::ZERO_BASED).bits();
    let mut w = Wqe::new(8, 0);
    w.u64(24, 0x5000)
        .u64(32, 0x1_0000_0000)
        .u32(40, 0x300)
        .u32(44, 0x400)
        .u32(48, 0x401)
        .u32(52, access);
    assert_eq!(
        w.decode(&RC).unwrap().op,
        UserSendOp::BindMw {
            mw_rkey: 0x400,
            mr_lkey: 0x300,
            rkey: 0x401,
            addr: 0x5000,
            length: 0x1_0000_0000,
            access: Access(access)
        }
    );
    let uc = SqLimits {
        qp_type: QpType::Uc,
        ..RC
    };
    assert!(w.decode(&uc).is_ok(), "UC binds windows");
    w.u32(52, 1 << 7);
    assert_eq!(w.decode(&RC), Err(RingError::BadAccess(1 << 7)));
    // Data on a local operation.
    let mut w = Wqe::new(7, 0);
    w.ex(1).sges(ONE_SGE);
    assert_eq!(w.decode(&RC), Err(RingError::UnexpectedData));
    let mut w = Wqe::new(8, 0);
    w.sges(&[(0, 0, 0)]);
    assert_eq!(w.decode(&RC), Err(RingError::UnexpectedData));
    // Inline on a local operation.
    let mut w = Wqe::new(7, SendFlags::INLINE.bits());
    w.ex(1);
    assert_eq!(w.decode(&RC), Err(RingError::InlineNotAllowed));
    // LOCAL_INV is RC only.
    let mut w = Wqe::new(7, 0);
    w.ex(1);
    assert_eq!(
        w.decode(&uc),
        Err(RingError::OpcodeNotAllowed(WrOpcode::LocalInv))
    );
}

#[test]
fn flush() {
    // wr.flush: remote_addr 24, length 32, rkey 36, type 40, level 41.
    let mut w = Wqe::new(14, 0);
    w.u64(24, 0x8000)
        .u32(32, 4096)
        .u32(36, 0x21)
        .u8(40, 3)
        .u8(41, 1);
    assert_eq!(
        w.decode(&RC).unwrap().op,
        UserSendOp::Flush {
            remote_addr: 0x8000,
            rkey: 0x21,
            length: 4096,
            placement: FLUSH_GLOBAL | FLUSH_PERSISTENT,
            whole_mr: true
        }
    );
    for (t, l) in [(0, 0), (4, 0), (1, 2), (0xff, 0)] {
        w.u8(40, t).u8(41, l);
        assert_eq!(
            w.decode(&RC),
            Err(RingError::BadFlush),
            "type {t} level {l}"
        );
    }
    let mut w = Wqe::new(14, 0);
    w.u8(40, 1).sges(ONE_SGE);
    assert_eq!(w.decode(&RC), Err(RingError::UnexpectedData));
}

#[test]
fn ud_sends() {
    let ud = SqLimits {
        qp_type: QpType::Ud,
        ..RC
    };
    let mut w = Wqe::new(2, 0);
    w.ud(0x12_3456, 0x1111_1111, 3).sges(ONE_SGE);
    let d = w.decode(&ud).unwrap();
    assert_eq!(
        d.ud,
        Some(UdAddr {
            remote_qpn: 0x12_3456,
            remote_qkey: 0x1111_1111,
            ah_num: 3
        })
    );
    assert_eq!(d.op, UserSendOp::Send);
    // The address vector of old kernels (ah_num 0) is refused.
    w.ud(1, 1, 0);
    assert_eq!(w.decode(&ud), Err(RingError::BadUdAddress));
    w.ud(0x100_0000, 1, 3);
    assert_eq!(w.decode(&ud), Err(RingError::BadUdAddress));
    // RDMA is not a UD operation.
    let mut w = Wqe::new(0, 0);
    w.ud(1, 1, 3).sges(ONE_SGE);
    assert_eq!(
        w.decode(&ud),
        Err(RingError::OpcodeNotAllowed(WrOpcode::RdmaWrite))
    );
}

#[test]
fn inline_data() {
    let data: Vec<u8> = (0..=255u8).collect();
    let flags = (SendFlags::INLINE | SendFlags::SIGNALED).bits();
    // As post_send writes it: num_sge is the number of user buffers.
    let mut w = Wqe::new(2, flags);
    w.inline(&data[..100], 3);
    let d = w.decode(&RC).unwrap();
    assert_eq!(d.payload, Payload::Inline(&data[..100]));
    assert_eq!(d.payload.len(), 100);
    // As ibv_wr_set_inline_data writes it: num_sge 0; the whole maximum.
    let mut w = Wqe::new(0, flags);
    w.rdma(0x40, 1).inline(&data, 0);
    assert_eq!(w.decode(&RC).unwrap().payload, Payload::Inline(&data[..]));
    // One byte more than max_inline.
    let small = SqLimits {
        max_inline: 255,
        ..RC
    };
    assert_eq!(
        w.decode(&small),
        Err(RingError::InlineTooLong {
            length: 256,
            max: 255
        })
    );
    // A max_inline the element cannot hold.
    let big = SqLimits {
        max_inline: 4096,
        ..RC
    };
    let mut w = Wqe::new(2, flags);
    w.dma(400, 0);
    assert_eq!(w.decode(&big), Err(RingError::InlineBeyondElem));
    w.dma(304, 0);
    assert!(w.decode(&big).is_ok(), "208 + 304 = 512 fits");
    w.dma(u32::MAX, 0);
    assert_eq!(
        w.decode(&big),
        Err(RingError::InlineTooLong {
            length: u32::MAX,
            max: 4096
        })
    );
    // Inline on READ and atomics.
    for op in [4, 5, 6, 15] {
        let mut w = Wqe::new(op, flags);
        w.inline(&data[..8], 0);
        assert_eq!(
            w.decode(&RC),
            Err(RingError::InlineNotAllowed),
            "opcode {op}"
        );
    }
}

#[test]
fn bad_opcodes_and_flags() {
    for op in [10, 11, 12, 13, 16, 0x20, 0x21, u32::MAX] {
        let mut w = Wqe::new(op, 0);
        w.sges(ONE_SGE);
        assert_eq!(w.decode(&RC), Err(RingError::BadOpcode(op)));
    }
    for f in [1 << 4, 1 << 5, 1 << 31, 0xffff_ffff] {
        let mut w = Wqe::new(2, f);
        w.sges(ONE_SGE);
        assert_eq!(w.decode(&RC), Err(RingError::BadSendFlags(f)));
    }
    let mut w = Wqe::new(2, SendFlags::KNOWN.bits() & !SendFlags::INLINE.bits());
    w.sges(ONE_SGE);
    assert!(w.decode(&RC).is_ok());
}

#[test]
fn sge_lists_refused() {
    // Above the queue's max_sge.
    let nine: Vec<_> = (0..9).map(|i| (i * 0x1000, 1, 1)).collect();
    let mut w = Wqe::new(2, 0);
    w.sges(&nine);
    assert_eq!(
        w.decode(&RC),
        Err(RingError::TooManySge { num_sge: 9, max: 8 })
    );
    let mut w = Wqe::new(2, 0);
    w.sges(&nine[..8]);
    assert!(w.decode(&RC).is_ok());
    // A num_sge the queue would allow but the element cannot hold:
    // 208 + 16 * 20 > 512.
    let lax = SqLimits {
        max_sge: 1000,
        ..RC
    };
    let mut w = Wqe::new(2, 0);
    w.dma(0, 20);
    assert_eq!(w.decode(&lax), Err(RingError::SgeBeyondElem));
    w.dma(0, 19);
    assert!(w.decode(&lax).is_ok(), "208 + 16 * 19 = 512 fits");
    w.dma(0, u32::MAX);
    assert_eq!(
        w.decode(&SqLimits {
            max_sge: u32::MAX,
            ..RC
        }),
        Err(RingError::SgeBeyondElem)
    );
    // Lengths adding up past 2^31, or wrapping 32 bits.
    let mut w = Wqe::new(2, 0);
    w.sges(&[(0, 0x8000_0000, 1), (0, 1, 1)]);
    assert_eq!(w.decode(&RC), Err(RingError::LengthOverflow));
    let mut w = Wqe::new(2, 0);
    w.sges(&[(0, u32::MAX, 1), (0, 1, 1)]);
    assert_eq!(w.decode(&RC), Err(RingError::LengthOverflow));
    let mut w = Wqe::new(2, 0);
    w.sges(&[(0, 0x4000_0000, 1), (0, 0x4000_0000, 1)]);
    assert_eq!(w.decode(&RC).unwrap().payload.len(), MAX_WQE_LENGTH);
}

#[test]
fn dma_state_checked() {
    let good = || {
        let mut w = Wqe::new(2, 0);
        w.sges(&[(0x1000, 100, 7), (0x2000, 200, 8)]);
        w
    };
    assert!(good().decode(&RC).is_ok());
    // dma.length, resid, cur_sge, sge_offset in turn.
    for (at, v) in [(184, 299), (188, 301), (192, 1), (200, 4)] {
        let mut w = good();
        w.u32(at, v);
        assert_eq!(w.decode(&RC), Err(RingError::BadDmaState), "offset {at}");
    }
    // Inline: resid must equal length too.
    let mut w = Wqe::new(2, SendFlags::INLINE.bits());
    w.inline(b"hello", 1).u32(188, 4);
    assert_eq!(w.decode(&RC), Err(RingError::BadDmaState));
}

#[test]
fn short_elements_refused() {
    let mut w = Wqe::new(2, 0);
    w.sges(&[]);
    for len in [0, 1, 207] {
        assert_eq!(
            decode_send_wqe(&w.0[..len], &RC),
            Err(RingError::ElemTooShort {
                needed: 208,
                got: len
            })
        );
    }
    assert!(decode_send_wqe(&w.0[..208], &RC).is_ok());
    let mut w = Wqe::new(2, 0);
    w.sges(ONE_SGE);
    assert_eq!(
        decode_send_wqe(&w.0[..223], &RC),
        Err(RingError::SgeBeyondElem)
    );
    assert!(decode_send_wqe(&w.0[..224], &RC).is_ok());
}

/// A receive WQE as librxe writes it: wr_id at 0, dma at 16, SGEs at 40.
fn recv_wqe(wr_id: u64, sges: &[(u64, u32, u32)]) -> Vec<u8> {
    let mut b = vec![0u8; 256];
    b[..8].copy_from_slice(&wr_id.to_ne_bytes());
    let mut total = 0u32;
    for (i, (addr, len, lkey)) in sges.iter().enumerate() {
        let at = 40 + 16 * i;
        b[at..at + 8].copy_from_slice(&addr.to_ne_bytes());
        b[at + 8..at + 12].copy_from_slice(&len.to_ne_bytes());
        b[at + 12..at + 16].copy_from_slice(&lkey.to_ne_bytes());
        total = total.wrapping_add(*len);
    }
    b[16..20].copy_from_slice(&total.to_ne_bytes());
    b[20..24].copy_from_slice(&total.to_ne_bytes());
    b[28..32].copy_from_slice(&(sges.len() as u32).to_ne_bytes());
    b
}

#[test]
fn recv_wqes() {
    let sg = [(0x1000, 10, 1), (0x2000, 20, 2), (0x3000, 30, 3)];
    let b = recv_wqe(77, &sg);
    let d = decode_recv_wqe(&b, 4).unwrap();
    assert_eq!(d.wr_id, 77);
    assert_eq!(d.sges.total_len(), 60);
    let got: Vec<_> = d.sges.iter().map(|g| (g.addr, g.length, g.lkey)).collect();
    assert_eq!(got, sg.to_vec());
    assert!(decode_recv_wqe(&recv_wqe(1, &[]), 4)
        .unwrap()
        .sges
        .is_empty());
    assert_eq!(
        decode_recv_wqe(&b, 2),
        Err(RingError::TooManySge { num_sge: 3, max: 2 })
    );
    assert_eq!(
        decode_recv_wqe(&b[..39], 4),
        Err(RingError::ElemTooShort {
            needed: 40,
            got: 39
        })
    );
    assert_eq!(decode_recv_wqe(&b[..87], 4), Err(RingError::SgeBeyondElem));
    assert!(decode_recv_wqe(&b[..88], 4).is_ok());
    let b = recv_wqe(1, &[(0, u32::MAX, 1), (0, 2, 1)]);
    assert_eq!(decode_recv_wqe(&b, 4), Err(RingError::LengthOverflow));
    let mut b = recv_wqe(1, &sg);
    b[16] ^= 1;
    assert_eq!(decode_recv_wqe(&b, 4), Err(RingError::BadDmaState));
}

#[test]
fn completions_fill_the_slot() {
    let c = Completion {
        wr_id: 0x0102_0304_0506_0708,
        status: WcStatus::RemAccessErr,
        opcode: WcOpcode::RecvRdmaWithImm,
        vendor_err: 0x11,
        byte_len: 4096,
        ex: 0xaabb_ccdd,
        qp_num: 0x12,
        src_qp: 0x13,
        wc_flags: WcFlags::WITH_IMM | WcFlags::GRH,
        pkey_index: 0x1415,
        slid: 0x1617,
        sl: 5,
        dlid_path_bits: 6,
        port_num: 1,
    };
    let mut slot = vec![0xffu8; 128];
    encode_cqe(&c, &mut slot).unwrap();
    let u32_at = |at: usize| u32::from_ne_bytes(slot[at..at + 4].try_into().unwrap());
    let u16_at = |at: usize| u16::from_ne_bytes(slot[at..at + 2].try_into().unwrap());
    assert_eq!(
        u64::from_ne_bytes(slot[..8].try_into().unwrap()),
        0x0102_0304_0506_0708
    );
    assert_eq!(u32_at(8), 10);
    assert_eq!(u32_at(12), 129);
    assert_eq!(u32_at(16), 0x11);
    assert_eq!(u32_at(20), 4096);
    assert_eq!(u32_at(24), 0xaabb_ccdd);
    assert_eq!(u32_at(28), 0x12);
    assert_eq!(u32_at(32), 0x13);
    assert_eq!(u32_at(36), 3);
    assert_eq!(u16_at(40), 0x1415);
    assert_eq!(u16_at(42), 0x1617);
    assert_eq!(slot[44..48], [5, 6, 1, 0]);
    assert!(
        slot[48..].iter().all(|b| *b == 0),
        "rest of the slot zeroed"
    );
    let mut short = [0xffu8; 47];
    assert_eq!(encode_cqe(&c, &mut short), Err(RingError::SlotTooShort(47)));
    assert!(short.iter().all(|b| *b == 0xff), "nothing written");
    let mut exact = [0xffu8; 48];
    encode_cqe(&Completion::default(), &mut exact).unwrap();
    assert!(exact.iter().all(|b| *b == 0));
}

/// xorshift64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Masks the byte at `at`, if there is one.
fn and(b: &mut [u8], at: usize, mask: u8) {
    if let Some(x) = b.get_mut(at) {
        *x &= mask;
    }
}

/// Fills `b` with random bytes, then, most of the time, steers the fields
/// the decoders check first towards values they accept, so the checks
/// behind them are reached too.
fn hostile(rng: &mut Rng, b: &mut [u8], recv: bool) {
    for x in b.iter_mut() {
        *x = rng.next() as u8;
    }
    let put = |b: &mut [u8], at: usize, v: u32| {
        if let Some(s) = b.get_mut(at..at + 4) {
            s.copy_from_slice(&v.to_ne_bytes());
        }
    };
    let dma = if recv { 16 } else { 184 };
    let data = if recv { 40 } else { 208 };
    if rng.below(8) != 0 {
        if !recv {
            put(
                b,
                12,
                [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14, 15][rng.below(14) as usize],
            );
            put(
                b,
                16,
                rng.next() as u32 & if rng.below(8) == 0 { 0x1f } else { 0xf },
            );
            and(b, 40, 3);
            and(b, 41, 1);
            put(
                b,
                36,
                (rng.next() as u32 & 0x3) | if rng.below(4) == 0 { 0 } else { 1 },
            );
            put(b, 24, rng.next() as u32 & 0x1ff_ffff);
            put(b, 52, rng.next() as u32 & 0x33f);
            and(b, 24, !7);
        }
        let n = rng.below(12) as u32;
        let mut total = 0u32;
        for i in 0..n as usize {
            let len = match rng.below(4) {
                0 => rng.next() as u32,
                1 => 0x8000_0000,
                _ => rng.below(5000) as u32,
            };
            put(b, data + 16 * i + 8, len);
            total = total.wrapping_add(len);
        }
        let inline = !recv && b.get(16).is_some_and(|f| f & 8 != 0);
        if inline {
            total = rng.below(600) as u32;
        }
        if b.get(12).is_some_and(|o| *o == 15) && rng.below(2) == 0 {
            total = 8;
        }
        put(b, dma, total);
        put(
            b,
            dma + 4,
            if rng.below(16) == 0 {
                rng.next() as u32
            } else {
                total
            },
        );
        put(b, dma + 8, if rng.below(16) == 0 { 1 } else { 0 });
        put(
            b,
            dma + 12,
            if rng.below(16) == 0 {
                rng.next() as u32
            } else {
                n
            },
        );
        put(b, dma + 16, 0);
    }
}

#[test]
fn hostile_entries_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut buf = vec![0u8; 1024];
    let (mut sent, mut received) = (0usize, 0usize);
    let mut seen = std::collections::BTreeSet::new();
    let types = [QpType::Rc, QpType::Uc, QpType::Ud, QpType::Gsi, QpType::Smi];
    for i in 0..150_000u32 {
        let len = match rng.below(4) {
            0 => rng.below(1025) as usize,
            1 => 256,
            _ => 512,
        };
        let recv = i % 4 == 3;
        let b = &mut buf[..len];
        hostile(&mut rng, b, recv);
        let max_sge = rng.below(12) as u32;
        if recv {
            if let Ok(d) = decode_recv_wqe(b, max_sge) {
                received += 1;
                let n = d.sges.len();
                assert!(n as u32 <= max_sge && 40 + 16 * n <= len);
                let sum: u64 = d.sges.iter().map(|g| u64::from(g.length)).sum();
                assert_eq!(sum, u64::from(d.sges.total_len()));
                assert!(sum <= u64::from(MAX_WQE_LENGTH));
            }
            continue;
        }
        let lim = SqLimits {
            qp_type: types[rng.below(types.len() as u64) as usize],
            max_sge,
            max_inline: [0, 64, 256, 1000][rng.below(4) as usize],
        };
        if let Ok(d) = decode_send_wqe(b, &lim) {
            sent += 1;
            let op = d.op.opcode();
            seen.insert(op.as_raw());
            assert!(op.allowed_on(lim.qp_type));
            assert!(!matches!(op, WrOpcode::RegMr | WrOpcode::RdmaReadWithInv));
            assert!(!d.flags.has_unknown());
            assert_eq!(
                d.ud.is_some(),
                matches!(lim.qp_type, QpType::Ud | QpType::Gsi)
            );
            if let Some(ud) = d.ud {
                assert!(ud.ah_num != 0 && ud.remote_qpn < 1 << 24);
            }
            match d.payload {
                Payload::Inline(data) => {
                    assert!(d.flags.contains(SendFlags::INLINE));
                    assert!(data.len() <= lim.max_inline as usize && 208 + data.len() <= len);
                    assert!(op.gathers());
                }
                Payload::Sges(s) => {
                    assert!(!d.flags.contains(SendFlags::INLINE));
                    assert!(s.len() as u32 <= lim.max_sge && 208 + 16 * s.len() <= len);
                    let sum: u64 = s.iter().map(|g| u64::from(g.length)).sum();
                    assert_eq!(sum, u64::from(s.total_len()));
                    assert!(sum <= u64::from(MAX_WQE_LENGTH));
                    if op.is_atomic() {
                        assert!(sum >= 8);
                    }
                    if op.is_local() || op == WrOpcode::Flush || op == WrOpcode::AtomicWrite {
                        assert!(s.is_empty());
                    }
                }
            }
        }
    }
    eprintln!("hostile entries: {sent} sends, {received} receives accepted; opcodes {seen:?}");
    // The steering must reach acceptance, or the loop tests only the
    // first checks.
    assert!(sent > 1000 && received > 1000, "{sent} {received}");
    assert!(seen.len() >= 10, "{seen:?}");
}
