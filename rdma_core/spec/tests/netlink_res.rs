// SPDX-License-Identifier: GPL-2.0

//! The resource and statistics commands of the RDMA netlink codec
//! (`rdma_spec::netlink::nldev`): the requests iproute2's `rdma res` and
//! `rdma statistic` send (as `rdma/res.c` and `rdma/stat.c` of iproute2
//! 6.1 build them), and the replies read the way those files read them:
//! the summary table's entries each with a name and a u64, a QP entry
//! with LQPN, SQ_PSN, TYPE and STATE, a counter with a name and a u64;
//! a table longer than one datagram split over several messages that
//! together list every object once, in order.

use std::collections::BTreeMap;

use rdma_spec::netlink::msg::{flags, Attr, Message, Messages, Out, NLA_F_NESTED};
use rdma_spec::netlink::nldev::{
    self, attr, cmd, Cmd, CqEntry, CtxEntry, DevHandle, HwCounter, MrEntry, Owner, PdEntry,
    QpEntry, ReplyTo, ResKind, ResSummary, SrqEntry,
};
use rdma_spec::netlink::NlError;

#[path = "common/nlattr.rs"]
mod nlattr;
use nlattr::nla;

fn message(op: u16, flags: u16, attrs: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = attrs.concat();
    let mut m = Vec::new();
    m.extend_from_slice(&(16 + body.len() as u32).to_ne_bytes());
    m.extend_from_slice(&nldev::nl_type(5, op).to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&7u32.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&body);
    m
}

fn decode(bytes: &[u8]) -> Result<Cmd<'_>, NlError> {
    let m = Messages::new(bytes).next().unwrap().unwrap();
    nldev::decode(&m).map(|r| r.cmd)
}

fn u32a(ty: u16, v: u32) -> Vec<u8> {
    nla(ty, &v.to_ne_bytes())
}

const DOIT: u16 = flags::REQUEST | flags::ACK;
const DUMP: u16 = flags::REQUEST | flags::ACK | flags::DUMP;

#[test]
fn rdma_res_and_statistic_requests() {
    // `rdma res`: a RES_GET doit per device (no dump flag).
    let r = message(cmd::RES_GET, DOIT, &[u32a(attr::DEV_INDEX, 2)]);
    assert_eq!(decode(&r), Ok(Cmd::ResGet { index: 2 }));
    let r = message(cmd::RES_GET, DUMP, &[]);
    assert_eq!(decode(&r), Ok(Cmd::ResGetDump));
    assert!(nldev::decode(&Messages::new(&r).next().unwrap().unwrap())
        .unwrap()
        .is_dump());
    assert_eq!(
        decode(&message(cmd::RES_GET, DOIT, &[])),
        Err(NlError::Missing {
            ty: attr::DEV_INDEX
        })
    );
    // `rdma res show qp`: a dump per device and port (port 0: no
    // PORT_INDEX).
    let r = message(cmd::RES_QP_GET, DUMP, &[u32a(attr::DEV_INDEX, 0)]);
    assert_eq!(
        decode(&r),
        Ok(Cmd::ResDump {
            kind: ResKind::Qp,
            index: 0,
            port: None
        })
    );
    let r = message(
        cmd::RES_QP_GET,
        DUMP,
        &[u32a(attr::DEV_INDEX, 0), u32a(attr::PORT_INDEX, 1)],
    );
    assert_eq!(
        decode(&r),
        Ok(Cmd::ResDump {
            kind: ResKind::Qp,
            index: 0,
            port: Some(1)
        })
    );
    for (op, kind) in [
        (cmd::RES_CM_ID_GET, ResKind::CmId),
        (cmd::RES_CQ_GET, ResKind::Cq),
        (cmd::RES_MR_GET, ResKind::Mr),
        (cmd::RES_PD_GET, ResKind::Pd),
        (cmd::RES_CTX_GET, ResKind::Ctx),
        (cmd::RES_SRQ_GET, ResKind::Srq),
    ] {
        let r = message(op, DUMP, &[u32a(attr::DEV_INDEX, 1)]);
        assert_eq!(
            decode(&r),
            Ok(Cmd::ResDump {
                kind,
                index: 1,
                port: None
            })
        );
        assert_eq!(kind.cmd(), op);
        assert_eq!(ResKind::of_cmd(op), Some(kind));
    }
    // `rdma res show qp lqpn 17` tries the doit first: left to the dump.
    let r = message(
        cmd::RES_QP_GET,
        DOIT,
        &[u32a(attr::DEV_INDEX, 0), u32a(attr::RES_LQPN, 17)],
    );
    assert_eq!(decode(&r), Err(NlError::Unsupported(cmd::RES_QP_GET)));
    // A dump without a device is refused (EINVAL), as the kernel does.
    assert_eq!(
        decode(&message(cmd::RES_QP_GET, DUMP, &[])),
        Err(NlError::Missing {
            ty: attr::DEV_INDEX
        })
    );
    // DRIVER_DETAILS must be a u8.
    let r = message(
        cmd::RES_QP_GET,
        DUMP,
        &[u32a(attr::DEV_INDEX, 0), u32a(attr::DRIVER_DETAILS, 1)],
    );
    assert_eq!(
        decode(&r),
        Err(NlError::BadAttrLen {
            ty: attr::DRIVER_DETAILS,
            len: 4
        })
    );
    let r = message(
        cmd::RES_QP_GET,
        DUMP,
        &[u32a(attr::DEV_INDEX, 0), nla(attr::DRIVER_DETAILS, &[1])],
    );
    assert!(decode(&r).is_ok());

    // `rdma statistic show`: a STAT_GET doit per port.
    let r = message(
        cmd::STAT_GET,
        DOIT,
        &[u32a(attr::DEV_INDEX, 0), u32a(attr::PORT_INDEX, 1)],
    );
    assert_eq!(decode(&r), Ok(Cmd::StatGet { index: 0, port: 1 }));
    assert_eq!(
        decode(&message(cmd::STAT_GET, DOIT, &[u32a(attr::DEV_INDEX, 0)])),
        Err(NlError::Missing {
            ty: attr::PORT_INDEX
        })
    );
    // `rdma statistic qp show`: a dump of bound counters (STAT_RES QP).
    let r = message(
        cmd::STAT_GET,
        DUMP,
        &[
            u32a(attr::DEV_INDEX, 0),
            u32a(attr::PORT_INDEX, 1),
            u32a(attr::STAT_RES, u32::from(attr::RES_QP)),
        ],
    );
    assert_eq!(
        decode(&r),
        Ok(Cmd::StatGetDump {
            index: 0,
            port: Some(1),
            res: u32::from(attr::RES_QP)
        })
    );
    // A dump without STAT_RES is EINVAL (the kernel's answer too).
    let e = decode(&message(cmd::STAT_GET, DUMP, &[u32a(attr::DEV_INDEX, 0)])).unwrap_err();
    assert_eq!(e, NlError::Missing { ty: attr::STAT_RES });
    assert_eq!(e.errno(), rdma_spec::netlink::EINVAL);
    // A doit with STAT_RES (one object's counters) is not built.
    let r = message(
        cmd::STAT_GET,
        DOIT,
        &[
            u32a(attr::DEV_INDEX, 0),
            u32a(attr::STAT_RES, u32::from(attr::RES_MR)),
        ],
    );
    assert_eq!(decode(&r), Err(NlError::Unsupported(cmd::STAT_GET)));
}

/// Attributes by type, each once (strings NUL-terminated and integers of
/// their size are checked by the reader).
fn table<'a>(attrs: impl Iterator<Item = Result<Attr<'a>, NlError>>) -> BTreeMap<u16, Attr<'a>> {
    let mut t = BTreeMap::new();
    for a in attrs {
        let a = a.expect("valid attribute");
        assert!(t.insert(a.ty, a).is_none(), "attribute {} twice", a.ty);
    }
    t
}

fn messages(bytes: &[u8]) -> Vec<Message<'_>> {
    Messages::new(bytes).map(|m| m.unwrap()).collect()
}

const TO: ReplyTo = ReplyTo { seq: 9, pid: 4242 };
const DEV: DevHandle<'static> = DevHandle {
    index: 3,
    name: b"rxe0",
};

#[test]
fn summary_reply_as_rdma_res_reads_it() {
    let mut buf = [0u8; 1024];
    let mut out = Out::new(&mut buf);
    let sum = ResSummary {
        pd: 2,
        cq: 3,
        qp: 4,
        cm_id: None,
        mr: 5,
        ctx: Some(1),
        srq: 0,
    };
    nldev::put_res_summary(&mut out, TO, false, DEV, &sum).unwrap();
    nldev::put_res_summary(&mut out, TO, true, DEV, &sum).unwrap();
    let ms = messages(out.bytes());
    assert_eq!(ms.len(), 2);
    assert_eq!(ms[0].hdr.flags, 0);
    assert_eq!(ms[1].hdr.flags, flags::MULTI);
    for m in &ms {
        assert_eq!(m.hdr.ty, 0x1409);
        assert_eq!((m.hdr.seq, m.hdr.pid), (9, 4242));
        let t = table(m.attrs(0));
        assert_eq!(t[&attr::DEV_INDEX].u32(), Ok(3));
        assert_eq!(t[&attr::DEV_NAME].str_z(63), Ok(&b"rxe0"[..]));
        let s = t[&attr::RES_SUMMARY];
        // The kernel's nla_nest_start_noflag: no NLA_F_NESTED.
        assert!(!s.nested_flag);
        let rows: Vec<(Vec<u8>, u64)> = s
            .nested()
            .map(|e| {
                let e = e.unwrap();
                assert_eq!(e.ty, attr::RES_SUMMARY_ENTRY);
                let l = table(e.nested());
                assert_eq!(l.len(), 2);
                (
                    l[&attr::RES_SUMMARY_ENTRY_NAME].str_z(63).unwrap().to_vec(),
                    l[&attr::RES_SUMMARY_ENTRY_CURR].u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(Vec<u8>, u64)> = [
            ("pd", 2),
            ("cq", 3),
            ("qp", 4),
            ("mr", 5),
            ("ctx", 1),
            ("srq", 0),
        ]
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), *v))
        .collect();
        assert_eq!(rows, want);
    }
    // Exact bytes of a one-row table: handle, then nest(15){nest(16){
    // "qp\0" u64}}.
    let mut b = [0u8; 256];
    let mut o = Out::new(&mut b);
    let only_qp = ResSummary {
        cm_id: None,
        ctx: None,
        ..ResSummary::default()
    };
    nldev::put_res_summary(&mut o, TO, false, DEV, &only_qp).unwrap();
    let m = messages(o.bytes()).remove(0);
    let t = table(m.attrs(0));
    // No cm_id or ctx row when they are not counted.
    assert_eq!(t[&attr::RES_SUMMARY].nested().count(), 5);
    let first = t[&attr::RES_SUMMARY].value;
    assert_eq!(
        &first[..24],
        &[
            24, 0, 16, 0, // entry, 24 bytes
            7, 0, 17, 0, b'p', b'd', 0, 0, // name "pd\0", padded
            12, 0, 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, // curr 0
        ]
    );
}

fn rc(lqpn: u32) -> QpEntry<'static> {
    QpEntry {
        port: Some(1),
        lqpn,
        pdn: 2,
        rqpn: lqpn + 1000,
        rq_psn: 0x10,
        sq_psn: 0x20,
        path_mig_state: 0,
        qp_type: 2,
        state: 3,
        owner: Owner::User { pid: Some(77) },
    }
}

#[test]
fn qp_entries_as_rdma_res_qp_reads_them() {
    let ud = QpEntry {
        port: None,
        lqpn: 1,
        qp_type: 1,
        state: 0,
        owner: Owner::Kernel { name: b"ib_mad" },
        ..rc(1)
    };
    let mut buf = [0u8; 1024];
    let mut out = Out::new(&mut buf);
    assert_eq!(
        nldev::put_res_table(&mut out, TO, DEV, &[rc(17), ud]),
        Ok(2)
    );
    let m = messages(out.bytes()).remove(0);
    assert_eq!(m.hdr.ty, 0x140a);
    assert_eq!(m.hdr.flags, flags::MULTI);
    let t = table(m.attrs(0));
    assert_eq!(t[&attr::DEV_INDEX].u32(), Ok(3));
    let entries: Vec<_> = t[&attr::RES_QP]
        .nested()
        .map(|e| {
            let e = e.unwrap();
            assert_eq!(e.ty, attr::RES_QP_ENTRY);
            table(e.nested())
        })
        .collect();
    assert_eq!(entries.len(), 2);
    let e = &entries[0];
    // What res_qp_line requires, and the rest of an RC QP's line.
    assert_eq!(e[&attr::RES_LQPN].u32(), Ok(17));
    assert_eq!(e[&attr::RES_SQ_PSN].u32(), Ok(0x20));
    assert_eq!(e[&attr::RES_TYPE].u8(), Ok(2));
    assert_eq!(e[&attr::RES_STATE].u8(), Ok(3));
    assert_eq!(e[&attr::PORT_INDEX].u32(), Ok(1));
    assert_eq!(e[&attr::RES_PDN].u32(), Ok(2));
    assert_eq!(e[&attr::RES_RQPN].u32(), Ok(1017));
    assert_eq!(e[&attr::RES_RQ_PSN].u32(), Ok(0x10));
    assert_eq!(e[&attr::RES_PATH_MIG_STATE].u8(), Ok(0));
    assert_eq!(e[&attr::RES_PID].u32(), Ok(77));
    assert!(!e.contains_key(&attr::RES_KERN_NAME));
    assert_eq!(e.len(), 10);
    // A kernel GSI QP without a port yet: no port, PDN, RQPN, RQ_PSN,
    // path migration state or PID; its owner's name.
    let e = &entries[1];
    let keys: Vec<u16> = e.keys().copied().collect();
    assert_eq!(
        keys,
        vec![
            attr::RES_LQPN,
            attr::RES_SQ_PSN,
            attr::RES_TYPE,
            attr::RES_STATE,
            attr::RES_KERN_NAME
        ]
    );
    assert_eq!(e[&attr::RES_KERN_NAME].str_z(63), Ok(&b"ib_mad"[..]));
    // Port filtering as the kernel does it.
    assert!(rc(17).on_port(None) && rc(17).on_port(Some(0)) && rc(17).on_port(Some(1)));
    assert!(!rc(17).on_port(Some(2)) && !ud.on_port(Some(1)));
    // A user QP whose process is gone: no PID, still its PDN.
    let mut b = [0u8; 256];
    let mut o = Out::new(&mut b);
    let gone = QpEntry {
        owner: Owner::User { pid: None },
        ..rc(18)
    };
    nldev::put_res_table(&mut o, TO, DEV, &[gone]).unwrap();
    let m = messages(o.bytes()).remove(0);
    let t = table(m.attrs(0));
    let e = table(t[&attr::RES_QP].nested().next().unwrap().unwrap().nested());
    assert!(!e.contains_key(&attr::RES_PID) && e.contains_key(&attr::RES_PDN));
}

/// A table longer than one datagram: the caller sends each datagram and
/// starts the next with the first entry that did not fit, until every
/// entry went; every message is complete, and the entries come back in
/// order, each once.
#[test]
fn long_tables_continue_over_datagrams() {
    let all: Vec<QpEntry<'static>> = (0..500).map(|i| rc(16 + i)).collect();
    let mut datagrams: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; nldev::DATAGRAM_MAX];
    let mut out = Out::new(&mut buf);
    let mut done = 0;
    while done < all.len() {
        match nldev::put_res_table(&mut out, TO, DEV, &all[done..]) {
            Ok(n) => {
                assert!(n > 0);
                done += n;
            }
            Err(NlError::NoSpace) => {
                assert!(!out.is_empty(), "an entry never fits");
                datagrams.push(out.bytes().to_vec());
                out.clear();
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    nldev::put_done(&mut out, TO).unwrap();
    datagrams.push(out.bytes().to_vec());
    assert!(datagrams.len() > 5);
    let mut got = Vec::new();
    let mut done_seen = 0;
    for d in &datagrams {
        assert!(d.len() <= nldev::DATAGRAM_MAX);
        for m in messages(d) {
            if m.hdr.ty == 3 {
                done_seen += 1;
                continue;
            }
            assert_eq!(m.hdr.ty, 0x140a);
            let t = table(m.attrs(0));
            assert_eq!(t[&attr::DEV_NAME].str_z(63), Ok(&b"rxe0"[..]));
            for e in t[&attr::RES_QP].nested() {
                got.push(table(e.unwrap().nested())[&attr::RES_LQPN].u32().unwrap());
            }
        }
    }
    assert_eq!(done_seen, 1);
    assert_eq!(got, (16..516).collect::<Vec<u32>>());

    // No entries: nothing sent. Room for not even one entry: NoSpace and
    // nothing written; every buffer size either holds a whole message or
    // nothing.
    let mut b = [0u8; 64];
    let mut o = Out::new(&mut b);
    assert_eq!(
        nldev::put_res_table::<QpEntry<'_>>(&mut o, TO, DEV, &[]),
        Ok(0)
    );
    assert!(o.is_empty());
    assert_eq!(
        nldev::put_res_table(&mut o, TO, DEV, &[rc(16)]),
        Err(NlError::NoSpace)
    );
    assert!(o.is_empty());
    for size in 0..400 {
        let mut b = vec![0u8; size];
        let mut o = Out::new(&mut b);
        match nldev::put_res_table(&mut o, TO, DEV, &[rc(16), rc(17), rc(18)]) {
            Ok(n) => {
                let m = messages(o.bytes()).remove(0);
                let t = table(m.attrs(0));
                assert_eq!(t[&attr::RES_QP].nested().count(), n);
                assert_eq!(m.hdr.len as usize, o.len());
            }
            Err(e) => {
                assert_eq!(e, NlError::NoSpace);
                assert!(o.is_empty());
            }
        }
    }
}

#[test]
fn cq_mr_pd_entries() {
    let mut buf = [0u8; 2048];
    let mut out = Out::new(&mut buf);
    let cq = CqEntry {
        cqn: 4,
        cqe: 255,
        users: 2,
        poll_ctx: Some(1),
        dim: false,
        ctxn: 0,
        owner: Owner::Kernel { name: b"rtrs" },
    };
    let mr = MrEntry {
        mrn: 6,
        keys: Some((0x601, 0x600)),
        length: 4096,
        pdn: 1,
        owner: Owner::User { pid: Some(10) },
    };
    let pd = PdEntry {
        pdn: 1,
        keys: None,
        users: 3,
        ctxn: 2,
        owner: Owner::User { pid: Some(10) },
    };
    assert_eq!(nldev::put_res_table(&mut out, TO, DEV, &[cq]), Ok(1));
    assert_eq!(nldev::put_res_table(&mut out, TO, DEV, &[mr]), Ok(1));
    assert_eq!(nldev::put_res_table(&mut out, TO, DEV, &[pd]), Ok(1));
    let ms = messages(out.bytes());
    let entry = |m: &Message<'_>, table_ty: u16| {
        let t = table(m.attrs(0));
        let e = t[&table_ty].nested().next().unwrap().unwrap();
        table(e.nested())
            .into_iter()
            .map(|(k, a)| (k, a.value.to_vec()))
            .collect::<BTreeMap<u16, Vec<u8>>>()
    };
    assert_eq!(ms[0].hdr.ty, 0x140c);
    let e = entry(&ms[0], attr::RES_CQ);
    // res_cq_line requires CQE and USECNT.
    assert_eq!(e[&attr::RES_CQE], 255u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_USECNT], 2u64.to_ne_bytes());
    assert_eq!(e[&attr::RES_POLL_CTX], [1]);
    assert_eq!(e[&attr::RES_CQN], 4u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_KERN_NAME], b"rtrs\0");
    assert!(!e.contains_key(&attr::RES_CTXN));
    assert_eq!(ms[1].hdr.ty, 0x140d);
    let e = entry(&ms[1], attr::RES_MR);
    // res_mr_line requires MRLEN.
    assert_eq!(e[&attr::RES_MRLEN], 4096u64.to_ne_bytes());
    assert_eq!(e[&attr::RES_RKEY], 0x601u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_LKEY], 0x600u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_MRN], 6u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_PDN], 1u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_PID], 10u32.to_ne_bytes());
    assert_eq!(ms[2].hdr.ty, 0x140e);
    let e = entry(&ms[2], attr::RES_PD);
    // res_pd_line requires USECNT.
    assert_eq!(e[&attr::RES_USECNT], 3u64.to_ne_bytes());
    assert_eq!(e[&attr::RES_PDN], 1u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_CTXN], 2u32.to_ne_bytes());
    assert!(!e.contains_key(&attr::RES_LOCAL_DMA_LKEY));
    // Keys only for a privileged requester.
    let mut b = [0u8; 256];
    let mut o = Out::new(&mut b);
    let no_keys = MrEntry { keys: None, ..mr };
    let admin_pd = PdEntry {
        keys: Some(Some(0x1234)),
        ..pd
    };
    nldev::put_res_table(&mut o, TO, DEV, &[no_keys]).unwrap();
    nldev::put_res_table(&mut o, TO, DEV, &[admin_pd]).unwrap();
    let ms = messages(o.bytes());
    let e = entry(&ms[0], attr::RES_MR);
    assert!(!e.contains_key(&attr::RES_RKEY) && !e.contains_key(&attr::RES_LKEY));
    let e = entry(&ms[1], attr::RES_PD);
    assert_eq!(e[&attr::RES_LOCAL_DMA_LKEY], 0u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_UNSAFE_GLOBAL_RKEY], 0x1234u32.to_ne_bytes());
}

#[test]
fn srq_entries_list_their_qps_as_runs() {
    assert_eq!(
        nldev::qpn_runs(&[17, 18, 19, 21, 30, 31, u32::MAX]).collect::<Vec<_>>(),
        vec![(17, 19), (21, 21), (30, 31), (u32::MAX, u32::MAX)]
    );
    assert_eq!(
        nldev::qpn_runs(&[5, 5, 4]).collect::<Vec<_>>(),
        vec![(5, 5), (5, 5), (4, 4)]
    );
    assert_eq!(nldev::qpn_runs(&[]).count(), 0);

    let mut buf = [0u8; 1024];
    let mut out = Out::new(&mut buf);
    let used = SrqEntry {
        srqn: 3,
        srq_type: 0,
        pdn: 2,
        qpns: &[17, 18, 19, 21],
        owner: Owner::User { pid: Some(77) },
    };
    let unused = SrqEntry {
        srqn: 4,
        qpns: &[],
        owner: Owner::Kernel { name: b"ib_srpt" },
        ..used
    };
    assert_eq!(
        nldev::put_res_table(&mut out, TO, DEV, &[used, unused]),
        Ok(2)
    );
    let ms = messages(out.bytes());
    assert_eq!(ms.len(), 1);
    // RDMA_NLDEV_CMD_RES_SRQ_GET.
    assert_eq!(ms[0].hdr.ty, 0x1417);
    let t = table(ms[0].attrs(0));
    let entries: Vec<_> = t[&attr::RES_SRQ]
        .nested()
        .map(|e| table(e.unwrap().nested()))
        .collect();
    assert_eq!(entries.len(), 2);
    let e = &entries[0];
    assert_eq!(e[&attr::RES_SRQN].value, 3u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_TYPE].value, [0]);
    assert_eq!(e[&attr::RES_PDN].value, 2u32.to_ne_bytes());
    assert_eq!(e[&attr::RES_PID].value, 77u32.to_ne_bytes());
    let qps: Vec<_> = e[&attr::RES_QP]
        .nested()
        .map(|q| table(q.unwrap().nested()))
        .collect();
    assert_eq!(qps.len(), 2);
    assert_eq!(qps[0][&attr::MIN_RANGE].value, 17u32.to_ne_bytes());
    assert_eq!(qps[0][&attr::MAX_RANGE].value, 19u32.to_ne_bytes());
    assert!(!qps[0].contains_key(&attr::RES_LQPN));
    assert_eq!(qps[1][&attr::RES_LQPN].value, 21u32.to_ne_bytes());
    assert!(!qps[1].contains_key(&attr::MIN_RANGE));
    let e = &entries[1];
    assert_eq!(e[&attr::RES_QP].nested().count(), 0);
    assert_eq!(e[&attr::RES_KERN_NAME].value, b"ib_srpt\0");
    assert!(!e.contains_key(&attr::RES_PID));
}

#[test]
fn ctx_entries_carry_their_number_and_pid() {
    let mut buf = [0u8; 256];
    let mut out = Out::new(&mut buf);
    let ctxs = [
        CtxEntry {
            ctxn: 0,
            owner: Owner::User { pid: Some(4242) },
        },
        CtxEntry {
            ctxn: 7,
            owner: Owner::User { pid: None },
        },
    ];
    assert_eq!(nldev::put_res_table(&mut out, TO, DEV, &ctxs), Ok(2));
    let ms = messages(out.bytes());
    // RDMA_NLDEV_CMD_RES_CTX_GET.
    assert_eq!(ms[0].hdr.ty, 0x1416);
    let t = table(ms[0].attrs(0));
    let entries: Vec<_> = t[&attr::RES_CTX]
        .nested()
        .map(|e| table(e.unwrap().nested()))
        .collect();
    assert_eq!(entries[0][&attr::RES_CTXN].value, 0u32.to_ne_bytes());
    assert_eq!(entries[0][&attr::RES_PID].value, 4242u32.to_ne_bytes());
    assert_eq!(entries[1][&attr::RES_CTXN].value, 7u32.to_ne_bytes());
    // A process gone: no PID.
    assert!(!entries[1].contains_key(&attr::RES_PID));
}

#[test]
fn stat_reply_as_rdma_statistic_reads_it() {
    let counters = [
        HwCounter {
            name: b"sent_pkts",
            value: 12,
        },
        HwCounter {
            name: b"rcvd_pkts",
            value: u64::MAX,
        },
        HwCounter {
            name: b"duplicate_request",
            value: 0,
        },
    ];
    let mut buf = [0u8; 512];
    let mut out = Out::new(&mut buf);
    nldev::put_stat(&mut out, TO, DEV, 1, &counters).unwrap();
    let m = messages(out.bytes()).remove(0);
    assert_eq!(m.hdr.ty, 0x1411);
    assert_eq!(m.hdr.flags, 0);
    let t = table(m.attrs(0));
    // stat_show_parse_cb requires these four.
    assert_eq!(t[&attr::DEV_INDEX].u32(), Ok(3));
    assert_eq!(t[&attr::DEV_NAME].str_z(63), Ok(&b"rxe0"[..]));
    assert_eq!(t[&attr::PORT_INDEX].u32(), Ok(1));
    let h = t[&attr::STAT_HWCOUNTERS];
    assert!(h.nested_flag);
    let got: Vec<(Vec<u8>, u64)> = h
        .nested()
        .map(|e| {
            let e = e.unwrap();
            assert_eq!(e.ty, attr::STAT_HWCOUNTER_ENTRY);
            assert!(e.nested_flag);
            let l = table(e.nested());
            (
                l[&attr::STAT_HWCOUNTER_ENTRY_NAME]
                    .str_z(63)
                    .unwrap()
                    .to_vec(),
                l[&attr::STAT_HWCOUNTER_ENTRY_VALUE].u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(Vec<u8>, u64)> = counters
        .iter()
        .map(|c| (c.name.to_vec(), c.value))
        .collect();
    assert_eq!(got, want);
    // The nested header bit, on the wire (after the index, 8 bytes, the
    // name, 12, and the port, 8).
    let raw = &m.payload[8 + 12..];
    let ty = u16::from_ne_bytes([raw[2], raw[3]]);
    assert_eq!(ty, attr::PORT_INDEX);
    let raw = &m.payload[8 + 12 + 8..];
    let ty = u16::from_ne_bytes([raw[2], raw[3]]);
    assert_eq!(ty, attr::STAT_HWCOUNTERS | NLA_F_NESTED);
    // Too many counters for the buffer: nothing written.
    let mut small = [0u8; 80];
    let mut o = Out::new(&mut small);
    assert_eq!(
        nldev::put_stat(&mut o, TO, DEV, 1, &counters),
        Err(NlError::NoSpace)
    );
    assert!(o.is_empty());
}
