// SPDX-License-Identifier: GPL-2.0

//! The payloads of the QP1 kinds: MADs and CM messages, malformed or
//! well-formed but wrong, each carried by a UD SEND ONLY to QP1 (see
//! `craft` in the crate root for the packet around them).
//!
//! Every MAD here is made with the MAD and CM codecs of `rdma-spec` (the
//! ones our kernel modules use) and then broken where the kind says, so
//! that the tests can parse back what is well-formed and check that only
//! the intended field is wrong.

use rdma_spec::cm_msg::{
    Bytes, CmMessage, Drep, Dreq, Mra, Rej, Rep, Req, Rtu, SidrReq, DREP_PRIVATE_DATA_LEN,
    DREQ_PRIVATE_DATA_LEN, MRA_PRIVATE_DATA_LEN, REJ_PRIVATE_DATA_LEN, REP_PRIVATE_DATA_LEN,
    REQ_PRIVATE_DATA_LEN, RTU_PRIVATE_DATA_LEN,
};
use rdma_spec::mad::{
    MadHeader, BASE_VERSION, CLASS_CM, CM_ATTR_APR, CM_ATTR_LAP, CM_ATTR_SIDR_REP,
    CM_ATTR_SIDR_REQ, CM_CLASS_VERSION, MAD_HDR_LEN, MAD_SIZE, METHOD_GET, METHOD_SEND, METHOD_SET,
};

use crate::Rng;

/// QP1's Q_Key: the default `--qkey` of the QP1 kinds.
pub const QP1_QKEY: u32 = 0x8001_0000;
/// The source QP in the DETH of the QP1 kinds: the GSI, where answers go.
pub const QP1_SRC_QPN: u32 = 1;
/// The largest UD payload of `mad-long` (it must fit a 1500-byte MTU).
pub const MAD_LONG_MAX: usize = 1024;

/// Base versions `mad-bad-version` sends in turn (never 1).
pub const BAD_BASE_VERSIONS: [u8; 5] = [0, 2, 3, 0x80, 0xff];

/// `(class, class version)` pairs `mad-unknown-class` sends in turn: no
/// agent takes a GET or SET of them on a port that runs only the CM (the
/// CM class among them: the CM takes SENDs only).
pub const UNKNOWN_CLASSES: [(u8, u8); 9] = [
    (0x03, 2),     // subnet administration: no SA here
    (0x04, 1),     // performance management: no PMA here
    (0x06, 1),     // device management
    (0x09, 1),     // reserved
    (0x30, 1),     // vendor range
    (0x4f, 1),     // vendor range
    (CLASS_CM, 1), // the CM, an old version
    (CLASS_CM, 3), // the CM, a future version
    (CLASS_CM, 2), // the CM, which takes no GET or SET
];

/// Attribute IDs of the CM class that no CM message has, which
/// `cm-unknown-attr` sends in turn.
pub const UNKNOWN_CM_ATTRS: [u16; 8] = [
    0x0000, 0x0001, 0x000f, 0x001b, 0x0020, 0x00ff, 0x1234, 0xffff,
];

/// The CM messages `cm-msg` sends in turn, by attribute ID: the seven
/// our codec has, then SIDR REQ, SIDR REP, LAP and APR.
pub const CM_MSGS: [u16; 11] = [
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a,
];

/// A transaction ID for packet `variant`: high half 0xfeed_0000, which no
/// agent of ours has (their numbers start at a random 16-bit value and
/// count up), so an answer to one of these finds no agent either.
fn tid(variant: u64) -> u64 {
    0xfeed_0000_0000_0000 | (variant & 0xffff_ffff)
}

/// `n` bytes of pattern, then zeros, in an area of `N` bytes.
fn pdata<const N: usize>(n: usize, seed: u64) -> Bytes<N> {
    let mut b = [0u8; N];
    let mut rng = Rng::new(seed);
    for x in b.iter_mut().take(n.min(N)) {
        *x = rng.next_u64() as u8 | 1;
    }
    Bytes(b)
}

/// The size of the private data area of CM message `attr`.
pub const fn cm_pdata_max(attr: u16) -> usize {
    match attr {
        0x10 => REQ_PRIVATE_DATA_LEN,
        0x11 => MRA_PRIVATE_DATA_LEN,
        0x12 => REJ_PRIVATE_DATA_LEN,
        0x13 => REP_PRIVATE_DATA_LEN,
        0x14 => RTU_PRIVATE_DATA_LEN,
        0x15 => DREQ_PRIVATE_DATA_LEN,
        0x16 => DREP_PRIVATE_DATA_LEN,
        // SIDR REQ 216, SIDR REP 136, LAP 168, APR 148 (IBA 12.11).
        0x17 => 216,
        0x18 => 136,
        0x19 => 168,
        _ => 148,
    }
}

/// How much private data message `attr` of `cm-msg` carries: every length
/// from 0 to its area's size in turn, as `round` goes up.
pub const fn cm_pdata_len(attr: u16, round: u64) -> usize {
    (round % (cm_pdata_max(attr) as u64 + 1)) as usize
}

/// A CM message of attribute `attr` with comm IDs and fields from `rng`
/// and `pd` bytes of private data. The REQ's service ID is never one of
/// the rdma_cm's TCP port space's (so no listener of a test takes it).
fn cm_message(attr: u16, rng: &mut Rng, pd: usize, seed: u64) -> Option<CmMessage> {
    let local = rng.next_u64() as u32 | 0x8000_0000;
    let remote = rng.next_u64() as u32 | 0x8000_0000;
    Some(match attr {
        0x10 => {
            let mut r = Req {
                local_comm_id: local,
                service_id: 0x0bad_0000_0000_0000 | (rng.next_u64() & 0xffff_ffff),
                local_qpn: (rng.next_u64() as u32 & 0x00ff_ffff) | 0x0080_0000,
                starting_psn: rng.next_u64() as u32 & 0x00ff_ffff,
                partition_key: 0xffff,
                path_mtu: 3,
                remote_cm_response_timeout: 20,
                local_cm_response_timeout: 20,
                max_cm_retries: 15,
                private_data: pdata(pd, seed),
                ..Req::default()
            };
            r.primary_path.packet_rate = 3;
            CmMessage::Req(r)
        }
        0x11 => CmMessage::Mra(Mra {
            local_comm_id: local,
            remote_comm_id: remote,
            message_mraed: 0,
            service_timeout: 20,
            private_data: pdata(pd, seed),
        }),
        0x12 => CmMessage::Rej(Rej {
            local_comm_id: local,
            remote_comm_id: remote,
            reason: 28,
            private_data: pdata(pd, seed),
            ..Rej::default()
        }),
        0x13 => CmMessage::Rep(Rep {
            local_comm_id: local,
            remote_comm_id: remote,
            local_qpn: rng.next_u64() as u32 & 0x00ff_ffff,
            starting_psn: rng.next_u64() as u32 & 0x00ff_ffff,
            private_data: pdata(pd, seed),
            ..Rep::default()
        }),
        0x14 => CmMessage::Rtu(Rtu {
            local_comm_id: local,
            remote_comm_id: remote,
            private_data: pdata(pd, seed),
        }),
        0x15 => CmMessage::Dreq(Dreq {
            local_comm_id: local,
            remote_comm_id: remote,
            remote_qpn_eecn: rng.next_u64() as u32 & 0x00ff_ffff,
            private_data: pdata(pd, seed),
        }),
        0x16 => CmMessage::Drep(Drep {
            local_comm_id: local,
            remote_comm_id: remote,
            private_data: pdata(pd, seed),
        }),
        _ => return None,
    })
}

/// The MAD of message `attr` (any attribute ID: the seven of our codec
/// made by it, any other as comm IDs and private data over a CM header).
pub fn cm_mad(attr: u16, variant: u64, pd: usize, out: &mut [u8; MAD_SIZE]) {
    let mut rng = Rng::new(variant ^ 0x51d2_0000);
    out.fill(0);
    if let Some(msg) = cm_message(attr, &mut rng, pd, variant) {
        // Only fails for fields too wide, which the values above are not.
        let _ = msg.write_mad(tid(variant), 0, out);
        return;
    }
    let hdr = MadHeader {
        base_version: BASE_VERSION,
        mgmt_class: CLASS_CM,
        class_version: CM_CLASS_VERSION,
        method: METHOD_SEND,
        status: 0,
        class_specific: 0,
        tid: tid(variant),
        attr_id: attr,
        resv: 0,
        attr_mod: 0,
    };
    let _ = hdr.write(out);
    let data = &mut out[MAD_HDR_LEN..];
    data[..4].copy_from_slice(&(rng.next_u64() as u32 | 0x8000_0000).to_be_bytes());
    data[4..8].copy_from_slice(&(rng.next_u64() as u32 | 0x8000_0000).to_be_bytes());
    // SIDR REQ: request ID, P_Key, reserved, service ID, private data at
    // 16; the others put theirs at their end; a pattern from byte 16.
    let mut p = Rng::new(variant);
    for x in data.iter_mut().skip(16).take(pd) {
        *x = p.next_u64() as u8 | 1;
    }
}

/// A well-formed DREQ (to unknown comm IDs): the base of the malformed
/// MAD kinds.
pub fn base_mad(variant: u64, out: &mut [u8; MAD_SIZE]) {
    cm_mad(0x15, variant, 0, out);
}

/// The MAD of `mad-bad-version` number `variant`.
pub fn bad_version_mad(variant: u64, out: &mut [u8; MAD_SIZE]) {
    base_mad(variant, out);
    out[0] = BAD_BASE_VERSIONS[(variant % BAD_BASE_VERSIONS.len() as u64) as usize];
}

/// The MAD of `mad-unknown-class` number `variant`: a GET (even) or SET
/// (odd) of a class and version nobody takes.
pub fn unknown_class_mad(variant: u64, out: &mut [u8; MAD_SIZE]) {
    let n = UNKNOWN_CLASSES.len() as u64;
    let (class, version) = UNKNOWN_CLASSES[(variant % n) as usize];
    out.fill(0);
    let hdr = MadHeader {
        base_version: BASE_VERSION,
        mgmt_class: class,
        class_version: version,
        method: if variant & 1 == 0 {
            METHOD_GET
        } else {
            METHOD_SET
        },
        status: 0,
        class_specific: 0,
        tid: tid(variant),
        attr_id: 0x0010 + (variant / n % 16) as u16,
        resv: 0,
        attr_mod: 0,
    };
    let _ = hdr.write(out);
    for (i, x) in out.iter_mut().enumerate().skip(MAD_HDR_LEN) {
        *x = i as u8;
    }
}

/// The MAD of `cm-unknown-attr` number `variant`.
pub fn unknown_attr_mad(variant: u64, out: &mut [u8; MAD_SIZE]) {
    let n = UNKNOWN_CM_ATTRS.len() as u64;
    cm_mad(UNKNOWN_CM_ATTRS[(variant % n) as usize], variant, 0, out);
}

/// The MAD of `cm-msg` number `variant`: message `CM_MSGS[variant % 11]`
/// with the next length of private data for it.
pub fn cm_msg_mad(variant: u64, out: &mut [u8; MAD_SIZE]) -> u16 {
    let n = CM_MSGS.len() as u64;
    let attr = CM_MSGS[(variant % n) as usize];
    cm_mad(attr, variant, cm_pdata_len(attr, variant / n), out);
    attr
}

/// Whether `attr` is a CM message the C CM handles that our codec does
/// not (SIDR REQ and REP, LAP, APR).
pub const fn cm_unsupported(attr: u16) -> bool {
    matches!(
        attr,
        CM_ATTR_SIDR_REQ | CM_ATTR_SIDR_REP | CM_ATTR_LAP | CM_ATTR_APR
    )
}

/// The UD payload length of `mad-short` number `variant`: 0 to 255 bytes,
/// every length in 256 packets.
pub const fn short_len(variant: u64) -> usize {
    ((variant * 97) % MAD_SIZE as u64) as usize
}

/// The UD payload length of `mad-long` number `variant`: 257 to
/// [`MAD_LONG_MAX`] bytes.
pub const fn long_len(variant: u64) -> usize {
    MAD_SIZE + 1 + ((variant * 61) % (MAD_LONG_MAX - MAD_SIZE) as u64) as usize
}

/// The message of `cm-at`: one CM message with the given comm IDs and
/// fields, nothing random in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmAt {
    /// The attribute ID (`--msg`).
    pub attr: u16,
    /// The sender's comm ID (`--local-id`; a SIDR REQ's request ID).
    pub local_id: u32,
    /// The receiver's comm ID (`--remote-id`).
    pub remote_id: u32,
    /// The REQ's or REP's local QPN, the DREQ's remote QPN (`--msg-qpn`).
    pub qpn: u32,
    /// The message a REJ rejects or an MRA MRAs: 0 REQ, 1 REP, 2 other
    /// (`--of`).
    pub of: u8,
    /// The REQ's or REP's local CA GUID (`--guid`).
    pub guid: u64,
    /// The REQ's or SIDR REQ's service ID (`--service-id`).
    pub service_id: u64,
}

impl Default for CmAt {
    fn default() -> CmAt {
        CmAt {
            attr: 0x14,
            local_id: 0,
            remote_id: 0,
            qpn: 0,
            of: 2,
            guid: 0,
            service_id: 0x0bad_0000_0000_0000,
        }
    }
}

impl CmAt {
    /// The attribute ID of message `name` (`--msg`).
    pub fn attr_of(name: &str) -> Option<u16> {
        Some(match name {
            "req" => 0x10,
            "mra" => 0x11,
            "rej" => 0x12,
            "rep" => 0x13,
            "rtu" => 0x14,
            "dreq" => 0x15,
            "drep" => 0x16,
            "sidr-req" => CM_ATTR_SIDR_REQ,
            "lap" => CM_ATTR_LAP,
            "apr" => CM_ATTR_APR,
            _ => return None,
        })
    }

    /// The MAD of packet `variant`.
    pub fn mad(&self, variant: u64, out: &mut [u8; MAD_SIZE]) {
        out.fill(0);
        let (local, remote) = (self.local_id, self.remote_id);
        let msg = match self.attr {
            0x10 => {
                let mut r = Req {
                    local_comm_id: local,
                    service_id: self.service_id,
                    local_ca_guid: self.guid,
                    local_qpn: self.qpn,
                    starting_psn: 0x1234,
                    partition_key: 0xffff,
                    path_mtu: 3,
                    remote_cm_response_timeout: 20,
                    local_cm_response_timeout: 20,
                    max_cm_retries: 15,
                    ..Req::default()
                };
                r.primary_path.packet_rate = 3;
                r.primary_path.local_ack_timeout = 17;
                CmMessage::Req(r)
            }
            0x11 => CmMessage::Mra(Mra {
                local_comm_id: local,
                remote_comm_id: remote,
                message_mraed: self.of,
                service_timeout: 20,
                ..Mra::default()
            }),
            0x12 => CmMessage::Rej(Rej {
                local_comm_id: local,
                remote_comm_id: remote,
                message_rejected: self.of,
                reason: 28,
                ..Rej::default()
            }),
            0x13 => CmMessage::Rep(Rep {
                local_comm_id: local,
                remote_comm_id: remote,
                local_qpn: self.qpn,
                local_ca_guid: self.guid,
                starting_psn: 0x1234,
                ..Rep::default()
            }),
            0x14 => CmMessage::Rtu(Rtu {
                local_comm_id: local,
                remote_comm_id: remote,
                ..Rtu::default()
            }),
            0x15 => CmMessage::Dreq(Dreq {
                local_comm_id: local,
                remote_comm_id: remote,
                remote_qpn_eecn: self.qpn,
                ..Dreq::default()
            }),
            0x16 => CmMessage::Drep(Drep {
                local_comm_id: local,
                remote_comm_id: remote,
                ..Drep::default()
            }),
            attr => {
                // SIDR REQ, LAP, APR: a CM header and the IDs.
                let _ = MadHeader::cm(attr, tid(variant), 0).write(out);
                let data = &mut out[MAD_HDR_LEN..];
                if attr == CM_ATTR_SIDR_REQ {
                    let req = SidrReq {
                        request_id: local,
                        partition_key: 0xffff,
                        service_id: self.service_id,
                        ..SidrReq::default()
                    };
                    let _ = req.write(data);
                } else {
                    data[..4].copy_from_slice(&local.to_be_bytes());
                    data[4..8].copy_from_slice(&remote.to_be_bytes());
                }
                return;
            }
        };
        let _ = msg.write_mad(tid(variant), 0, out);
    }
}
