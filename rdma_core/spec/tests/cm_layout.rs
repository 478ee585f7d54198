// SPDX-License-Identifier: GPL-2.0

//! Layout of the CM messages against byte images computed by hand from
//! include/rdma/ibta_vol1_c12.h (Linux 6.12).
//!
//! Each table entry sets one field of an otherwise zero message to all ones
//! and lists the bytes that must then be non-zero, with their values, as the
//! header's `CM_FIELD*_LOC(msg, byte, [bit,] width)` place them: the
//! offsets are those of the header, counted from the start of the CM payload
//! (after the 24-byte MAD header); a field starts at the most significant
//! bit of its byte, or `bit` bits below it for `CM_FIELD_BLOC`. Every other
//! byte of the 232 must stay zero, and the image must parse back to the
//! same message.

use rdma_spec::attr::Gid;
use rdma_spec::cm_msg::{
    tcp_service_id, Bytes, CmMessage, CmaHeader, Drep, Dreq, Mra, MsgResponse, Rej, RejReason, Rep,
    Req, ReqPath, Rtu, CM_PAYLOAD_LEN,
};
use rdma_spec::mad::{MadHeader, MAD_SIZE};

type Image = [u8; CM_PAYLOAD_LEN];

/// The image with the listed runs of bytes (offset, bytes) set.
fn image(runs: &[(usize, &[u8])]) -> Image {
    let mut p = [0u8; CM_PAYLOAD_LEN];
    for (at, bytes) in runs {
        p[*at..*at + bytes.len()].copy_from_slice(bytes);
    }
    p
}

const FF4: &[u8] = &[0xff; 4];
const FF3: &[u8] = &[0xff; 3];
const FF2: &[u8] = &[0xff; 2];
const FF1: &[u8] = &[0xff];
const FF8: &[u8] = &[0xff; 8];
const FF16: &[u8] = &[0xff; 16];

struct Case<M> {
    name: &'static str,
    set: fn(&mut M),
    runs: &'static [(usize, &'static [u8])],
}

/// Checks each case, that the cases do not overlap and that all of them
/// together give the image of the message with every field all ones.
fn check<M: Default + Copy + PartialEq + core::fmt::Debug>(
    cases: &[Case<M>],
    write: fn(&M, &mut [u8]),
    parse: fn(&[u8]) -> M,
) {
    let mut all = M::default();
    let mut union = [0u8; CM_PAYLOAD_LEN];
    for c in cases {
        let mut m = M::default();
        (c.set)(&mut m);
        (c.set)(&mut all);
        let mut got = [0u8; CM_PAYLOAD_LEN];
        write(&m, &mut got);
        let want = image(c.runs);
        assert_eq!(got, want, "{}", c.name);
        assert_eq!(parse(&want), m, "{}", c.name);
        for (u, w) in union.iter_mut().zip(want) {
            assert_eq!(*u & w, 0, "{} overlaps another field", c.name);
            *u |= w;
        }
    }
    let mut got = [0u8; CM_PAYLOAD_LEN];
    write(&all, &mut got);
    assert_eq!(got, union);
    assert_eq!(parse(&union), all);
}

fn pd<const N: usize>() -> Bytes<N> {
    Bytes([0xff; N])
}

#[rustfmt::skip]
const REQ_CASES: &[Case<Req>] = &[
    // CM_REQ_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_REQ_VENDOR_ID CM_FIELD32_LOC(5, 24)
    Case { name: "vendor_id", set: |m| m.vendor_id = 0xff_ffff, runs: &[(5, FF3)] },
    // CM_REQ_SERVICE_ID CM_FIELD64_LOC(8)
    Case { name: "service_id", set: |m| m.service_id = u64::MAX, runs: &[(8, FF8)] },
    // CM_REQ_LOCAL_CA_GUID CM_FIELD64_LOC(16)
    Case { name: "local_ca_guid", set: |m| m.local_ca_guid = u64::MAX, runs: &[(16, FF8)] },
    // CM_REQ_LOCAL_Q_KEY CM_FIELD32_LOC(28, 32)
    Case { name: "local_qkey", set: |m| m.local_qkey = u32::MAX, runs: &[(28, FF4)] },
    // CM_REQ_LOCAL_QPN CM_FIELD32_LOC(32, 24)
    Case { name: "local_qpn", set: |m| m.local_qpn = 0xff_ffff, runs: &[(32, FF3)] },
    // CM_REQ_RESPONDER_RESOURCES CM_FIELD8_LOC(35, 8)
    Case { name: "responder_resources", set: |m| m.responder_resources = 0xff, runs: &[(35, FF1)] },
    // CM_REQ_LOCAL_EECN CM_FIELD32_LOC(36, 24)
    Case { name: "local_eecn", set: |m| m.local_eecn = 0xff_ffff, runs: &[(36, FF3)] },
    // CM_REQ_INITIATOR_DEPTH CM_FIELD8_LOC(39, 8)
    Case { name: "initiator_depth", set: |m| m.initiator_depth = 0xff, runs: &[(39, FF1)] },
    // CM_REQ_REMOTE_EECN CM_FIELD32_LOC(40, 24)
    Case { name: "remote_eecn", set: |m| m.remote_eecn = 0xff_ffff, runs: &[(40, FF3)] },
    // CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT CM_FIELD8_LOC(43, 5): bits 7-3
    Case { name: "remote_cm_response_timeout", set: |m| m.remote_cm_response_timeout = 0x1f, runs: &[(43, &[0xf8])] },
    // CM_REQ_TRANSPORT_SERVICE_TYPE CM_FIELD_BLOC(43, 5, 2): bits 2-1
    Case { name: "transport_service_type", set: |m| m.transport_service_type = 3, runs: &[(43, &[0x06])] },
    // CM_REQ_END_TO_END_FLOW_CONTROL CM_FIELD_BLOC(43, 7, 1): bit 0
    Case { name: "end_to_end_flow_control", set: |m| m.end_to_end_flow_control = true, runs: &[(43, &[0x01])] },
    // CM_REQ_STARTING_PSN CM_FIELD32_LOC(44, 24)
    Case { name: "starting_psn", set: |m| m.starting_psn = 0xff_ffff, runs: &[(44, FF3)] },
    // CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT CM_FIELD8_LOC(47, 5)
    Case { name: "local_cm_response_timeout", set: |m| m.local_cm_response_timeout = 0x1f, runs: &[(47, &[0xf8])] },
    // CM_REQ_RETRY_COUNT CM_FIELD_BLOC(47, 5, 3)
    Case { name: "retry_count", set: |m| m.retry_count = 7, runs: &[(47, &[0x07])] },
    // CM_REQ_PARTITION_KEY CM_FIELD16_LOC(48, 16)
    Case { name: "partition_key", set: |m| m.partition_key = 0xffff, runs: &[(48, FF2)] },
    // CM_REQ_PATH_PACKET_PAYLOAD_MTU CM_FIELD8_LOC(50, 4)
    Case { name: "path_mtu", set: |m| m.path_mtu = 0xf, runs: &[(50, &[0xf0])] },
    // CM_REQ_RDC_EXISTS CM_FIELD_BLOC(50, 4, 1)
    Case { name: "rdc_exists", set: |m| m.rdc_exists = true, runs: &[(50, &[0x08])] },
    // CM_REQ_RNR_RETRY_COUNT CM_FIELD_BLOC(50, 5, 3)
    Case { name: "rnr_retry_count", set: |m| m.rnr_retry_count = 7, runs: &[(50, &[0x07])] },
    // CM_REQ_MAX_CM_RETRIES CM_FIELD8_LOC(51, 4)
    Case { name: "max_cm_retries", set: |m| m.max_cm_retries = 0xf, runs: &[(51, &[0xf0])] },
    // CM_REQ_SRQ CM_FIELD_BLOC(51, 4, 1)
    Case { name: "srq", set: |m| m.srq = true, runs: &[(51, &[0x08])] },
    // CM_REQ_EXTENDED_TRANSPORT_TYPE CM_FIELD_BLOC(51, 5, 3)
    Case { name: "extended_transport_type", set: |m| m.extended_transport_type = 7, runs: &[(51, &[0x07])] },
    // CM_REQ_PRIMARY_LOCAL_PORT_LID CM_FIELD16_LOC(52, 16)
    Case { name: "primary local_lid", set: |m| m.primary_path.local_lid = 0xffff, runs: &[(52, FF2)] },
    // CM_REQ_PRIMARY_REMOTE_PORT_LID CM_FIELD16_LOC(54, 16)
    Case { name: "primary remote_lid", set: |m| m.primary_path.remote_lid = 0xffff, runs: &[(54, FF2)] },
    // CM_REQ_PRIMARY_LOCAL_PORT_GID CM_FIELD_MLOC(56, 128)
    Case { name: "primary local_gid", set: |m| m.primary_path.local_gid = Gid([0xff; 16]), runs: &[(56, FF16)] },
    // CM_REQ_PRIMARY_REMOTE_PORT_GID CM_FIELD_MLOC(72, 128)
    Case { name: "primary remote_gid", set: |m| m.primary_path.remote_gid = Gid([0xff; 16]), runs: &[(72, FF16)] },
    // CM_REQ_PRIMARY_FLOW_LABEL CM_FIELD32_LOC(88, 20): word bits 31-12
    Case { name: "primary flow_label", set: |m| m.primary_path.flow_label = 0xf_ffff, runs: &[(88, &[0xff, 0xff, 0xf0])] },
    // CM_REQ_PRIMARY_PACKET_RATE CM_FIELD_BLOC(91, 2, 6)
    Case { name: "primary packet_rate", set: |m| m.primary_path.packet_rate = 0x3f, runs: &[(91, &[0x3f])] },
    // CM_REQ_PRIMARY_TRAFFIC_CLASS CM_FIELD8_LOC(92, 8)
    Case { name: "primary traffic_class", set: |m| m.primary_path.traffic_class = 0xff, runs: &[(92, FF1)] },
    // CM_REQ_PRIMARY_HOP_LIMIT CM_FIELD8_LOC(93, 8)
    Case { name: "primary hop_limit", set: |m| m.primary_path.hop_limit = 0xff, runs: &[(93, FF1)] },
    // CM_REQ_PRIMARY_SL CM_FIELD8_LOC(94, 4)
    Case { name: "primary sl", set: |m| m.primary_path.sl = 0xf, runs: &[(94, &[0xf0])] },
    // CM_REQ_PRIMARY_SUBNET_LOCAL CM_FIELD_BLOC(94, 4, 1)
    Case { name: "primary subnet_local", set: |m| m.primary_path.subnet_local = true, runs: &[(94, &[0x08])] },
    // CM_REQ_PRIMARY_LOCAL_ACK_TIMEOUT CM_FIELD8_LOC(95, 5)
    Case { name: "primary local_ack_timeout", set: |m| m.primary_path.local_ack_timeout = 0x1f, runs: &[(95, &[0xf8])] },
    // CM_REQ_ALTERNATE_LOCAL_PORT_LID CM_FIELD16_LOC(96, 16)
    Case { name: "alternate local_lid", set: |m| m.alternate_path.local_lid = 0xffff, runs: &[(96, FF2)] },
    // CM_REQ_ALTERNATE_REMOTE_PORT_LID CM_FIELD16_LOC(98, 16)
    Case { name: "alternate remote_lid", set: |m| m.alternate_path.remote_lid = 0xffff, runs: &[(98, FF2)] },
    // CM_REQ_ALTERNATE_LOCAL_PORT_GID CM_FIELD_MLOC(100, 128)
    Case { name: "alternate local_gid", set: |m| m.alternate_path.local_gid = Gid([0xff; 16]), runs: &[(100, FF16)] },
    // CM_REQ_ALTERNATE_REMOTE_PORT_GID CM_FIELD_MLOC(116, 128)
    Case { name: "alternate remote_gid", set: |m| m.alternate_path.remote_gid = Gid([0xff; 16]), runs: &[(116, FF16)] },
    // CM_REQ_ALTERNATE_FLOW_LABEL CM_FIELD32_LOC(132, 20)
    Case { name: "alternate flow_label", set: |m| m.alternate_path.flow_label = 0xf_ffff, runs: &[(132, &[0xff, 0xff, 0xf0])] },
    // CM_REQ_ALTERNATE_PACKET_RATE CM_FIELD_BLOC(135, 2, 6)
    Case { name: "alternate packet_rate", set: |m| m.alternate_path.packet_rate = 0x3f, runs: &[(135, &[0x3f])] },
    // CM_REQ_ALTERNATE_TRAFFIC_CLASS CM_FIELD8_LOC(136, 8)
    Case { name: "alternate traffic_class", set: |m| m.alternate_path.traffic_class = 0xff, runs: &[(136, FF1)] },
    // CM_REQ_ALTERNATE_HOP_LIMIT CM_FIELD8_LOC(137, 8)
    Case { name: "alternate hop_limit", set: |m| m.alternate_path.hop_limit = 0xff, runs: &[(137, FF1)] },
    // CM_REQ_ALTERNATE_SL CM_FIELD8_LOC(138, 4)
    Case { name: "alternate sl", set: |m| m.alternate_path.sl = 0xf, runs: &[(138, &[0xf0])] },
    // CM_REQ_ALTERNATE_SUBNET_LOCAL CM_FIELD_BLOC(138, 4, 1)
    Case { name: "alternate subnet_local", set: |m| m.alternate_path.subnet_local = true, runs: &[(138, &[0x08])] },
    // CM_REQ_ALTERNATE_LOCAL_ACK_TIMEOUT CM_FIELD8_LOC(139, 5)
    Case { name: "alternate local_ack_timeout", set: |m| m.alternate_path.local_ack_timeout = 0x1f, runs: &[(139, &[0xf8])] },
    // CM_REQ_SAP_SUPPORTED CM_FIELD_BLOC(139, 5, 1)
    Case { name: "sap_supported", set: |m| m.sap_supported = true, runs: &[(139, &[0x04])] },
    // CM_REQ_PRIVATE_DATA CM_FIELD_MLOC(140, 736)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(140, &[0xff; 92])] },
];

#[rustfmt::skip]
const REP_CASES: &[Case<Rep>] = &[
    // CM_REP_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_REP_REMOTE_COMM_ID CM_FIELD32_LOC(4, 32)
    Case { name: "remote_comm_id", set: |m| m.remote_comm_id = u32::MAX, runs: &[(4, FF4)] },
    // CM_REP_LOCAL_Q_KEY CM_FIELD32_LOC(8, 32)
    Case { name: "local_qkey", set: |m| m.local_qkey = u32::MAX, runs: &[(8, FF4)] },
    // CM_REP_LOCAL_QPN CM_FIELD32_LOC(12, 24)
    Case { name: "local_qpn", set: |m| m.local_qpn = 0xff_ffff, runs: &[(12, FF3)] },
    // CM_REP_VENDOR_ID_H/M/L CM_FIELD8_LOC(15/19/23, 8)
    Case { name: "vendor_id", set: |m| m.vendor_id = 0xff_ffff, runs: &[(15, FF1), (19, FF1), (23, FF1)] },
    // CM_REP_LOCAL_EE_CONTEXT_NUMBER CM_FIELD32_LOC(16, 24)
    Case { name: "local_eecn", set: |m| m.local_eecn = 0xff_ffff, runs: &[(16, FF3)] },
    // CM_REP_STARTING_PSN CM_FIELD32_LOC(20, 24)
    Case { name: "starting_psn", set: |m| m.starting_psn = 0xff_ffff, runs: &[(20, FF3)] },
    // CM_REP_RESPONDER_RESOURCES CM_FIELD8_LOC(24, 8)
    Case { name: "responder_resources", set: |m| m.responder_resources = 0xff, runs: &[(24, FF1)] },
    // CM_REP_INITIATOR_DEPTH CM_FIELD8_LOC(25, 8)
    Case { name: "initiator_depth", set: |m| m.initiator_depth = 0xff, runs: &[(25, FF1)] },
    // CM_REP_TARGET_ACK_DELAY CM_FIELD8_LOC(26, 5)
    Case { name: "target_ack_delay", set: |m| m.target_ack_delay = 0x1f, runs: &[(26, &[0xf8])] },
    // CM_REP_FAILOVER_ACCEPTED CM_FIELD_BLOC(26, 5, 2)
    Case { name: "failover_accepted", set: |m| m.failover_accepted = 3, runs: &[(26, &[0x06])] },
    // CM_REP_END_TO_END_FLOW_CONTROL CM_FIELD_BLOC(26, 7, 1)
    Case { name: "end_to_end_flow_control", set: |m| m.end_to_end_flow_control = true, runs: &[(26, &[0x01])] },
    // CM_REP_RNR_RETRY_COUNT CM_FIELD8_LOC(27, 3)
    Case { name: "rnr_retry_count", set: |m| m.rnr_retry_count = 7, runs: &[(27, &[0xe0])] },
    // CM_REP_SRQ CM_FIELD_BLOC(27, 3, 1)
    Case { name: "srq", set: |m| m.srq = true, runs: &[(27, &[0x10])] },
    // CM_REP_LOCAL_CA_GUID CM_FIELD64_LOC(28)
    Case { name: "local_ca_guid", set: |m| m.local_ca_guid = u64::MAX, runs: &[(28, FF8)] },
    // CM_REP_PRIVATE_DATA CM_FIELD_MLOC(36, 1568)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(36, &[0xff; 196])] },
];

#[rustfmt::skip]
const REJ_CASES: &[Case<Rej>] = &[
    // CM_REJ_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_REJ_REMOTE_COMM_ID CM_FIELD32_LOC(4, 32)
    Case { name: "remote_comm_id", set: |m| m.remote_comm_id = u32::MAX, runs: &[(4, FF4)] },
    // CM_REJ_MESSAGE_REJECTED CM_FIELD8_LOC(8, 2)
    Case { name: "message_rejected", set: |m| m.message_rejected = 3, runs: &[(8, &[0xc0])] },
    // CM_REJ_REJECTED_INFO_LENGTH CM_FIELD8_LOC(9, 7)
    Case { name: "reject_info_length", set: |m| m.reject_info_length = 0x7f, runs: &[(9, &[0xfe])] },
    // CM_REJ_REASON CM_FIELD16_LOC(10, 16)
    Case { name: "reason", set: |m| m.reason = 0xffff, runs: &[(10, FF2)] },
    // CM_REJ_ARI CM_FIELD_MLOC(12, 576)
    Case { name: "ari", set: |m| m.ari = pd(), runs: &[(12, &[0xff; 72])] },
    // CM_REJ_PRIVATE_DATA CM_FIELD_MLOC(84, 1184)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(84, &[0xff; 148])] },
];

#[rustfmt::skip]
const MRA_CASES: &[Case<Mra>] = &[
    // CM_MRA_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_MRA_REMOTE_COMM_ID CM_FIELD32_LOC(4, 32)
    Case { name: "remote_comm_id", set: |m| m.remote_comm_id = u32::MAX, runs: &[(4, FF4)] },
    // CM_MRA_MESSAGE_MRAED CM_FIELD8_LOC(8, 2)
    Case { name: "message_mraed", set: |m| m.message_mraed = 3, runs: &[(8, &[0xc0])] },
    // CM_MRA_SERVICE_TIMEOUT CM_FIELD8_LOC(9, 5)
    Case { name: "service_timeout", set: |m| m.service_timeout = 0x1f, runs: &[(9, &[0xf8])] },
    // CM_MRA_PRIVATE_DATA CM_FIELD_MLOC(10, 1776)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(10, &[0xff; 222])] },
];

#[rustfmt::skip]
const RTU_CASES: &[Case<Rtu>] = &[
    // CM_RTU_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_RTU_REMOTE_COMM_ID CM_FIELD32_LOC(4, 32)
    Case { name: "remote_comm_id", set: |m| m.remote_comm_id = u32::MAX, runs: &[(4, FF4)] },
    // CM_RTU_PRIVATE_DATA CM_FIELD_MLOC(8, 1792)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(8, &[0xff; 224])] },
];

#[rustfmt::skip]
const DREQ_CASES: &[Case<Dreq>] = &[
    // CM_DREQ_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_DREQ_REMOTE_COMM_ID CM_FIELD32_LOC(4, 32)
    Case { name: "remote_comm_id", set: |m| m.remote_comm_id = u32::MAX, runs: &[(4, FF4)] },
    // CM_DREQ_REMOTE_QPN_EECN CM_FIELD32_LOC(8, 24)
    Case { name: "remote_qpn_eecn", set: |m| m.remote_qpn_eecn = 0xff_ffff, runs: &[(8, FF3)] },
    // CM_DREQ_PRIVATE_DATA CM_FIELD_MLOC(12, 1760)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(12, &[0xff; 220])] },
];

#[rustfmt::skip]
const DREP_CASES: &[Case<Drep>] = &[
    // CM_DREP_LOCAL_COMM_ID CM_FIELD32_LOC(0, 32)
    Case { name: "local_comm_id", set: |m| m.local_comm_id = u32::MAX, runs: &[(0, FF4)] },
    // CM_DREP_REMOTE_COMM_ID CM_FIELD32_LOC(4, 32)
    Case { name: "remote_comm_id", set: |m| m.remote_comm_id = u32::MAX, runs: &[(4, FF4)] },
    // CM_DREP_PRIVATE_DATA CM_FIELD_MLOC(8, 1792)
    Case { name: "private_data", set: |m| m.private_data = pd(), runs: &[(8, &[0xff; 224])] },
];

#[test]
fn req_layout() {
    check(
        REQ_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Req::parse(p).unwrap(),
    );
}

#[test]
fn rep_layout() {
    check(
        REP_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Rep::parse(p).unwrap(),
    );
}

#[test]
fn rej_layout() {
    check(
        REJ_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Rej::parse(p).unwrap(),
    );
}

#[test]
fn mra_layout() {
    check(
        MRA_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Mra::parse(p).unwrap(),
    );
}

#[test]
fn rtu_layout() {
    check(
        RTU_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Rtu::parse(p).unwrap(),
    );
}

#[test]
fn dreq_layout() {
    check(
        DREQ_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Dreq::parse(p).unwrap(),
    );
}

#[test]
fn drep_layout() {
    check(
        DREP_CASES,
        |m, out| m.write(out).unwrap(),
        |p| Drep::parse(p).unwrap(),
    );
}

/// An rdma_cm REQ over RoCE for 10.0.0.1:50000 -> 10.0.0.2:4791, with the
/// values cm_format_req would put in, written out byte by byte.
#[test]
fn rdma_cm_req_bytes() {
    let mut pd = [0u8; 92];
    CmaHeader::ipv4(50000, [10, 0, 0, 1], [10, 0, 0, 2])
        .write(&mut pd)
        .unwrap();
    let req = Req {
        local_comm_id: 0x1234_5678,
        service_id: tcp_service_id(4791),
        local_ca_guid: 0x5054_00ff_fe12_3456,
        local_qpn: 0x11,
        responder_resources: 4,
        initiator_depth: 4,
        remote_cm_response_timeout: 20,
        end_to_end_flow_control: true,
        starting_psn: 0xab_cdef,
        local_cm_response_timeout: 20,
        retry_count: 7,
        partition_key: 0xffff,
        path_mtu: 3,
        rnr_retry_count: 7,
        max_cm_retries: 15,
        primary_path: ReqPath {
            local_gid: Gid::from_ipv4([10, 0, 0, 1]),
            remote_gid: Gid::from_ipv4([10, 0, 0, 2]),
            flow_label: 0x1_2345,
            packet_rate: 16,
            hop_limit: 64,
            local_ack_timeout: 18,
            ..ReqPath::default()
        },
        private_data: Bytes(pd),
        ..Req::default()
    };
    #[rustfmt::skip]
    let want = image(&[
        (0, &[0x12, 0x34, 0x56, 0x78]),
        (8, &[0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x12, 0xb7]),
        (16, &[0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56]),
        // QPN 0x000011, responder resources 4.
        (32, &[0x00, 0x00, 0x11, 0x04]),
        // Local EECN 0, initiator depth 4.
        (36, &[0x00, 0x00, 0x00, 0x04]),
        // Remote EECN 0; timeout 20 << 3 | RC << 1 | flow control.
        (40, &[0x00, 0x00, 0x00, 0xa1]),
        // PSN; timeout 20 << 3 | retry count 7.
        (44, &[0xab, 0xcd, 0xef, 0xa7]),
        // P_Key; MTU 3 << 4 | RNR retry 7; max CM retries 15 << 4.
        (48, &[0xff, 0xff, 0x37, 0xf0]),
        (66, &[0xff, 0xff, 10, 0, 0, 1]),
        (82, &[0xff, 0xff, 10, 0, 0, 2]),
        // Flow label 0x12345 in the top 20 bits, rate 16 in the low 6.
        (88, &[0x12, 0x34, 0x50, 0x10]),
        // Traffic class 0, hop limit 64, SL 0, ACK timeout 18 << 3.
        (92, &[0x00, 0x40, 0x00, 0x90]),
        // rdma_cm header: version 0, IP version 4 << 4, port 50000.
        (140, &[0x00, 0x40, 0xc3, 0x50]),
        (156, &[10, 0, 0, 1]),
        (172, &[10, 0, 0, 2]),
    ]);
    let mut got = [0u8; CM_PAYLOAD_LEN];
    req.write(&mut got).unwrap();
    assert_eq!(got, want);
    let back = Req::parse(&want).unwrap();
    assert_eq!(back, req);
    let cma = back.cma_header().unwrap();
    assert_eq!(cma.port, 50000);
    assert_eq!(cma.src_ipv4(), Some([10, 0, 0, 1]));
    assert_eq!(cma.dst_ipv4(), Some([10, 0, 0, 2]));

    // The whole MAD: header, then this payload.
    let mut mad = [0u8; MAD_SIZE];
    CmMessage::Req(req)
        .write_mad(0x0000_0001_0000_002a, 0, &mut mad)
        .unwrap();
    assert_eq!(
        &mad[..24],
        &[
            0x01, 0x07, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
            0x00, 0x2a, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00
        ]
    );
    assert_eq!(&mad[24..], &want[..]);
    let (h, m) = CmMessage::parse_mad(&mad).unwrap();
    assert_eq!(h, MadHeader::cm(0x10, 0x0000_0001_0000_002a, 0));
    assert_eq!(m, CmMessage::Req(req));
}

/// A consumer REJ of a REQ (what rdma_reject sends), byte by byte.
#[test]
fn consumer_rej_bytes() {
    let rej = Rej {
        local_comm_id: 0x0000_0101,
        remote_comm_id: 0x1234_5678,
        message_rejected: MsgResponse::Req as u8,
        reject_info_length: 0,
        reason: RejReason::ConsumerDefined as u16,
        private_data: Bytes::from_slice(b"no").unwrap(),
        ..Rej::default()
    };
    let want = image(&[
        (0, &[0x00, 0x00, 0x01, 0x01, 0x12, 0x34, 0x56, 0x78]),
        (8, &[0x00, 0x00, 0x00, 28]),
        (84, b"no"),
    ]);
    let mut got = [0u8; CM_PAYLOAD_LEN];
    rej.write(&mut got).unwrap();
    assert_eq!(got, want);
    assert_eq!(Rej::parse(&want), Ok(rej));

    // A REJ of a REP with an ARI, timeout reason.
    let rej = Rej {
        message_rejected: MsgResponse::Rep as u8,
        reject_info_length: 3,
        reason: RejReason::Timeout as u16,
        ari: Bytes::from_slice(&[1, 2, 3]).unwrap(),
        ..rej
    };
    rej.write(&mut got).unwrap();
    assert_eq!(&got[8..15], &[0x40, 0x06, 0x00, 0x04, 1, 2, 3]);
    assert_eq!(Rej::parse(&got).unwrap().ari_bytes(), &[1, 2, 3]);
}

/// A REP, an MRA of a REQ and a DREQ, byte by byte.
#[test]
fn rep_mra_dreq_bytes() {
    let rep = Rep {
        local_comm_id: 0xaabb_ccdd,
        remote_comm_id: 0x1234_5678,
        local_qkey: 0,
        local_qpn: 0x12,
        vendor_id: 0x12_3456,
        starting_psn: 0x65_4321,
        responder_resources: 4,
        initiator_depth: 4,
        target_ack_delay: 15,
        failover_accepted: 1,
        end_to_end_flow_control: true,
        rnr_retry_count: 7,
        srq: false,
        local_ca_guid: 0x0102_0304_0506_0708,
        ..Rep::default()
    };
    let mut got = [0u8; CM_PAYLOAD_LEN];
    rep.write(&mut got).unwrap();
    let want = image(&[
        (0, &[0xaa, 0xbb, 0xcc, 0xdd, 0x12, 0x34, 0x56, 0x78]),
        (12, &[0x00, 0x00, 0x12, 0x12]),
        (19, &[0x34, 0x65, 0x43, 0x21, 0x56]),
        // Resources, depth; ACK delay 15 << 3 | failover 1 << 1 | flow
        // control; RNR retry 7 << 5.
        (24, &[0x04, 0x04, 0x7b, 0xe0]),
        (28, &[1, 2, 3, 4, 5, 6, 7, 8]),
    ]);
    assert_eq!(got, want);
    assert_eq!(Rep::parse(&want), Ok(rep));

    let mra = Mra {
        local_comm_id: 0x0000_0001,
        remote_comm_id: 0x0000_0002,
        message_mraed: MsgResponse::Req as u8,
        service_timeout: 23,
        ..Mra::default()
    };
    mra.write(&mut got).unwrap();
    assert_eq!(got, image(&[(0, &[0, 0, 0, 1, 0, 0, 0, 2, 0x00, 23 << 3])]));

    let dreq = Dreq {
        local_comm_id: 3,
        remote_comm_id: 4,
        remote_qpn_eecn: 0xab_cdef,
        ..Dreq::default()
    };
    dreq.write(&mut got).unwrap();
    assert_eq!(
        got,
        image(&[(0, &[0, 0, 0, 3, 0, 0, 0, 4, 0xab, 0xcd, 0xef, 0])])
    );
}

/// Parsing arbitrary bytes of any length never panics.
#[test]
fn arbitrary_input() {
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut buf = [0u8; 300];
    for len in 0..=300 {
        for _ in 0..10 {
            for b in buf.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = (state >> 24) as u8;
            }
            let input = &buf[..len];
            for id in 0x10..=0x1a {
                let parsed = CmMessage::parse(id, input);
                assert_eq!(parsed.is_ok(), len >= CM_PAYLOAD_LEN && id <= 0x16);
            }
            let _ = CmMessage::parse_mad(input);
            let _ = CmaHeader::parse(input);
            let _ = MadHeader::parse(input);
        }
    }
}

/// SIDR REQ and REP against the offsets of ibta_vol1_c12.h
/// (`CM_SIDR_REQ_*`, `CM_SIDR_REP_*`), each field alone, and a whole
/// SIDR REP MAD as the CM sends it in answer to a SIDR REQ nobody listens
/// for.
#[test]
fn sidr_layout() {
    use rdma_spec::cm_msg::{SidrRep, SidrReq, SIDR_UNSUPPORTED};
    check::<SidrReq>(
        &[
            Case {
                name: "request ID",
                set: |m| m.request_id = u32::MAX,
                runs: &[(0, FF4)],
            },
            Case {
                name: "P_Key",
                set: |m| m.partition_key = u16::MAX,
                runs: &[(4, FF2)],
            },
            Case {
                name: "service ID",
                set: |m| m.service_id = u64::MAX,
                runs: &[(8, FF8)],
            },
            Case {
                name: "private data",
                set: |m| m.private_data = Bytes([0xff; 216]),
                runs: &[(16, &[0xff; 216])],
            },
        ],
        |m, p| m.write(p).unwrap(),
        |p| SidrReq::parse(p).unwrap(),
    );
    check::<SidrRep>(
        &[
            Case {
                name: "request ID",
                set: |m| m.request_id = u32::MAX,
                runs: &[(0, FF4)],
            },
            Case {
                name: "status",
                set: |m| m.status = u8::MAX,
                runs: &[(4, FF1)],
            },
            Case {
                name: "additional information length",
                set: |m| m.additional_info_len = u8::MAX,
                runs: &[(5, FF1)],
            },
            // CM_SIDR_REP_VENDOR_ID_H (byte 6, 16 bits) and _L (byte 11).
            Case {
                name: "vendor ID",
                set: |m| m.vendor_id = 0xff_ffff,
                runs: &[(6, FF2), (11, FF1)],
            },
            Case {
                name: "QPN",
                set: |m| m.qpn = 0xff_ffff,
                runs: &[(8, FF3)],
            },
            Case {
                name: "service ID",
                set: |m| m.service_id = u64::MAX,
                runs: &[(12, FF8)],
            },
            Case {
                name: "Q_Key",
                set: |m| m.qkey = u32::MAX,
                runs: &[(20, FF4)],
            },
            Case {
                name: "additional information",
                set: |m| m.additional_info = Bytes([0xff; 72]),
                runs: &[(24, &[0xff; 72])],
            },
            Case {
                name: "private data",
                set: |m| m.private_data = Bytes([0xff; 136]),
                runs: &[(96, &[0xff; 136])],
            },
        ],
        |m, p| m.write(p).unwrap(),
        |p| SidrRep::parse(p).unwrap(),
    );

    let req = SidrReq {
        request_id: 0x0102_0304,
        partition_key: 0xffff,
        service_id: 0x0000_0000_0111_1c06,
        ..SidrReq::default()
    };
    let mut p = [0u8; CM_PAYLOAD_LEN];
    assert!(SidrRep {
        qpn: 1 << 24,
        ..SidrRep::default()
    }
    .write(&mut p)
    .is_err());
    assert!(SidrRep {
        vendor_id: 1 << 24,
        ..SidrRep::default()
    }
    .write(&mut p)
    .is_err());

    let ans = SidrRep::answer(&req, SIDR_UNSUPPORTED);
    let mut mad = [0u8; MAD_SIZE];
    ans.write_mad(0xfeed, 0, &mut mad).unwrap();
    let h = MadHeader::parse(&mad).unwrap();
    assert_eq!(
        (h.mgmt_class, h.class_version, h.method, h.attr_id),
        (7, 2, 3, 0x18)
    );
    assert_eq!(h.tid, 0xfeed);
    assert_eq!(&mad[24..29], &[1, 2, 3, 4, 1]);
    assert_eq!(&mad[36..44], &[0, 0, 0, 0, 0x01, 0x11, 0x1c, 0x06]);
    assert!(mad[29..36].iter().all(|b| *b == 0) && mad[44..].iter().all(|b| *b == 0));
    // A SIDR REQ MAD parses back; another attribute does not.
    let mut m = [0u8; MAD_SIZE];
    req.write_mad(9, &mut m).unwrap();
    assert_eq!(&m[..24], &{
        let mut h = [0u8; 24];
        MadHeader::cm(0x17, 9, 0).write(&mut h).unwrap();
        h
    });
    assert_eq!(SidrReq::parse_mad(&m).unwrap().1, req);
    assert!(SidrReq::parse_mad(&mad).is_err());
    assert!(SidrRep::parse_mad(&m).is_err());
    assert_eq!(SidrRep::parse_mad(&mad).unwrap().1, ans);
}

/// A whole SIDR REQ and SIDR REP as the C CM builds them
/// (`cm_format_sidr_req`, `cm_format_sidr_rep` of cm.c, 6.12) for an
/// rdma_cm UD id: the bytes written out by hand from the header's
/// offsets, then parsed and rebuilt.
#[test]
fn sidr_c_built() {
    use rdma_spec::cm_msg::{SidrRep, SidrReq, SidrStatus};
    // SIDR REQ: TID 0x0000_0003_0000_0011 (agent 3), request ID (the
    // cm_id's local ID) 0x1f2e3d4c, P_Key 0xffff, service ID of port
    // space UDP port 7174; private data: the rdma_cm header (IPv4
    // 10.85.0.1:49152 -> 10.85.0.2) and "hi".
    let mut want = [0u8; MAD_SIZE];
    want[..24].copy_from_slice(&[
        1, 7, 2, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0x11, 0, 0x17, 0, 0, 0, 0, 0, 0,
    ]);
    want[24..28].copy_from_slice(&[0x1f, 0x2e, 0x3d, 0x4c]);
    want[28..30].copy_from_slice(&[0xff, 0xff]);
    want[32..40].copy_from_slice(&[0, 0, 0, 0, 0x01, 0x11, 0x1c, 0x06]);
    want[40..44].copy_from_slice(&[0x00, 0x40, 0xc0, 0x00]);
    want[56..60].copy_from_slice(&[10, 85, 0, 1]);
    want[72..76].copy_from_slice(&[10, 85, 0, 2]);
    want[76..78].copy_from_slice(b"hi");
    let (h, req) = SidrReq::parse_mad(&want).unwrap();
    assert_eq!(h.tid, 0x0000_0003_0000_0011);
    assert_eq!(
        (req.request_id, req.partition_key, req.service_id),
        (0x1f2e_3d4c, 0xffff, 0x0000_0000_0111_1c06)
    );
    let cma = req.cma_header().unwrap();
    assert_eq!(
        (cma.port, cma.src_ipv4(), cma.dst_ipv4()),
        (0xc000, Some([10, 85, 0, 1]), Some([10, 85, 0, 2]))
    );
    assert_eq!(&req.private_data.0[36..38], b"hi");
    let mut out = [0u8; MAD_SIZE];
    req.write_mad(h.tid, &mut out).unwrap();
    assert_eq!(out, want);

    // SIDR REP: status SUCCESS, QPN 0x000123, Q_Key 0x01234567 (rdma_cm's
    // RDMA_UDP_QKEY), ECE vendor ID 0x0015b3 with attr_mod 0x1 (the C
    // sets the high part from bits 8-15 alone), private data "ok".
    let mut want = [0u8; MAD_SIZE];
    want[..24].copy_from_slice(&[
        1, 7, 2, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0x11, 0, 0x18, 0, 0, 0, 0, 0, 1,
    ]);
    want[24..28].copy_from_slice(&[0x1f, 0x2e, 0x3d, 0x4c]);
    want[28] = 0; // status
    want[29] = 0; // additional information length
    want[30..32].copy_from_slice(&[0x00, 0x15]);
    want[32..36].copy_from_slice(&[0x00, 0x01, 0x23, 0xb3]);
    want[36..44].copy_from_slice(&[0, 0, 0, 0, 0x01, 0x11, 0x1c, 0x06]);
    want[44..48].copy_from_slice(&[0x01, 0x23, 0x45, 0x67]);
    want[120..122].copy_from_slice(b"ok");
    let (h, rep) = SidrRep::parse_mad(&want).unwrap();
    assert_eq!(h.attr_mod, 1);
    assert_eq!(rep.status_code(), Some(SidrStatus::Success));
    assert_eq!(
        (
            rep.request_id,
            rep.qpn,
            rep.qkey,
            rep.vendor_id,
            rep.service_id
        ),
        (
            0x1f2e_3d4c,
            0x123,
            0x0123_4567,
            0x15b3,
            0x0000_0000_0111_1c06
        )
    );
    assert!(rep.info_bytes().is_empty());
    assert_eq!(&rep.private_data.0[..3], b"ok\0");
    let mut out = [0u8; MAD_SIZE];
    rep.write_mad(h.tid, h.attr_mod, &mut out).unwrap();
    assert_eq!(out, want);
    // Status values are those of `enum ib_cm_sidr_status`.
    assert_eq!(SidrStatus::ALL.map(|s| s as u8), [0, 1, 2, 3, 4, 5]);
    assert_eq!(SidrStatus::from_raw(2), Some(SidrStatus::Reject));
    assert_eq!(SidrStatus::from_raw(6), None);
}
