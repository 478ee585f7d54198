// SPDX-License-Identifier: GPL-2.0

//! Management datagrams (MADs): the 24-byte common header and the 256-byte
//! MAD, as a sans-IO codec.
//!
//! A MAD is [`MAD_HDR_LEN`] bytes of common header followed by
//! [`MAD_DATA_LEN`] bytes of class-specific data, [`MAD_SIZE`] bytes in all.
//! The header fields, in order, are: base version, management class, class
//! version, method, status (16 bits), class-specific (16 bits), transaction
//! ID (64 bits), attribute ID (16 bits), reserved (16 bits) and attribute
//! modifier (32 bits), every multi-byte field big-endian (`struct
//! ib_mad_hdr` in include/rdma/ib_mad.h).
//!
//! The numeric values (base version, classes, methods, status bits, the
//! connection manager's attribute IDs) are those of include/rdma/ib_mad.h
//! and include/rdma/ib_cm.h, so they match what the C stack puts on the
//! wire.
//!
//! [`MadHeader::parse`] and [`MadHeader::write`] convert the header;
//! [`Mad`] is a checked view of a whole received MAD and [`Mad::write`]
//! builds one. Nothing here panics, whatever the input.
//!
//! This module uses only `core`, so it can be compiled as a module of
//! another crate.

use core::fmt;

/// Length of the common MAD header in bytes (`IB_MGMT_MAD_HDR`).
pub const MAD_HDR_LEN: usize = 24;
/// Length of the data following the common header (`IB_MGMT_MAD_DATA`).
pub const MAD_DATA_LEN: usize = 232;
/// Length of an InfiniBand MAD (`IB_MGMT_MAD_SIZE`).
pub const MAD_SIZE: usize = MAD_HDR_LEN + MAD_DATA_LEN;

/// The InfiniBand management base version (`IB_MGMT_BASE_VERSION`), the
/// only one this codec accepts.
pub const BASE_VERSION: u8 = 1;

/// Management class: subnet management, LID routed.
pub const CLASS_SUBN_LID_ROUTED: u8 = 0x01;
/// Management class: subnet management, directed route.
pub const CLASS_SUBN_DIRECTED_ROUTE: u8 = 0x81;
/// Management class: subnet administration.
pub const CLASS_SUBN_ADM: u8 = 0x03;
/// Management class: performance management.
pub const CLASS_PERF_MGMT: u8 = 0x04;
/// Management class: baseboard management.
pub const CLASS_BM: u8 = 0x05;
/// Management class: device management.
pub const CLASS_DEVICE_MGMT: u8 = 0x06;
/// Management class: communication management (the CM).
pub const CLASS_CM: u8 = 0x07;
/// Management class: SNMP tunnelling.
pub const CLASS_SNMP: u8 = 0x08;
/// Management class: device administration.
pub const CLASS_DEVICE_ADM: u8 = 0x10;
/// Management class: boot management.
pub const CLASS_BOOT_MGMT: u8 = 0x11;
/// Management class: BIS.
pub const CLASS_BIS: u8 = 0x12;
/// Management class: congestion management.
pub const CLASS_CONG_MGMT: u8 = 0x21;

/// The class version of the communication management class
/// (`IB_CM_CLASS_VERSION`, IBA 1.2).
pub const CM_CLASS_VERSION: u8 = 2;

/// Method: Get.
pub const METHOD_GET: u8 = 0x01;
/// Method: Set.
pub const METHOD_SET: u8 = 0x02;
/// Method: Send (every CM message uses it).
pub const METHOD_SEND: u8 = 0x03;
/// Method: Trap.
pub const METHOD_TRAP: u8 = 0x05;
/// Method: Report.
pub const METHOD_REPORT: u8 = 0x06;
/// Method: TrapRepress.
pub const METHOD_TRAP_REPRESS: u8 = 0x07;
/// Method: GetResp.
pub const METHOD_GET_RESP: u8 = 0x81;
/// Method: ReportResp.
pub const METHOD_REPORT_RESP: u8 = 0x86;
/// The method bit that marks a response (bit 7).
pub const METHOD_RESP: u8 = 0x80;

/// Status: success.
pub const STATUS_SUCCESS: u16 = 0x0000;
/// Status bit: busy.
pub const STATUS_BUSY: u16 = 0x0001;
/// Status bit: redirect required.
pub const STATUS_REDIRECT_REQD: u16 = 0x0002;
/// Status code: bad base or class version.
pub const STATUS_BAD_VERSION: u16 = 0x0004;
/// Status code: method not supported.
pub const STATUS_UNSUPPORTED_METHOD: u16 = 0x0008;
/// Status code: method/attribute combination not supported.
pub const STATUS_UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
/// Status code: invalid attribute or attribute modifier value.
pub const STATUS_INVALID_ATTRIB_VALUE: u16 = 0x001c;

/// The Q_Key of QP1, the general services QP (`IB_QP1_QKEY`).
pub const QP1_QKEY: u32 = 0x8001_0000;

/// Attribute ID of ClassPortInfo (every class).
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
/// CM attribute ID: ConnectRequest (REQ).
pub const CM_ATTR_REQ: u16 = 0x0010;
/// CM attribute ID: MsgRcptAck (MRA).
pub const CM_ATTR_MRA: u16 = 0x0011;
/// CM attribute ID: ConnectReject (REJ).
pub const CM_ATTR_REJ: u16 = 0x0012;
/// CM attribute ID: ConnectReply (REP).
pub const CM_ATTR_REP: u16 = 0x0013;
/// CM attribute ID: ReadyToUse (RTU).
pub const CM_ATTR_RTU: u16 = 0x0014;
/// CM attribute ID: DisconnectRequest (DREQ).
pub const CM_ATTR_DREQ: u16 = 0x0015;
/// CM attribute ID: DisconnectReply (DREP).
pub const CM_ATTR_DREP: u16 = 0x0016;
/// CM attribute ID: ServiceIDResReq (SIDR_REQ).
pub const CM_ATTR_SIDR_REQ: u16 = 0x0017;
/// CM attribute ID: ServiceIDResReqResp (SIDR_REP).
pub const CM_ATTR_SIDR_REP: u16 = 0x0018;
/// CM attribute ID: LoadAlternatePath (LAP).
pub const CM_ATTR_LAP: u16 = 0x0019;
/// CM attribute ID: AlternatePathResponse (APR).
pub const CM_ATTR_APR: u16 = 0x001a;

/// Why a MAD could not be parsed or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadError {
    /// The buffer is shorter than the header or MAD needs.
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// The data to carry is longer than a MAD's data area.
    TooLong {
        /// Bytes allowed.
        max: usize,
        /// Bytes given.
        got: usize,
    },
    /// The base version is not [`BASE_VERSION`].
    BadBaseVersion(u8),
    /// The management class is not the expected one.
    WrongClass {
        /// The class expected.
        expected: u8,
        /// The class found.
        got: u8,
    },
    /// The class version is not the expected one.
    BadClassVersion {
        /// The version expected.
        expected: u8,
        /// The version found.
        got: u8,
    },
}

impl fmt::Display for MadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MadError::TooShort { needed, got } => {
                write!(f, "MAD buffer too short: {got} bytes, {needed} needed")
            }
            MadError::TooLong { max, got } => {
                write!(f, "MAD data too long: {got} bytes, at most {max}")
            }
            MadError::BadBaseVersion(v) => write!(f, "bad MAD base version {v}"),
            MadError::WrongClass { expected, got } => {
                write!(f, "MAD class {got:#04x}, expected {expected:#04x}")
            }
            MadError::BadClassVersion { expected, got } => {
                write!(f, "MAD class version {got}, expected {expected}")
            }
        }
    }
}

/// The common MAD header (`struct ib_mad_hdr`), in host byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MadHeader {
    /// Base version; [`BASE_VERSION`] for InfiniBand.
    pub base_version: u8,
    /// Management class (`CLASS_*`).
    pub mgmt_class: u8,
    /// Version of the management class.
    pub class_version: u8,
    /// Method (`METHOD_*`); bit 7 marks a response.
    pub method: u8,
    /// Status.
    pub status: u16,
    /// Class-specific field.
    pub class_specific: u16,
    /// Transaction ID.
    pub tid: u64,
    /// Attribute ID.
    pub attr_id: u16,
    /// Reserved; carried as found.
    pub resv: u16,
    /// Attribute modifier.
    pub attr_mod: u32,
}

/// The first `N` bytes of `buf` from `at`, if there are that many.
fn bytes_at<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = at.checked_add(N).and_then(|end| buf.get(at..end)) {
        for (d, s) in out.iter_mut().zip(src) {
            *d = *s;
        }
    }
    out
}

/// Copies `src` into `buf` from `at`, as far as `buf` reaches.
fn put_at(buf: &mut [u8], at: usize, src: &[u8]) {
    if let Some(dst) = buf.get_mut(at..) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

impl MadHeader {
    /// The header of a CM message as the C stack builds it
    /// (`cm_format_mad_hdr`): base version 1, class CM, class version 2,
    /// method Send, status zero.
    pub const fn cm(attr_id: u16, tid: u64, attr_mod: u32) -> MadHeader {
        MadHeader {
            base_version: BASE_VERSION,
            mgmt_class: CLASS_CM,
            class_version: CM_CLASS_VERSION,
            method: METHOD_SEND,
            status: 0,
            class_specific: 0,
            tid,
            attr_id,
            resv: 0,
            attr_mod,
        }
    }

    /// Parses the header at the start of `buf`.
    ///
    /// Fails if `buf` is shorter than [`MAD_HDR_LEN`] or the base version
    /// is not [`BASE_VERSION`]. Any class, method and attribute is accepted.
    pub fn parse(buf: &[u8]) -> Result<MadHeader, MadError> {
        if buf.len() < MAD_HDR_LEN {
            return Err(MadError::TooShort {
                needed: MAD_HDR_LEN,
                got: buf.len(),
            });
        }
        let [base_version, mgmt_class, class_version, method] = bytes_at::<4>(buf, 0);
        if base_version != BASE_VERSION {
            return Err(MadError::BadBaseVersion(base_version));
        }
        Ok(MadHeader {
            base_version,
            mgmt_class,
            class_version,
            method,
            status: u16::from_be_bytes(bytes_at(buf, 4)),
            class_specific: u16::from_be_bytes(bytes_at(buf, 6)),
            tid: u64::from_be_bytes(bytes_at(buf, 8)),
            attr_id: u16::from_be_bytes(bytes_at(buf, 16)),
            resv: u16::from_be_bytes(bytes_at(buf, 18)),
            attr_mod: u32::from_be_bytes(bytes_at(buf, 20)),
        })
    }

    /// Writes the header into the first [`MAD_HDR_LEN`] bytes of `out`.
    ///
    /// Fails, leaving `out` untouched, if `out` is too short or the base
    /// version is not [`BASE_VERSION`] (so that what is written parses).
    pub fn write(&self, out: &mut [u8]) -> Result<(), MadError> {
        if out.len() < MAD_HDR_LEN {
            return Err(MadError::TooShort {
                needed: MAD_HDR_LEN,
                got: out.len(),
            });
        }
        if self.base_version != BASE_VERSION {
            return Err(MadError::BadBaseVersion(self.base_version));
        }
        put_at(
            out,
            0,
            &[
                self.base_version,
                self.mgmt_class,
                self.class_version,
                self.method,
            ],
        );
        put_at(out, 4, &self.status.to_be_bytes());
        put_at(out, 6, &self.class_specific.to_be_bytes());
        put_at(out, 8, &self.tid.to_be_bytes());
        put_at(out, 16, &self.attr_id.to_be_bytes());
        put_at(out, 18, &self.resv.to_be_bytes());
        put_at(out, 20, &self.attr_mod.to_be_bytes());
        Ok(())
    }

    /// Whether the method is a response (bit 7 set).
    pub const fn is_response(&self) -> bool {
        self.method & METHOD_RESP != 0
    }

    /// Checks the management class and class version.
    pub fn check_class(&self, class: u8, class_version: u8) -> Result<(), MadError> {
        if self.mgmt_class != class {
            return Err(MadError::WrongClass {
                expected: class,
                got: self.mgmt_class,
            });
        }
        if self.class_version != class_version {
            return Err(MadError::BadClassVersion {
                expected: class_version,
                got: self.class_version,
            });
        }
        Ok(())
    }
}

/// A checked view of a received MAD: its parsed header and its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mad<'a> {
    header: MadHeader,
    data: &'a [u8; MAD_DATA_LEN],
}

impl<'a> Mad<'a> {
    /// Views the first [`MAD_SIZE`] bytes of `buf` as a MAD.
    ///
    /// Fails if `buf` is shorter than a MAD or its header does not parse.
    /// Bytes past the first [`MAD_SIZE`] are ignored.
    pub fn parse(buf: &'a [u8]) -> Result<Mad<'a>, MadError> {
        let too_short = MadError::TooShort {
            needed: MAD_SIZE,
            got: buf.len(),
        };
        let data = buf
            .get(MAD_HDR_LEN..MAD_SIZE)
            .and_then(|d| <&[u8; MAD_DATA_LEN]>::try_from(d).ok())
            .ok_or(too_short)?;
        let header = MadHeader::parse(buf)?;
        Ok(Mad { header, data })
    }

    /// The header.
    pub const fn header(&self) -> &MadHeader {
        &self.header
    }

    /// The [`MAD_DATA_LEN`] bytes after the header.
    pub const fn data(&self) -> &'a [u8; MAD_DATA_LEN] {
        self.data
    }

    /// Writes a whole MAD into the first [`MAD_SIZE`] bytes of `out`: the
    /// header, then `data`, then zeros up to the end of the data area.
    ///
    /// Fails, leaving `out` untouched, if `out` is shorter than a MAD,
    /// `data` is longer than [`MAD_DATA_LEN`] or the header cannot be
    /// written.
    pub fn write(header: &MadHeader, data: &[u8], out: &mut [u8]) -> Result<(), MadError> {
        if out.len() < MAD_SIZE {
            return Err(MadError::TooShort {
                needed: MAD_SIZE,
                got: out.len(),
            });
        }
        if data.len() > MAD_DATA_LEN {
            return Err(MadError::TooLong {
                max: MAD_DATA_LEN,
                got: data.len(),
            });
        }
        header.write(out)?;
        if let Some(area) = out.get_mut(MAD_HDR_LEN..MAD_SIZE) {
            area.fill(0);
        }
        put_at(out, MAD_HDR_LEN, data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MadHeader {
        MadHeader {
            base_version: 1,
            mgmt_class: 0x07,
            class_version: 2,
            method: 0x03,
            status: 0x1234,
            class_specific: 0x5678,
            tid: 0x0102_0304_0506_0708,
            attr_id: 0x0013,
            resv: 0x9abc,
            attr_mod: 0xdead_beef,
        }
    }

    #[test]
    fn header_layout() {
        let mut b = [0u8; MAD_HDR_LEN];
        sample().write(&mut b).unwrap();
        assert_eq!(
            b,
            [
                0x01, 0x07, 0x02, 0x03, 0x12, 0x34, 0x56, 0x78, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                0x07, 0x08, 0x00, 0x13, 0x9a, 0xbc, 0xde, 0xad, 0xbe, 0xef
            ]
        );
        assert_eq!(MadHeader::parse(&b), Ok(sample()));
    }

    #[test]
    fn cm_header_is_what_cm_c_builds() {
        let h = MadHeader::cm(CM_ATTR_REQ, 0x1122_3344_5566_7788, 0);
        let mut b = [0xffu8; MAD_HDR_LEN];
        h.write(&mut b).unwrap();
        assert_eq!(&b[..4], &[1, 7, 2, 3]);
        assert_eq!(&b[4..8], &[0, 0, 0, 0]);
        assert_eq!(&b[16..18], &[0x00, 0x10]);
        assert_eq!(&b[20..24], &[0, 0, 0, 0]);
        assert!(!h.is_response());
        assert_eq!(h.check_class(CLASS_CM, CM_CLASS_VERSION), Ok(()));
        assert_eq!(
            h.check_class(CLASS_SUBN_ADM, 2),
            Err(MadError::WrongClass {
                expected: CLASS_SUBN_ADM,
                got: CLASS_CM
            })
        );
        assert_eq!(
            h.check_class(CLASS_CM, 1),
            Err(MadError::BadClassVersion {
                expected: 1,
                got: 2
            })
        );
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            MadHeader::parse(&[1u8; 23]),
            Err(MadError::TooShort {
                needed: 24,
                got: 23
            })
        );
        let mut b = [0u8; MAD_HDR_LEN];
        sample().write(&mut b).unwrap();
        b[0] = 0x80;
        assert_eq!(MadHeader::parse(&b), Err(MadError::BadBaseVersion(0x80)));
        let mut h = sample();
        h.base_version = 2;
        let mut out = [0x55u8; MAD_HDR_LEN];
        assert_eq!(h.write(&mut out), Err(MadError::BadBaseVersion(2)));
        assert_eq!(out, [0x55u8; MAD_HDR_LEN]);
        assert!(matches!(
            sample().write(&mut [0u8; 10]),
            Err(MadError::TooShort { .. })
        ));
    }

    #[test]
    fn methods() {
        let mut h = sample();
        for (m, resp) in [
            (METHOD_GET, false),
            (METHOD_SET, false),
            (METHOD_SEND, false),
            (METHOD_GET_RESP, true),
            (METHOD_REPORT_RESP, true),
        ] {
            h.method = m;
            assert_eq!(h.is_response(), resp);
        }
        assert_eq!(METHOD_GET | METHOD_RESP, METHOD_GET_RESP);
        assert_eq!(METHOD_REPORT | METHOD_RESP, METHOD_REPORT_RESP);
    }

    #[test]
    fn whole_mad() {
        let mut buf = [0xeeu8; MAD_SIZE + 8];
        Mad::write(&sample(), &[9, 8, 7], &mut buf).unwrap();
        assert_eq!(&buf[24..27], &[9, 8, 7]);
        assert!(buf[27..MAD_SIZE].iter().all(|b| *b == 0));
        assert!(buf[MAD_SIZE..].iter().all(|b| *b == 0xee));
        let mad = Mad::parse(&buf).unwrap();
        assert_eq!(*mad.header(), sample());
        assert_eq!(mad.data()[..3], [9, 8, 7]);
        assert_eq!(mad.data().len(), MAD_DATA_LEN);

        assert_eq!(
            Mad::parse(&buf[..MAD_SIZE - 1]),
            Err(MadError::TooShort {
                needed: MAD_SIZE,
                got: MAD_SIZE - 1
            })
        );
        assert_eq!(
            Mad::write(&sample(), &[0u8; MAD_DATA_LEN + 1], &mut buf),
            Err(MadError::TooLong {
                max: MAD_DATA_LEN,
                got: MAD_DATA_LEN + 1
            })
        );
        assert!(matches!(
            Mad::write(&sample(), &[], &mut [0u8; MAD_SIZE - 1]),
            Err(MadError::TooShort { .. })
        ));
    }

    #[test]
    fn never_panics() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut buf = [0u8; 300];
        for round in 0..4000usize {
            for b in buf.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = seed as u8;
            }
            if round % 2 == 0 {
                buf[0] = BASE_VERSION;
            }
            let len = round % buf.len();
            let _ = MadHeader::parse(&buf[..len]);
            if let Ok(m) = Mad::parse(&buf[..len]) {
                let mut out = [0u8; MAD_SIZE];
                Mad::write(m.header(), m.data(), &mut out).unwrap();
                assert_eq!(&out[..], &buf[..MAD_SIZE]);
            }
        }
    }
}
