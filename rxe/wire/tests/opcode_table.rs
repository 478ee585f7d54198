// SPDX-License-Identifier: GPL-2.0

//! The opcode table against rxe's.
//!
//! `RXE_TABLE` lists, for each entry of `rxe_opcode[]` in
//! drivers/infiniband/sw/rxe/rxe_opcode.c (Linux 6.12): the opcode value and
//! its ib_pack.h name, the header length (`.length`), the payload offset
//! (`.offset[RXE_PAYLOAD]`, 0 where the entry gives none), the non-header
//! bits of `.mask` and the extension headers with their offsets. It was
//! extracted mechanically from that file; the crate's table is checked
//! against it entry by entry.

use rxe_wire::opcode::{
    Class, ExtHeader, HeaderSet, Opcode, Operation, Position, Transport, BTH_LEN, MAX_HEADER_LEN,
};

const RXE_TABLE: &[&str] = &[
    "0x00 RC_SEND_FIRST len=12 pay_off=12 flags=PAYLOAD,REQ,RWR,SEND,START hdrs=",
    "0x01 RC_SEND_MIDDLE len=12 pay_off=12 flags=MIDDLE,PAYLOAD,REQ,SEND hdrs=",
    "0x02 RC_SEND_LAST len=12 pay_off=12 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=",
    "0x03 RC_SEND_LAST_WITH_IMMEDIATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=IMMDT@12",
    "0x04 RC_SEND_ONLY len=12 pay_off=12 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=",
    "0x05 RC_SEND_ONLY_WITH_IMMEDIATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=IMMDT@12",
    "0x06 RC_RDMA_WRITE_FIRST len=28 pay_off=28 flags=PAYLOAD,REQ,START,WRITE hdrs=RETH@12",
    "0x07 RC_RDMA_WRITE_MIDDLE len=12 pay_off=12 flags=MIDDLE,PAYLOAD,REQ,WRITE hdrs=",
    "0x08 RC_RDMA_WRITE_LAST len=12 pay_off=12 flags=END,PAYLOAD,REQ,WRITE hdrs=",
    "0x09 RC_RDMA_WRITE_LAST_WITH_IMMEDIATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,RWR,WRITE hdrs=IMMDT@12",
    "0x0a RC_RDMA_WRITE_ONLY len=28 pay_off=28 flags=END,PAYLOAD,REQ,START,WRITE hdrs=RETH@12",
    "0x0b RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE len=32 pay_off=32 flags=COMP,END,PAYLOAD,REQ,RWR,START,WRITE hdrs=RETH@12 IMMDT@28",
    "0x0c RC_RDMA_READ_REQUEST len=28 pay_off=28 flags=END,READ,REQ,START hdrs=RETH@12",
    "0x0d RC_RDMA_READ_RESPONSE_FIRST len=16 pay_off=16 flags=ACK,PAYLOAD,START hdrs=AETH@12",
    "0x0e RC_RDMA_READ_RESPONSE_MIDDLE len=12 pay_off=12 flags=ACK,MIDDLE,PAYLOAD hdrs=",
    "0x0f RC_RDMA_READ_RESPONSE_LAST len=16 pay_off=16 flags=ACK,END,PAYLOAD hdrs=AETH@12",
    "0x10 RC_RDMA_READ_RESPONSE_ONLY len=16 pay_off=16 flags=ACK,END,PAYLOAD,START hdrs=AETH@12",
    "0x11 RC_ACKNOWLEDGE len=16 pay_off=16 flags=ACK,END,START hdrs=AETH@12",
    "0x12 RC_ATOMIC_ACKNOWLEDGE len=24 pay_off=24 flags=ACK,END,START hdrs=AETH@12 ATMACK@16",
    "0x13 RC_COMPARE_SWAP len=40 pay_off=40 flags=ATOMIC,END,REQ,START hdrs=ATMETH@12",
    "0x14 RC_FETCH_ADD len=40 pay_off=40 flags=ATOMIC,END,REQ,START hdrs=ATMETH@12",
    "0x16 RC_SEND_LAST_WITH_INVALIDATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=IETH@12",
    "0x17 RC_SEND_ONLY_WITH_INVALIDATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=IETH@12",
    "0x1c RC_FLUSH len=32 pay_off=0 flags=END,FLUSH,REQ,START hdrs=FETH@12 RETH@16",
    "0x1d RC_ATOMIC_WRITE len=28 pay_off=28 flags=ATOMIC_WRITE,END,PAYLOAD,REQ,START hdrs=RETH@12",
    "0x20 UC_SEND_FIRST len=12 pay_off=12 flags=PAYLOAD,REQ,RWR,SEND,START hdrs=",
    "0x21 UC_SEND_MIDDLE len=12 pay_off=12 flags=MIDDLE,PAYLOAD,REQ,SEND hdrs=",
    "0x22 UC_SEND_LAST len=12 pay_off=12 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=",
    "0x23 UC_SEND_LAST_WITH_IMMEDIATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=IMMDT@12",
    "0x24 UC_SEND_ONLY len=12 pay_off=12 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=",
    "0x25 UC_SEND_ONLY_WITH_IMMEDIATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=IMMDT@12",
    "0x26 UC_RDMA_WRITE_FIRST len=28 pay_off=28 flags=PAYLOAD,REQ,START,WRITE hdrs=RETH@12",
    "0x27 UC_RDMA_WRITE_MIDDLE len=12 pay_off=12 flags=MIDDLE,PAYLOAD,REQ,WRITE hdrs=",
    "0x28 UC_RDMA_WRITE_LAST len=12 pay_off=12 flags=END,PAYLOAD,REQ,WRITE hdrs=",
    "0x29 UC_RDMA_WRITE_LAST_WITH_IMMEDIATE len=16 pay_off=16 flags=COMP,END,PAYLOAD,REQ,RWR,WRITE hdrs=IMMDT@12",
    "0x2a UC_RDMA_WRITE_ONLY len=28 pay_off=28 flags=END,PAYLOAD,REQ,START,WRITE hdrs=RETH@12",
    "0x2b UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE len=32 pay_off=32 flags=COMP,END,PAYLOAD,REQ,RWR,START,WRITE hdrs=RETH@12 IMMDT@28",
    "0x40 RD_SEND_FIRST len=24 pay_off=24 flags=PAYLOAD,REQ,RWR,SEND,START hdrs=RDETH@12 DETH@16",
    "0x41 RD_SEND_MIDDLE len=24 pay_off=24 flags=MIDDLE,PAYLOAD,REQ,SEND hdrs=RDETH@12 DETH@16",
    "0x42 RD_SEND_LAST len=24 pay_off=24 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=RDETH@12 DETH@16",
    "0x43 RD_SEND_LAST_WITH_IMMEDIATE len=28 pay_off=28 flags=COMP,END,PAYLOAD,REQ,SEND hdrs=RDETH@12 DETH@16 IMMDT@24",
    "0x44 RD_SEND_ONLY len=24 pay_off=24 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=RDETH@12 DETH@16",
    "0x45 RD_SEND_ONLY_WITH_IMMEDIATE len=28 pay_off=28 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=RDETH@12 DETH@16 IMMDT@24",
    "0x46 RD_RDMA_WRITE_FIRST len=40 pay_off=40 flags=PAYLOAD,REQ,START,WRITE hdrs=RDETH@12 DETH@16 RETH@24",
    "0x47 RD_RDMA_WRITE_MIDDLE len=24 pay_off=24 flags=MIDDLE,PAYLOAD,REQ,WRITE hdrs=RDETH@12 DETH@16",
    "0x48 RD_RDMA_WRITE_LAST len=24 pay_off=24 flags=END,PAYLOAD,REQ,WRITE hdrs=RDETH@12 DETH@16",
    "0x49 RD_RDMA_WRITE_LAST_WITH_IMMEDIATE len=28 pay_off=28 flags=COMP,END,PAYLOAD,REQ,RWR,WRITE hdrs=RDETH@12 DETH@16 IMMDT@24",
    "0x4a RD_RDMA_WRITE_ONLY len=40 pay_off=40 flags=END,PAYLOAD,REQ,START,WRITE hdrs=RDETH@12 DETH@16 RETH@24",
    "0x4b RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE len=44 pay_off=44 flags=COMP,END,PAYLOAD,REQ,RWR,START,WRITE hdrs=RDETH@12 DETH@16 RETH@24 IMMDT@40",
    "0x4c RD_RDMA_READ_REQUEST len=40 pay_off=40 flags=END,READ,REQ,START hdrs=RDETH@12 DETH@16 RETH@24",
    "0x4d RD_RDMA_READ_RESPONSE_FIRST len=20 pay_off=20 flags=ACK,PAYLOAD,START hdrs=RDETH@12 AETH@16",
    "0x4e RD_RDMA_READ_RESPONSE_MIDDLE len=16 pay_off=16 flags=ACK,MIDDLE,PAYLOAD hdrs=RDETH@12",
    "0x4f RD_RDMA_READ_RESPONSE_LAST len=20 pay_off=20 flags=ACK,END,PAYLOAD hdrs=RDETH@12 AETH@16",
    "0x50 RD_RDMA_READ_RESPONSE_ONLY len=20 pay_off=20 flags=ACK,END,PAYLOAD,START hdrs=RDETH@12 AETH@16",
    "0x51 RD_ACKNOWLEDGE len=20 pay_off=0 flags=ACK,END,START hdrs=RDETH@12 AETH@16",
    "0x52 RD_ATOMIC_ACKNOWLEDGE len=28 pay_off=0 flags=ACK,END,START hdrs=RDETH@12 AETH@16 ATMACK@20",
    "0x53 RD_COMPARE_SWAP len=52 pay_off=52 flags=ATOMIC,END,REQ,START hdrs=RDETH@12 DETH@16 ATMETH@24",
    "0x54 RD_FETCH_ADD len=52 pay_off=52 flags=ATOMIC,END,REQ,START hdrs=RDETH@12 DETH@16 ATMETH@24",
    "0x64 UD_SEND_ONLY len=20 pay_off=20 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=DETH@12",
    "0x65 UD_SEND_ONLY_WITH_IMMEDIATE len=24 pay_off=24 flags=COMP,END,PAYLOAD,REQ,RWR,SEND,START hdrs=DETH@12 IMMDT@20",
];

fn ext_header(name: &str) -> ExtHeader {
    match name {
        "RDETH" => ExtHeader::Rdeth,
        "DETH" => ExtHeader::Deth,
        "FETH" => ExtHeader::Feth,
        "RETH" => ExtHeader::Reth,
        "AETH" => ExtHeader::Aeth,
        "ATMETH" => ExtHeader::AtomicEth,
        "ATMACK" => ExtHeader::AtomicAckEth,
        "IMMDT" => ExtHeader::ImmDt,
        "IETH" => ExtHeader::Ieth,
        other => panic!("unknown header {other}"),
    }
}

#[test]
fn matches_rxe_entry_by_entry() {
    assert_eq!(RXE_TABLE.len(), Opcode::ALL.len());
    for (line, &op) in RXE_TABLE.iter().zip(Opcode::ALL) {
        let fields: Vec<&str> = line.split(' ').collect();
        let value = u8::from_str_radix(fields[0].trim_start_matches("0x"), 16).unwrap();
        let name = fields[1];
        let field = |key: &str| {
            fields
                .iter()
                .find_map(|f| f.strip_prefix(key))
                .unwrap_or_else(|| panic!("{name}: no {key}"))
        };
        let len: usize = field("len=").parse().unwrap();
        let pay_off: usize = field("pay_off=").parse().unwrap();
        let flags: Vec<&str> = field("flags=").split(',').collect();
        let hdrs: Vec<(ExtHeader, usize)> = field("hdrs=")
            .split_whitespace()
            .chain(fields.iter().skip(6).copied())
            .filter(|s| !s.is_empty())
            .map(|h| {
                let (n, o) = h.split_once('@').unwrap();
                (ext_header(n), o.parse().unwrap())
            })
            .collect();
        let has = |f: &str| flags.contains(&f);

        let info = op.info();
        assert_eq!(op.value(), value, "{name}");
        assert_eq!(Opcode::from_u8(value), Some(op), "{name}");
        assert_eq!(info.name, name);
        assert_eq!(info.header_len, len, "{name}");
        // Where rxe gives a payload offset it is the header length; where
        // it gives none, the ICRC data part starts at the BTH.
        if pay_off == 0 {
            assert_eq!(info.icrc_data_offset, 0, "{name}");
        } else {
            assert_eq!(pay_off, len, "{name}");
            assert_eq!(info.icrc_data_offset, len, "{name}");
        }
        assert_eq!(info.payload, has("PAYLOAD"), "{name}");
        assert_eq!(info.is_request(), has("REQ"), "{name}");
        assert_eq!(!info.is_request(), has("ACK"), "{name}");
        assert_eq!(info.consumes_recv_wr, has("RWR"), "{name}");
        assert_eq!(info.completes_recv_wr, has("COMP"), "{name}");
        assert_eq!(info.position.is_first(), has("START"), "{name}");
        assert_eq!(info.position.is_last(), has("END"), "{name}");
        assert_eq!(info.position == Position::Middle, has("MIDDLE"), "{name}");
        let op_flag = match info.operation {
            Operation::Send => Some("SEND"),
            Operation::RdmaWrite => Some("WRITE"),
            Operation::RdmaReadRequest => Some("READ"),
            Operation::CompareSwap | Operation::FetchAdd => Some("ATOMIC"),
            Operation::Flush => Some("FLUSH"),
            Operation::AtomicWrite => Some("ATOMIC_WRITE"),
            Operation::RdmaReadResponse | Operation::Acknowledge | Operation::AtomicAcknowledge => {
                None
            }
        };
        for f in ["SEND", "WRITE", "READ", "ATOMIC", "FLUSH", "ATOMIC_WRITE"] {
            assert_eq!(op_flag == Some(f), has(f), "{name} {f}");
        }
        let mut set = HeaderSet::EMPTY;
        for &(h, off) in &hdrs {
            assert_eq!(info.headers.offset_of(h), Some(off), "{name} {h:?}");
            set = set.with(h);
        }
        assert_eq!(info.headers, set, "{name}");
        assert_eq!(info.headers.wire_len() + BTH_LEN, len, "{name}");
    }
}

#[test]
fn structural_rules() {
    for &op in Opcode::ALL {
        let info = op.info();
        let h = info.headers;
        let name = info.name;
        // Names say transport, immediate and invalidate.
        let prefix = match info.transport {
            Transport::Rc => "RC_",
            Transport::Uc => "UC_",
            Transport::Rd => "RD_",
            Transport::Ud => "UD_",
        };
        assert!(name.starts_with(prefix));
        assert_eq!(h.contains(ExtHeader::ImmDt), name.contains("IMMEDIATE"));
        assert_eq!(h.contains(ExtHeader::Ieth), name.contains("INVALIDATE"));
        assert_eq!(info.has_immediate(), name.contains("IMMEDIATE"));
        assert_eq!(info.has_invalidate(), name.contains("INVALIDATE"));
        // RD always has an RDETH, and a DETH on requests; UD has a DETH.
        assert_eq!(
            h.contains(ExtHeader::Rdeth),
            info.transport == Transport::Rd
        );
        assert_eq!(
            h.contains(ExtHeader::Deth),
            info.transport == Transport::Ud
                || (info.transport == Transport::Rd && info.is_request())
        );
        // A RETH starts every WRITE and READ, and only those (and FLUSH,
        // ATOMIC WRITE).
        let reth = match info.operation {
            Operation::RdmaWrite => info.position.is_first(),
            Operation::RdmaReadRequest | Operation::Flush | Operation::AtomicWrite => true,
            _ => false,
        };
        assert_eq!(h.contains(ExtHeader::Reth), reth, "{name}");
        // An AETH on the first and last read response, on every ACK.
        let aeth = match info.operation {
            Operation::RdmaReadResponse => info.position != Position::Middle,
            Operation::Acknowledge | Operation::AtomicAcknowledge => true,
            _ => false,
        };
        assert_eq!(h.contains(ExtHeader::Aeth), aeth, "{name}");
        let class = match info.operation {
            Operation::RdmaReadResponse => Class::ReadResponse,
            Operation::Acknowledge | Operation::AtomicAcknowledge => Class::Ack,
            _ => Class::Request,
        };
        assert_eq!(info.class, class);
        assert!(info.header_len <= MAX_HEADER_LEN);
        assert_eq!(Opcode::try_from(op.value()), Ok(op));
        assert_eq!(op.transport(), info.transport);
    }
    assert_eq!(Opcode::try_from(0x15), Err(0x15));
}
