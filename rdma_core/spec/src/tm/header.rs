// SPDX-License-Identifier: GPL-2.0

//! The headers a tag-matching message carries at the start of an RC
//! SEND's payload (rdma-core's `infiniband/tm_types.h`), all big endian:
//!
//! - the TMH, 16 bytes: the operation (byte 0), three reserved bytes, the
//!   sender's 32-bit `app_ctx` (bytes 4..8), the 64-bit tag (8..16);
//! - after it, in a rendezvous request and in its FIN, the RVH, 16 bytes:
//!   the sender's buffer, its virtual address (16..24), rkey (24..28) and
//!   length (28..32).
//!
//! A NO_TAG message needs only its first byte; everything after it is the
//! application's. An EAGER message is the TMH and the payload; an RNDV
//! request the TMH, the RVH and optional user data (which only software
//! looks at, when the request arrives unexpected); a FIN the TMH and the
//! RVH of the request it ends.
//!
//! [`parse`] reads the first bytes of a message (its first packet is
//! enough: an MTU of 256 holds both headers) and never reads past them.
//! The reserved bytes are not checked: senders that leave garbage there
//! still match, as the hardware does not check them either.

/// The TMH's length.
pub const TMH_LEN: usize = 16;
/// The RVH's length.
pub const RVH_LEN: usize = 16;
/// A rendezvous request's headers.
pub const RNDV_HDRS_LEN: usize = TMH_LEN + RVH_LEN;

/// The TMH operations (`enum ibv_tmh_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TmhOp {
    /// A message without a tag: always delivered whole to an ordinary
    /// receive.
    NoTag = 0,
    /// A rendezvous request: the receiver reads the data.
    Rndv = 1,
    /// The end of a rendezvous: the receiver has read the data.
    Fin = 2,
    /// An eager message: the data follows the TMH.
    Eager = 3,
}

impl TmhOp {
    /// The operation of wire value `v`.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => TmhOp::NoTag,
            1 => TmhOp::Rndv,
            2 => TmhOp::Fin,
            3 => TmhOp::Eager,
            _ => return None,
        })
    }
}

/// A TMH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Tmh {
    /// The operation (a [`TmhOp`] value; kept raw so that a FIN can copy a
    /// request's header but for it).
    pub op: u8,
    /// The sender's opaque context.
    pub app_ctx: u32,
    /// The tag.
    pub tag: u64,
}

/// An RVH: where the rendezvous data is on the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rvh {
    /// Its virtual address.
    pub va: u64,
    /// The rkey that lets the receiver read it.
    pub rkey: u32,
    /// Its length.
    pub len: u32,
}

/// What the first bytes of a tag-matching message say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmMessage {
    /// NO_TAG: delivered whole.
    NoTag,
    /// EAGER: the data starts at [`TMH_LEN`].
    Eager(Tmh),
    /// RNDV: user data, if any, starts at [`RNDV_HDRS_LEN`].
    Rndv(Tmh, Rvh),
    /// FIN: the request's headers but the operation.
    Fin(Tmh, Rvh),
}

/// Why a message's headers are not a tag-matching message's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmParseError {
    /// Empty, or shorter than the headers its operation needs.
    Short,
    /// An operation byte of no known operation.
    UnknownOp(u8),
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(v)
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(v)
}

impl Tmh {
    /// Reads a TMH from the first [`TMH_LEN`] bytes of `b`.
    pub fn read(b: &[u8]) -> Result<Self, TmParseError> {
        if b.len() < TMH_LEN {
            return Err(TmParseError::Short);
        }
        Ok(Tmh {
            op: b[0],
            app_ctx: be32(b, 4),
            tag: be64(b, 8),
        })
    }

    /// Writes the TMH into the first [`TMH_LEN`] bytes of `out` (the
    /// reserved bytes zero); `None` if `out` is shorter.
    pub fn write(&self, out: &mut [u8]) -> Option<()> {
        let out = out.get_mut(..TMH_LEN)?;
        out[0] = self.op;
        out[1..4].fill(0);
        out[4..8].copy_from_slice(&self.app_ctx.to_be_bytes());
        out[8..16].copy_from_slice(&self.tag.to_be_bytes());
        Some(())
    }
}

impl Rvh {
    /// Reads an RVH from the first [`RVH_LEN`] bytes of `b`.
    pub fn read(b: &[u8]) -> Result<Self, TmParseError> {
        if b.len() < RVH_LEN {
            return Err(TmParseError::Short);
        }
        Ok(Rvh {
            va: be64(b, 0),
            rkey: be32(b, 8),
            len: be32(b, 12),
        })
    }

    /// Writes the RVH into the first [`RVH_LEN`] bytes of `out`; `None` if
    /// `out` is shorter.
    pub fn write(&self, out: &mut [u8]) -> Option<()> {
        let out = out.get_mut(..RVH_LEN)?;
        out[0..8].copy_from_slice(&self.va.to_be_bytes());
        out[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        out[12..16].copy_from_slice(&self.len.to_be_bytes());
        Some(())
    }
}

/// Parses the headers at the start of a message; `first` holds its first
/// bytes (its first packet's payload, or all of it).
pub fn parse(first: &[u8]) -> Result<TmMessage, TmParseError> {
    let op = *first.first().ok_or(TmParseError::Short)?;
    match TmhOp::from_u8(op).ok_or(TmParseError::UnknownOp(op))? {
        TmhOp::NoTag => Ok(TmMessage::NoTag),
        TmhOp::Eager => Ok(TmMessage::Eager(Tmh::read(first)?)),
        TmhOp::Rndv => Ok(TmMessage::Rndv(
            Tmh::read(first)?,
            Rvh::read(first.get(TMH_LEN..).unwrap_or(&[]))?,
        )),
        TmhOp::Fin => Ok(TmMessage::Fin(
            Tmh::read(first)?,
            Rvh::read(first.get(TMH_LEN..).unwrap_or(&[]))?,
        )),
    }
}

/// Writes a FIN for the rendezvous request `(tmh, rvh)` into `out`: the
/// request's headers with the operation FIN. Returns its length, or
/// `None` if `out` is shorter than [`RNDV_HDRS_LEN`].
pub fn write_fin(tmh: &Tmh, rvh: &Rvh, out: &mut [u8]) -> Option<usize> {
    let fin = Tmh {
        op: TmhOp::Fin as u8,
        ..*tmh
    };
    fin.write(out)?;
    rvh.write(out.get_mut(TMH_LEN..)?)?;
    Some(RNDV_HDRS_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes rdma-core's `tests/test_tag_matching.py` writes for an
    /// eager message with tag 5: the opcode at 0, the tag big endian at 8.
    #[test]
    fn eager_as_rdma_core_writes_it() {
        let mut b = [b'c'; 64];
        b[0] = 3;
        b[8..16].copy_from_slice(&5u64.to_be_bytes());
        let m = parse(&b).unwrap();
        assert_eq!(
            m,
            TmMessage::Eager(Tmh {
                op: 3,
                app_ctx: u32::from_be_bytes([b'c'; 4]),
                tag: 5
            })
        );
    }

    #[test]
    fn rndv_and_fin_round_trip() {
        let tmh = Tmh {
            op: TmhOp::Rndv as u8,
            app_ctx: 0x0102_0304,
            tag: 0x1122_3344_5566_7788,
        };
        let rvh = Rvh {
            va: 0xdead_beef_0000_1000,
            rkey: 0x4242,
            len: 1 << 20,
        };
        let mut b = [0u8; 40];
        tmh.write(&mut b).unwrap();
        rvh.write(&mut b[TMH_LEN..]).unwrap();
        assert_eq!(&b[..4], &[1, 0, 0, 0]);
        assert_eq!(&b[4..8], &[1, 2, 3, 4]);
        assert_eq!(&b[24..28], &[0, 0, 0x42, 0x42]);
        assert_eq!(parse(&b), Ok(TmMessage::Rndv(tmh, rvh)));
        let mut f = [0xffu8; 32];
        assert_eq!(write_fin(&tmh, &rvh, &mut f), Some(32));
        assert_eq!(
            parse(&f),
            Ok(TmMessage::Fin(
                Tmh {
                    op: TmhOp::Fin as u8,
                    ..tmh
                },
                rvh
            ))
        );
        assert_eq!(write_fin(&tmh, &rvh, &mut [0u8; 31]), None);
    }

    #[test]
    fn short_and_unknown() {
        assert_eq!(parse(&[]), Err(TmParseError::Short));
        assert_eq!(parse(&[0]), Ok(TmMessage::NoTag));
        assert_eq!(parse(&[3; 15]), Err(TmParseError::Short));
        assert_eq!(parse(&[1; 31]), Err(TmParseError::Short));
        assert_eq!(parse(&[2; 16]), Err(TmParseError::Short));
        assert_eq!(parse(&[4; 32]), Err(TmParseError::UnknownOp(4)));
        assert_eq!(parse(&[0xff]), Err(TmParseError::UnknownOp(0xff)));
        // Every length of every leading byte: an answer, never a panic.
        for op in 0..=255u8 {
            for len in 0..40 {
                let mut b = [0u8; 40];
                b[0] = op;
                let _ = parse(&b[..len]);
            }
        }
    }
}
