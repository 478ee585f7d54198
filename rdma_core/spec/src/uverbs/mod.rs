// SPDX-License-Identifier: GPL-2.0

//! The legacy `write()` ABI of the uverbs character device, as a sans-IO
//! codec: what unchanged libibverbs (rdma-core 44) writes to
//! `/dev/infiniband/uverbsN` once its probing ioctl has answered `ENOTTY`,
//! and what it reads back.
//!
//! - [`framing`]: the command header (and the extended header), and the
//!   split of one `write()` buffer into the core request, the driver
//!   (udata) input and the user addresses of the core and driver responses,
//!   every length checked before anything is touched.
//! - [`cmd`]: the command numbers and the table the framing validates
//!   against (request and response sizes, response pointer, udata).
//! - [`device`], [`pd_mr`], [`cq`], [`qp`], [`srq_ah`]: the request and
//!   response structures of the commands, one file per kind of object.
//! - [`rxe`]: the Soft-RoCE driver data carried in udata
//!   (`include/uapi/rdma/rdma_user_rxe.h`).
//! - [`rxe_ring`]: the rings rxe shares with user space: their geometry
//!   and indexes, the decoding of the send and receive entries librxe
//!   writes, the encoding of completions.
//! - [`event`]: the records read from a completion channel and from the
//!   asynchronous event file.
//! - [`ucma`]: the rdma_cm device's `write()` ABI (`rdma_user_cm.h`),
//!   which shares these structures' conventions.
//!
//! # Layout and byte order
//!
//! Every structure is a plain C structure of
//! `include/uapi/rdma/ib_user_verbs.h` or `rdma_user_rxe.h`, without
//! implicit padding. Each is declared here once, field by field in C order
//! and with the C field names, by the `wire_struct!` macro of this module, which derives
//! its size, its field table ([`WireStruct::FIELDS`], checked against the C
//! headers by a host test that compiles them) and its decoder and encoder.
//! Nothing is transmuted: fields are read and written one by one, in the
//! CPU's byte order, because user space writes them as native C integers
//! (little-endian on every architecture this project builds for). Fields
//! the C headers declare big-endian (`__be64` GUIDs, `__be32` immediate
//! data) are kept as raw bytes or raw values.
//!
//! Decoding never panics and never slices out of range: a buffer shorter
//! than a structure is an error ([`AbiError::TooShort`]); a longer one is
//! read up to the structure's size (the extension rule of the ABI: newer
//! user space may append fields).
//!
//! This module uses only `core`.

use core::fmt;

/// The errno a `write()` of the uverbs device returns for an
/// [`AbiError`]; the kernel side maps it to `kernel::error::code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// `EINVAL`: the framing is inconsistent.
    Inval,
    /// `ENOSPC`: a request or response area is smaller than the command's
    /// structure.
    NoSpc,
    /// `EOPNOTSUPP`: the command is not one this ABI implements.
    OpNotSupp,
    /// `EFAULT`: a user address range wraps around.
    Fault,
}

/// Why a buffer of the uverbs `write()` ABI was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiError {
    /// The buffer is shorter than what is being read from it.
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// An output buffer is shorter than the structure written to it.
    OutputTooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// The command word has bits set outside the command number and the
    /// extended flag.
    BadCommandBits(u32),
    /// The command number is not implemented (in the legacy or in the
    /// extended space, as `extended` says).
    UnknownCommand {
        /// The command number (without the extended flag).
        number: u32,
        /// Whether the extended flag was set.
        extended: bool,
    },
    /// The word counts of the header do not add up to the `write()` length.
    LengthMismatch {
        /// Bytes the header declares.
        declared: usize,
        /// Bytes written.
        got: usize,
    },
    /// The core request area is smaller than the command's request.
    RequestTooSmall {
        /// Bytes the command's request needs.
        needed: usize,
        /// Bytes the header gives the core request.
        got: usize,
    },
    /// The core response area is smaller than the command's response.
    ResponseTooSmall {
        /// Bytes the command's response needs.
        needed: usize,
        /// Bytes the header gives the core response.
        got: usize,
    },
    /// The extended header's reserved word is not zero.
    ReservedNotZero,
    /// An extended command has a response address but no response words.
    ResponseWithoutWords,
    /// An extended command has response words but no response address.
    WordsWithoutResponse,
    /// A response address range wraps around the address space.
    AddressOverflow,
    /// The core request is longer than the structure this side knows and
    /// the bytes beyond it are not all zero: a newer user space asks for
    /// something not implemented.
    NonZeroTail,
}

impl AbiError {
    /// The errno the `write()` returns for this error, as the C uverbs
    /// does for the same framing fault.
    pub fn errno(&self) -> Errno {
        match self {
            AbiError::TooShort { .. }
            | AbiError::OutputTooShort { .. }
            | AbiError::BadCommandBits(_)
            | AbiError::LengthMismatch { .. }
            | AbiError::ReservedNotZero
            | AbiError::ResponseWithoutWords
            | AbiError::WordsWithoutResponse => Errno::Inval,
            AbiError::RequestTooSmall { .. } | AbiError::ResponseTooSmall { .. } => Errno::NoSpc,
            AbiError::UnknownCommand { .. } | AbiError::NonZeroTail => Errno::OpNotSupp,
            AbiError::AddressOverflow => Errno::Fault,
        }
    }
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AbiError::TooShort { needed, got } => {
                write!(f, "uverbs buffer too short: {got} bytes, {needed} needed")
            }
            AbiError::OutputTooShort { needed, got } => {
                write!(f, "uverbs output too short: {got} bytes, {needed} needed")
            }
            AbiError::BadCommandBits(c) => write!(f, "bad uverbs command word {c:#010x}"),
            AbiError::UnknownCommand { number, extended } => {
                let kind = if extended { "extended " } else { "" };
                write!(f, "unsupported {kind}uverbs command {number}")
            }
            AbiError::LengthMismatch { declared, got } => {
                write!(f, "uverbs header declares {declared} bytes, {got} written")
            }
            AbiError::RequestTooSmall { needed, got } => {
                write!(f, "uverbs request area {got} bytes, {needed} needed")
            }
            AbiError::ResponseTooSmall { needed, got } => {
                write!(f, "uverbs response area {got} bytes, {needed} needed")
            }
            AbiError::ReservedNotZero => write!(f, "uverbs extended header reserved word set"),
            AbiError::ResponseWithoutWords => write!(f, "uverbs response address without words"),
            AbiError::WordsWithoutResponse => write!(f, "uverbs response words without address"),
            AbiError::AddressOverflow => write!(f, "uverbs response address range wraps"),
            AbiError::NonZeroTail => write!(f, "uverbs request has unknown non-zero fields"),
        }
    }
}

/// A value with a fixed C layout in the uverbs ABI.
///
/// `read_from` and `write_to` never panic: they read or write as much of
/// the value as the slice holds (missing bytes read as zero, bytes beyond
/// the slice are not written). Callers go through [`WireStruct::decode`]
/// and [`WireStruct::encode`], which check the length first.
pub trait Wire: Sized {
    /// Size in bytes (the C `sizeof`).
    const SIZE: usize;
    /// Reads the value from the start of `b`.
    fn read_from(b: &[u8]) -> Self;
    /// Writes the value at the start of `b`.
    fn write_to(&self, b: &mut [u8]);
}

/// Copies the first `N` bytes of `b`, zero-filled if `b` is shorter.
fn take<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    a
}

/// Copies `a` to the start of `b`, as much as fits.
fn put(a: &[u8], b: &mut [u8]) {
    for (d, s) in b.iter_mut().zip(a) {
        *d = *s;
    }
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn read_from(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(take(b))
            }
            fn write_to(&self, b: &mut [u8]) {
                put(&self.to_ne_bytes(), b)
            }
        }
    )*};
}

wire_int!(u8, u16, u32, u64, i32);

impl<T: Wire, const N: usize> Wire for [T; N] {
    const SIZE: usize = T::SIZE * N;
    fn read_from(b: &[u8]) -> Self {
        core::array::from_fn(|i| T::read_from(b.get(i * T::SIZE..).unwrap_or(&[])))
    }
    fn write_to(&self, b: &mut [u8]) {
        for (i, v) in self.iter().enumerate() {
            if let Some(s) = b.get_mut(i * T::SIZE..) {
                v.write_to(s);
            }
        }
    }
}

/// A C structure of the ABI: its C name and field table, and the checked
/// decoder and encoder.
pub trait WireStruct: Wire {
    /// The C structure's name (without `struct`).
    const C_NAME: &'static str;
    /// Each field's C name and size in bytes, in C order; the offsets are
    /// the running sums.
    const FIELDS: &'static [(&'static str, usize)];

    /// The offset of the field named `name`, if there is one.
    fn offset_of(name: &str) -> Option<usize> {
        let mut at = 0;
        for (n, size) in Self::FIELDS {
            if *n == name {
                return Some(at);
            }
            at += size;
        }
        None
    }

    /// Decodes the structure from the start of `b`, which must hold at
    /// least [`Wire::SIZE`] bytes; bytes beyond are ignored.
    fn decode(b: &[u8]) -> Result<Self, AbiError> {
        if b.len() < Self::SIZE {
            return Err(AbiError::TooShort {
                needed: Self::SIZE,
                got: b.len(),
            });
        }
        Ok(Self::read_from(b))
    }

    /// Encodes the structure into the first [`Wire::SIZE`] bytes of `out`
    /// and returns that size; writes nothing if `out` is too short.
    fn encode(&self, out: &mut [u8]) -> Result<usize, AbiError> {
        if out.len() < Self::SIZE {
            return Err(AbiError::OutputTooShort {
                needed: Self::SIZE,
                got: out.len(),
            });
        }
        self.write_to(out);
        Ok(Self::SIZE)
    }

    /// Fills a response area of any length the way the C uverbs answers:
    /// as much of the structure as fits (an older user space's area may
    /// be shorter), then zeros (a newer one's may be longer). Returns the
    /// bytes of the structure written, the value of an extended
    /// response's `response_length`.
    fn encode_response(&self, area: &mut [u8]) -> usize {
        area.fill(0);
        self.write_to(area);
        Self::SIZE.min(area.len())
    }
}

/// Declares a C structure of the ABI: a Rust struct with the same fields
/// in the same order, and its [`Wire`] and [`WireStruct`] implementations.
/// Field names are the C names (the layout test looks them up with
/// `offsetof`).
macro_rules! wire_struct {
    (
        $(#[$m:meta])*
        pub struct $name:ident = $cname:literal {
            $( $(#[$fm:meta])* $f:ident : $t:ty ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $(
                $(#[$fm])*
                #[doc = ""]
                #[doc = concat!("C field `", stringify!($f), "`.")]
                pub $f: $t,
            )*
        }

        impl super::Wire for $name {
            const SIZE: usize = 0 $( + <$t as super::Wire>::SIZE )*;
            fn read_from(b: &[u8]) -> Self {
                let mut at = 0usize;
                $(
                    let $f = <$t as super::Wire>::read_from(b.get(at..).unwrap_or(&[]));
                    at += <$t as super::Wire>::SIZE;
                )*
                let _ = at;
                Self { $($f),* }
            }
            fn write_to(&self, b: &mut [u8]) {
                let mut at = 0usize;
                $(
                    if let Some(s) = b.get_mut(at..) {
                        super::Wire::write_to(&self.$f, s);
                    }
                    at += <$t as super::Wire>::SIZE;
                )*
                let _ = at;
            }
        }

        impl super::WireStruct for $name {
            const C_NAME: &'static str = $cname;
            const FIELDS: &'static [(&'static str, usize)] =
                &[ $( (stringify!($f), <$t as super::Wire>::SIZE) ),* ];
        }
    };
}

pub mod cmd;
pub mod cq;
pub mod device;
pub mod event;
pub mod framing;
pub mod pd_mr;
pub mod qp;
pub mod rxe;
pub mod rxe_ring;
pub mod srq_ah;
pub mod ucma;

pub use framing::{parse, Request};
