// SPDX-License-Identifier: GPL-2.0

//! What an RNBD client decides before and around its block device: the
//! options a user writes to `map_device` ([`MapOpts::parse`]), the name
//! of a mapping's sysfs directory ([`dev_dir_name`]), the queue limits a
//! disk may take from a server's OPEN answer ([`DevLimits::of`]: the
//! server is not trusted), and the `rw` word of an IO ([`io_rw`]).
//!
//! The reference is Linux 6.12's drivers/block/rnbd (`rnbd-clt-sysfs.c`:
//! `rnbd_clt_parse_map_options`, `rnbd_clt_get_path_name`; `rnbd-clt.c`:
//! `rnbd_client_setup_device`; `rnbd-proto.h`: `rq_to_rnbd_flags`).
//! Where it differs it refuses or clamps more: a server's block size that
//! is not a power of two from 512 to 4096 is refused (the C hands it to
//! the block layer), a physical block size below it or a discard
//! granularity that is not a whole number of blocks is replaced, and the
//! largest request is the smaller of the server's and the transport's.

use super::error::Error;
use super::rnbd::{
    AccessMode, OpenRsp, RNBD_FUA, RNBD_F_FUA, RNBD_F_SYNC, RNBD_OP_DISCARD, RNBD_OP_FLUSH,
    RNBD_OP_READ, RNBD_OP_SECURE_ERASE, RNBD_OP_WRITE, RNBD_OP_WRITE_ZEROES, RNBD_WRITEBACK,
};
use super::rnbd_srv::BlockKind;

/// The most paths one `map_device` names (the C's array of six).
pub const MAP_MAX_PATHS: usize = 6;

/// The longest session name and device path (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// The server's port unless `dest_port` says otherwise (`RTRS_PORT`).
pub const RTRS_PORT: u16 = 1234;

/// One `path=`: an IPv4 destination, maybe a source, and the port that
/// was current when it was read (a `dest_port` applies to the paths
/// after it, as in the C).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathSpec {
    /// The source address, if given (`src@dst`).
    pub src: Option<[u8; 4]>,
    /// The server's address.
    pub dst: [u8; 4],
    /// The server's port.
    pub port: u16,
}

/// Why a `map_device` text is refused; [`MapError::what`] is the log
/// line's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// A word that is none of the options, or one without its value.
    Unknown,
    /// `sessname=` empty or longer than [`NAME_MAX`].
    BadSessname,
    /// `device_path=` empty or longer than [`NAME_MAX`].
    BadDevicePath,
    /// More than [`MAP_MAX_PATHS`] paths.
    TooManyPaths,
    /// A path that is not `[ip:]a.b.c.d` or `[ip:]src@[ip:]dst`.
    BadPath,
    /// `dest_port=` not a number in 0..=65535.
    BadPort,
    /// `access_mode=` none of `ro`, `rw`, `migration`.
    BadAccessMode,
    /// `nr_poll_queues=` not a number in -1..=CPUs.
    BadPollQueues,
    /// `sessname=` or `device_path=` missing.
    Missing,
}

impl MapError {
    /// What was wrong, for the log.
    pub const fn what(self) -> &'static str {
        match self {
            MapError::Unknown => "unknown parameter or missing value",
            MapError::BadSessname => "sessname empty or too long",
            MapError::BadDevicePath => "device_path empty or too long",
            MapError::TooManyPaths => "too many (> 6) paths",
            MapError::BadPath => "cannot parse a path",
            MapError::BadPort => "bad dest_port",
            MapError::BadAccessMode => "invalid access_mode",
            MapError::BadPollQueues => "bad nr_poll_queues",
            MapError::Missing => "parameters missing (sessname and device_path are needed)",
        }
    }
}

/// What a `map_device` write asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapOpts<'a> {
    /// The RTRS session's name.
    pub sessname: &'a [u8],
    /// The device's name on the server.
    pub device_path: &'a [u8],
    /// The paths (the first `n_paths`); none is needed when the session
    /// exists.
    pub paths: [PathSpec; MAP_MAX_PATHS],
    /// How many paths were given.
    pub n_paths: usize,
    /// The access mode (`rw` unless given).
    pub access_mode: AccessMode,
    /// `nr_poll_queues` (-1 already replaced by the CPU count).
    pub nr_poll_queues: u32,
}

impl<'a> MapOpts<'a> {
    /// Parses the words of `text` (separated by spaces, a trailing
    /// newline allowed) as the C does; `cpus` bounds `nr_poll_queues`.
    pub fn parse(text: &'a [u8], cpus: u32) -> Result<MapOpts<'a>, MapError> {
        let mut o = MapOpts {
            sessname: b"",
            device_path: b"",
            paths: [PathSpec::default(); MAP_MAX_PATHS],
            n_paths: 0,
            access_mode: AccessMode::Rw,
            nr_poll_queues: 0,
        };
        let mut port = RTRS_PORT;
        let (mut have_sess, mut have_dev) = (false, false);
        for word in text
            .split(|&c| c == b' ' || c == b'\n' || c == b'\t')
            .filter(|w| !w.is_empty())
        {
            let eq = word
                .iter()
                .position(|&c| c == b'=')
                .ok_or(MapError::Unknown)?;
            let (key, val) = (&word[..eq], &word[eq + 1..]);
            if val.is_empty() {
                return Err(MapError::Unknown);
            }
            match key {
                b"sessname" => {
                    if val.len() > NAME_MAX || val.contains(&b'/') {
                        return Err(MapError::BadSessname);
                    }
                    o.sessname = val;
                    have_sess = true;
                }
                b"device_path" => {
                    if val.len() > NAME_MAX {
                        return Err(MapError::BadDevicePath);
                    }
                    o.device_path = val;
                    have_dev = true;
                }
                b"path" => {
                    if o.n_paths >= MAP_MAX_PATHS {
                        return Err(MapError::TooManyPaths);
                    }
                    let (src, dst) = match val.iter().position(|&c| c == b'@' || c == b',') {
                        Some(i) => (Some(parse_ipv4(&val[..i])?), parse_ipv4(&val[i + 1..])?),
                        None => (None, parse_ipv4(val)?),
                    };
                    o.paths[o.n_paths] = PathSpec { src, dst, port };
                    o.n_paths += 1;
                }
                b"dest_port" => {
                    port = parse_uint(val, 65535).ok_or(MapError::BadPort)? as u16;
                }
                b"access_mode" => {
                    o.access_mode = match val {
                        b"ro" => AccessMode::Ro,
                        b"rw" => AccessMode::Rw,
                        b"migration" => AccessMode::Migration,
                        _ => return Err(MapError::BadAccessMode),
                    };
                }
                b"nr_poll_queues" => {
                    o.nr_poll_queues = if val == b"-1" {
                        cpus
                    } else {
                        parse_uint(val, u64::from(cpus)).ok_or(MapError::BadPollQueues)? as u32
                    };
                }
                _ => return Err(MapError::Unknown),
            }
        }
        if !have_sess || !have_dev {
            return Err(MapError::Missing);
        }
        Ok(o)
    }

    /// The paths given.
    pub fn paths(&self) -> &[PathSpec] {
        &self.paths[..self.n_paths.min(MAP_MAX_PATHS)]
    }
}

/// A decimal number (digits only, at most 10 of them) not above `max`.
fn parse_uint(s: &[u8], max: u64) -> Option<u64> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = s.iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
    (v <= max).then_some(v)
}

/// `[ip:]a.b.c.d`, each part 1 to 3 digits, at most 255.
pub fn parse_ipv4(s: &[u8]) -> Result<[u8; 4], MapError> {
    let s = s.strip_prefix(b"ip:").unwrap_or(s);
    let mut a = [0u8; 4];
    let mut n = 0;
    for part in s.split(|&c| c == b'.') {
        if n >= 4 || part.len() > 3 {
            return Err(MapError::BadPath);
        }
        a[n] = parse_uint(part, 255).ok_or(MapError::BadPath)? as u8;
        n += 1;
    }
    if n != 4 {
        return Err(MapError::BadPath);
    }
    Ok(a)
}

/// A size in sectors as the client's `resize` takes it (as the kernel's
/// `kstrtoul` with base 0 reads it, but without its optional `+`):
/// decimal digits, hex after `0x`, octal after a leading `0`; nothing
/// else, no overflow.
pub fn parse_sectors(v: &[u8]) -> Option<u64> {
    let (digits, radix) = if let Some(h) = v.strip_prefix(b"0x").or(v.strip_prefix(b"0X")) {
        (h, 16)
    } else if v.len() > 1 && v[0] == b'0' {
        (&v[1..], 8)
    } else {
        (v, 10)
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(radix)?;
        n = n.checked_mul(u64::from(radix))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Writes into `out` the name of a mapping's directory in
/// `ctl/devices/`: the device path with each `/` made `!`, `@`, the
/// session's name (the C's link name). Returns its length;
/// [`Error::OutOfRange`] if it is longer than [`NAME_MAX`] or `out`.
pub fn dev_dir_name(device_path: &[u8], sessname: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    let len = device_path.len() + 1 + sessname.len();
    if len > NAME_MAX || len > out.len() {
        return Err(Error::OutOfRange {
            field: "mapping directory name",
            value: len as u64,
            limit: NAME_MAX.min(out.len()) as u64 + 1,
        });
    }
    for (o, &c) in out.iter_mut().zip(device_path.iter()) {
        *o = if c == b'/' { b'!' } else { c };
    }
    out[device_path.len()] = b'@';
    out[device_path.len() + 1..len].copy_from_slice(sessname);
    Ok(len)
}

/// The limits a client's disk takes from an OPEN answer, checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevLimits {
    /// Capacity in 512-byte sectors, whole logical blocks.
    pub nsectors: u64,
    /// Logical block size (bytes).
    pub logical_block_size: u32,
    /// Physical block size (bytes).
    pub physical_block_size: u32,
    /// Largest read or write, sectors.
    pub max_hw_sectors: u32,
    /// Largest discard, sectors (0: none).
    pub max_discard_sectors: u32,
    /// Discard granularity, bytes.
    pub discard_granularity: u32,
    /// Largest write zeroes, sectors (0: none).
    pub max_write_zeroes_sectors: u32,
    /// Largest secure erase, sectors (0: none).
    pub max_secure_erase_sectors: u32,
    /// The server's device has a volatile write cache (flushes are sent).
    pub write_cache: bool,
    /// The server honours FUA.
    pub fua: bool,
}

/// The smallest largest-request a disk may have (a page).
pub const MIN_IO_SECTORS: u32 = 8;

impl DevLimits {
    /// The limits of a disk for `rsp`, over a transport that carries at
    /// most `max_io_size` bytes a request. [`Error::OutOfRange`] for a
    /// logical block size that is not a power of two in 512..=4096, a
    /// device of no whole block, or a transport under a page a request.
    pub fn of(rsp: &OpenRsp, max_io_size: u32) -> Result<DevLimits, Error> {
        let lbs = u32::from(rsp.logical_block_size);
        if !(512..=4096).contains(&lbs) || !lbs.is_power_of_two() {
            return Err(Error::OutOfRange {
                field: "logical block size",
                value: u64::from(lbs),
                limit: 4097,
            });
        }
        let per_block = u64::from(lbs / 512);
        let nsectors = rsp.nsectors / per_block * per_block;
        if nsectors == 0 {
            return Err(Error::OutOfRange {
                field: "device size in blocks",
                value: 0,
                limit: 1,
            });
        }
        let io_sectors = max_io_size / 512;
        if io_sectors < MIN_IO_SECTORS {
            return Err(Error::OutOfRange {
                field: "transport's request size",
                value: u64::from(max_io_size),
                limit: u64::from(MIN_IO_SECTORS) * 512,
            });
        }
        let pbs = u32::from(rsp.physical_block_size);
        let pbs = if pbs >= lbs && pbs.is_power_of_two() && pbs <= 1 << 16 {
            pbs
        } else {
            lbs
        };
        let mut max_hw = if rsp.max_hw_sectors == 0 {
            io_sectors
        } else {
            rsp.max_hw_sectors.min(io_sectors)
        };
        max_hw = max_hw.max(MIN_IO_SECTORS);
        let gran = rsp.discard_granularity;
        let gran = if gran >= lbs && gran.is_power_of_two() {
            gran
        } else {
            lbs
        };
        let write_cache = rsp.cache_policy & RNBD_WRITEBACK != 0;
        Ok(DevLimits {
            nsectors,
            logical_block_size: lbs,
            physical_block_size: pbs,
            max_hw_sectors: max_hw,
            max_discard_sectors: rsp.max_discard_sectors,
            discard_granularity: gran,
            max_write_zeroes_sectors: rsp.max_write_zeroes_sectors,
            max_secure_erase_sectors: if rsp.secure_discard != 0 {
                rsp.max_discard_sectors
            } else {
                0
            },
            write_cache,
            fua: write_cache && rsp.cache_policy & RNBD_FUA != 0,
        })
    }
}

/// The `rw` word of an IO of `kind`: its operation, `RNBD_F_SYNC` for a
/// read, a flush or a synchronous or FUA write, `RNBD_F_FUA` for a flush
/// or a FUA write (as the C's `rq_to_rnbd_flags`).
pub const fn io_rw(kind: BlockKind, sync: bool, fua: bool) -> u32 {
    let op = match kind {
        BlockKind::Read => RNBD_OP_READ,
        BlockKind::Write => RNBD_OP_WRITE,
        BlockKind::Flush => RNBD_OP_FLUSH,
        BlockKind::Discard => RNBD_OP_DISCARD,
        BlockKind::SecureErase => RNBD_OP_SECURE_ERASE,
        BlockKind::WriteZeroes => RNBD_OP_WRITE_ZEROES,
    };
    let flush = matches!(kind, BlockKind::Flush);
    let mut rw = op;
    if matches!(kind, BlockKind::Read) || sync || fua || flush {
        rw |= RNBD_F_SYNC;
    }
    if fua || flush {
        rw |= RNBD_F_FUA;
    }
    rw
}
