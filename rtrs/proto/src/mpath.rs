// SPDX-License-Identifier: GPL-2.0

//! The decisions of a multipath RTRS client session, without the paths:
//! which path an IO takes, when a lost path is reconnected, when a silent
//! path is declared dead, and which permit (chunk) a request holds.
//!
//! - [`Policy`]: the session's `mpath_policy`, parsed and shown as the
//!   client's sysfs file does (`mpath_policy_store`, `mpath_policy_show`
//!   in rtrs-clt-sysfs.c).
//! - [`choose`]: the path for an IO among [`PathView`]s, the snapshot of
//!   each path the kernel glue fills in (`get_next_path_rr`,
//!   `get_next_path_min_inflight`, `get_next_path_min_latency` in
//!   rtrs-clt.c).
//! - [`Backoff`]: the reconnect schedule of one path
//!   (`rtrs_clt_err_recovery_work`, `rtrs_clt_reconnect_work`), and
//!   [`check_max_attempts`], the bounds of its sysfs setting.
//! - [`Heartbeat`]: the miss counter and round-trip time of one path
//!   (`hb_work` in rtrs.c, the receive handling of rtrs-clt.c).
//! - [`PermitMap`]: the bitmap of free permits (`__rtrs_get_permit`,
//!   `__rtrs_put_permit`).
//!
//! Nothing here sleeps, locks, reads a clock or draws a random number:
//! the caller passes times and random values in and acts on what comes
//! back. Nothing allocates or panics.
//!
//! # Where [`choose`] differs from the C
//!
//! The C picks among the paths in list order and breaks every tie by that
//! order; here ties go to the first path at or after the cursor, which
//! every choice moves past the path chosen, so equal paths share the
//! load. The C's `min-latency` reads `hb_cur_latency`, which is 0 until a
//! heartbeat was acknowledged, so an unmeasured path wins there; here it
//! counts as the slowest, and equal latencies go to the path with fewer
//! requests in flight.
//!
//! This module uses only `core` and its siblings [`super::consts`] and
//! [`super::error`].

use super::consts::{
    MAX_MAX_RECONN_ATT, MIN_MAX_RECONN_ATT, RTRS_HB_MISSED_MAX, RTRS_RECONNECT_SEED,
};
use super::error::Error;

// ---------------------------------------------------------------------------
// Policy

/// How the client spreads IO over the paths of a session (`enum
/// rtrs_mp_policy`, rtrs-clt.h); the discriminant is the C's value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Policy {
    /// Each IO on the next connected path (`MP_POLICY_RR`).
    RoundRobin = 0,
    /// Each IO on the path with the fewest requests in flight
    /// (`MP_POLICY_MIN_INFLIGHT`), the default of a new session
    /// (`alloc_clt`).
    #[default]
    MinInflight = 1,
    /// Each IO on the path with the shortest heartbeat round trip
    /// (`MP_POLICY_MIN_LATENCY`).
    MinLatency = 2,
}

impl Policy {
    /// The policy with this C value, if any.
    pub const fn from_u32(v: u32) -> Option<Policy> {
        match v {
            0 => Some(Policy::RoundRobin),
            1 => Some(Policy::MinInflight),
            2 => Some(Policy::MinLatency),
            _ => None,
        }
    }

    /// The C value.
    pub const fn to_u32(self) -> u32 {
        self as u32
    }

    /// Parses what is written to the sysfs file `mpath_policy`, accepting
    /// exactly what `mpath_policy_store` accepts:
    ///
    /// - the number 0, 1 or 2 as `kstrtoint` reads it: an optional `+` or
    ///   `-` sign, decimal digits, an optional newline (`"1"`, `"+01\n"`,
    ///   `"-0"`);
    /// - or text starting with `round-robin`, `min-inflight` or
    ///   `min-latency`, in any case (the C compares only that many
    ///   characters, so `"round-robin (RR: 0)"`, what [`Policy::show`]
    ///   gives, is accepted too);
    /// - or exactly `rr`, `mi` or `ml`, in any case, with an optional
    ///   newline.
    ///
    /// The input is read as the C string it is in the kernel: up to its
    /// first NUL, if any. Anything else fails with [`Error::BadPolicy`].
    pub fn parse(buf: &[u8]) -> Result<Policy, Error> {
        let s = until_nul(buf);
        if let Some(v) = kstrtoint(s) {
            if let Ok(v) = u32::try_from(v) {
                if let Some(p) = Policy::from_u32(v) {
                    return Ok(p);
                }
            }
        }
        let len = match s.split_last() {
            Some((b'\n', rest)) => rest.len(),
            _ => s.len(),
        };
        let named = |long: &[u8], short: &[u8]| {
            starts_with_ignore_case(s, long) || (len == 2 && starts_with_ignore_case(s, short))
        };
        if named(b"round-robin", b"rr") {
            Ok(Policy::RoundRobin)
        } else if named(b"min-inflight", b"mi") {
            Ok(Policy::MinInflight)
        } else if named(b"min-latency", b"ml") {
            Ok(Policy::MinLatency)
        } else {
            Err(Error::BadPolicy)
        }
    }

    /// What reading the sysfs file `mpath_policy` shows, without the
    /// newline that `mpath_policy_show` appends.
    pub const fn show(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round-robin (RR: 0)",
            Policy::MinInflight => "min-inflight (MI: 1)",
            Policy::MinLatency => "min-latency (ML: 2)",
        }
    }
}

/// `buf` up to its first NUL, as C reads a string.
fn until_nul(buf: &[u8]) -> &[u8] {
    match buf.iter().position(|&b| b == 0) {
        Some(n) => buf.get(..n).unwrap_or(buf),
        None => buf,
    }
}

/// Whether `s` starts with `prefix`, ASCII case ignored (`strncasecmp(s,
/// prefix, prefix.len()) == 0`; the kernel's `tolower` maps no other byte
/// onto an ASCII letter).
fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    matches!(s.get(..prefix.len()), Some(head) if head.eq_ignore_ascii_case(prefix))
}

/// What `kstrtoint(s, 10, &v)` stores in `v`, or `None` where it fails
/// (`-EINVAL` or `-ERANGE`): an optional sign, at least one decimal digit,
/// an optional newline and nothing after it.
fn kstrtoint(s: &[u8]) -> Option<i32> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let count = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    let rest = digits.get(count..)?;
    if count == 0 || !(rest.is_empty() || rest == b"\n") {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &b in digits.get(..count)? {
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(b.wrapping_sub(b'0')))?;
    }
    // A magnitude beyond i64 fails in the C too, whatever the sign, as
    // does anything beyond i32 once signed.
    let value = i64::try_from(magnitude).ok()?;
    let value = if negative {
        value.checked_neg()?
    } else {
        value
    };
    i32::try_from(value).ok()
}

// ---------------------------------------------------------------------------
// Path choice

/// What [`choose`] needs to know of one path of the session, filled in by
/// the caller for each IO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PathView {
    /// Whether the path is in the state `RTRS_CLT_CONNECTED`: only such a
    /// path is chosen.
    pub connected: bool,
    /// Requests in flight on the path (`stats->inflight`).
    pub inflight: u32,
    /// The last heartbeat round trip, in nanoseconds ([`Heartbeat::latency_ns`],
    /// the C's `hb_cur_latency`); 0 if none was measured yet.
    pub latency_ns: u64,
}

/// The index in `paths` of the path for the next IO under `policy`, or
/// `None` if no path may take it.
///
/// A path may take the IO if it is connected and is not `skip` (the path
/// the IO just failed on; an index beyond `paths` skips nothing). Among
/// those:
///
/// - [`Policy::RoundRobin`] takes the first at or after `rr_cursor`,
///   wrapping around, so successive IOs visit every connected path in
///   turn, each once per round, however many paths are down.
/// - [`Policy::MinInflight`] takes one with the fewest requests in flight.
/// - [`Policy::MinLatency`] takes one with the lowest measured latency;
///   a path not yet measured counts as slower than any measured one.
///   Equal latencies go to the path with fewer requests in flight.
///
/// Remaining ties go to the first candidate at or after `rr_cursor`. After
/// a choice `rr_cursor` is the index just after the path chosen (0 after
/// the last), whatever the policy; when nothing is chosen it is left
/// alone. A cursor at or beyond `paths.len()` counts modulo it.
///
/// The C tries each path at most once per IO (the `skip_list` of `struct
/// path_it`); a caller retrying an IO on another path after a second
/// failure can mark the paths tried so far as not connected in its views.
pub fn choose(
    policy: Policy,
    paths: &[PathView],
    rr_cursor: &mut usize,
    skip: Option<usize>,
) -> Option<usize> {
    let len = paths.len();
    let start = rr_cursor.checked_rem(len)?;
    let head = paths.get(..start).unwrap_or(&[]);
    let tail = paths.get(start..).unwrap_or(&[]);
    // Index ranges rather than `enumerate`, whose counter would carry an
    // overflow check.
    let in_turn = (start..len).zip(tail).chain((0..start).zip(head));
    let mut candidates = in_turn.filter(|&(i, p)| p.connected && skip != Some(i));
    let chosen = match policy {
        Policy::RoundRobin => candidates.next(),
        Policy::MinInflight => candidates.min_by_key(|&(_, p)| p.inflight),
        Policy::MinLatency => {
            candidates.min_by_key(|&(_, p)| (p.latency_ns == 0, p.latency_ns, p.inflight))
        }
    };
    let (index, _) = chosen?;
    let next = index.wrapping_add(1);
    *rr_cursor = if next < len { next } else { 0 };
    Some(index)
}

// ---------------------------------------------------------------------------
// Reconnect

/// Checks a value for the client's sysfs file `max_reconnect_attempts`,
/// as `max_reconnect_attempts_store` does: -1 (reconnect forever) up to
/// 9999 ([`MIN_MAX_RECONN_ATT`], [`MAX_MAX_RECONN_ATT`]); anything else
/// fails with [`Error::NotInRange`].
pub const fn check_max_attempts(v: i32) -> Result<i32, Error> {
    if v < MIN_MAX_RECONN_ATT || v > MAX_MAX_RECONN_ATT {
        return Err(Error::NotInRange {
            field: "max_reconnect_attempts",
            value: v as i64,
            min: MIN_MAX_RECONN_ATT as i64,
            max: MAX_MAX_RECONN_ATT as i64,
        });
    }
    Ok(v)
}

/// The reconnect schedule of one path: how long to wait before each
/// attempt, and when to give up.
///
/// When a path fails, the C waits `reconnect_delay_sec` seconds plus 0 to
/// 7 ms of jitter (`rtrs_clt_err_recovery_work`); its reconnect work then
/// gives up if `reconnect_attempts >= max_reconnect_attempts`, else counts
/// the attempt, sleeps [`RTRS_RECONNECT_BACKOFF_MS`] more and reconnects
/// (`rtrs_clt_reconnect_work`). A failed attempt starts over; a connected
/// path counts from 0 again (`rtrs_clt_path_up`).
///
/// [`Backoff::next`] is that decision taken up front: it counts the
/// attempt and gives the delay with its jitter, or `None` when the C would
/// give up. The caller sleeps [`RTRS_RECONNECT_BACKOFF_MS`] on top if it
/// wants the C's timing to the millisecond.
///
/// [`RTRS_RECONNECT_BACKOFF_MS`]: super::consts::RTRS_RECONNECT_BACKOFF_MS
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    delay_ms: u32,
    max_attempts: i32,
    attempts: u32,
    disabled: bool,
}

impl Backoff {
    /// A schedule waiting `delay_ms` (plus jitter) before each attempt and
    /// making at most `max_attempts` of them in a row: 0 never reconnects,
    /// -1 (or any negative value, which the C's unsigned field would make
    /// about 4 billion) reconnects forever. See [`check_max_attempts`] for
    /// the values sysfs accepts.
    pub const fn new(delay_ms: u32, max_attempts: i32) -> Backoff {
        Backoff {
            delay_ms,
            max_attempts,
            attempts: 0,
            disabled: false,
        }
    }

    /// Counts one more attempt and gives the milliseconds to wait before
    /// it: the delay plus `rand % RTRS_RECONNECT_SEED` (0 to 7, as the C's
    /// `get_random_u32_below(RTRS_RECONNECT_SEED)` is for a uniform
    /// `rand`), saturating. `None`, without counting, once `max_attempts`
    /// attempts were made since the last [`Backoff::reset`], or after
    /// [`Backoff::disable`].
    pub fn next(&mut self, rand: u32) -> Option<u32> {
        if self.disabled {
            return None;
        }
        if let Ok(max) = u32::try_from(self.max_attempts) {
            if self.attempts >= max {
                return None;
            }
        }
        self.attempts = self.attempts.saturating_add(1);
        let jitter = rand.checked_rem(RTRS_RECONNECT_SEED).unwrap_or(0);
        Some(self.delay_ms.saturating_add(jitter))
    }

    /// Starts counting from 0 again and undoes [`Backoff::disable`]: the
    /// path connected (`rtrs_clt_path_up`), or a reconnect was asked for
    /// through sysfs (`rtrs_clt_reconnect_from_sysfs`).
    pub fn reset(&mut self) {
        self.attempts = 0;
        self.disabled = false;
    }

    /// Stops reconnecting until the next [`Backoff::reset`], as the C does
    /// when a server changed its queue depth (it sets `reconnect_attempts`
    /// to -1 in `rtrs_rdma_conn_established`).
    pub fn disable(&mut self) {
        self.disabled = true;
    }

    /// Attempts made since the last [`Backoff::reset`].
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The most attempts in a row, as given (negative: forever).
    pub const fn max_attempts(&self) -> i32 {
        self.max_attempts
    }

    /// Changes the most attempts in a row, as a write to sysfs does; the
    /// attempts already made still count.
    pub fn set_max_attempts(&mut self, max_attempts: i32) {
        self.max_attempts = max_attempts;
    }

    /// The delay before each attempt, in milliseconds, without jitter.
    pub const fn delay_ms(&self) -> u32 {
        self.delay_ms
    }
}

// ---------------------------------------------------------------------------
// Heartbeat

/// What to do on a heartbeat period ([`Heartbeat::tick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HbAction {
    /// Send a heartbeat (`RTRS_HB_MSG_IMM`), call [`Heartbeat::sent`] and
    /// come back in an interval.
    Send,
    /// Send nothing, the last heartbeat is still unanswered; come back in
    /// an interval.
    Wait,
    /// The peer has been silent too long: fail the path (the C's
    /// `hb_err_handler`) and stop ticking.
    Fail,
}

/// The heartbeat state of one path: how many periods passed without
/// anything received, and the last round trip.
///
/// It follows `hb_work` in rtrs.c, run every [`RTRS_HB_INTERVAL_MS`]:
/// with `missed` periods counted, it fails the path if `missed >
/// max_missed`; else counts one more period, and sends a heartbeat only
/// if none was counted before. Every receive completion on the path, IO
/// response, heartbeat, acknowledgement or other, sets the count back to
/// 0 (`rtrs_clt_rdma_done`, `rtrs_srv_rdma_done`). So a path receiving
/// nothing after a heartbeat gets [`HbAction::Send`], then `max_missed`
/// times [`HbAction::Wait`], then [`HbAction::Fail`]: with the C's values,
/// the 7th period fails, 30 s after the heartbeat.
///
/// [`RTRS_HB_INTERVAL_MS`]: super::consts::RTRS_HB_INTERVAL_MS
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Heartbeat {
    max_missed: u32,
    missed: u32,
    last_sent_ns: Option<u64>,
    latency_ns: u64,
}

impl Default for Heartbeat {
    /// The C's client and server: [`RTRS_HB_MISSED_MAX`].
    fn default() -> Heartbeat {
        Heartbeat::new(RTRS_HB_MISSED_MAX)
    }
}

impl Heartbeat {
    /// A path that has missed nothing and has no latency measured, failing
    /// once more than `max_missed` periods pass unanswered
    /// (`rtrs_init_hb`).
    pub const fn new(max_missed: u32) -> Heartbeat {
        Heartbeat {
            max_missed,
            missed: 0,
            last_sent_ns: None,
            latency_ns: 0,
        }
    }

    /// One heartbeat period passed (`hb_work`). Once it gave
    /// [`HbAction::Fail`] it keeps doing so until something is received
    /// or [`Heartbeat::reset`].
    pub fn tick(&mut self) -> HbAction {
        if self.missed > self.max_missed {
            return HbAction::Fail;
        }
        let before = self.missed;
        // The C's unsigned counter wraps too (only with a maximum of
        // u32::MAX can it get there).
        self.missed = self.missed.wrapping_add(1);
        if before == 0 {
            HbAction::Send
        } else {
            HbAction::Wait
        }
    }

    /// A heartbeat was sent at `now_ns` (the C's `hb_last_sent`, taken
    /// just before posting it), on any monotonic clock in nanoseconds.
    pub fn sent(&mut self, now_ns: u64) {
        self.last_sent_ns = Some(now_ns);
    }

    /// A heartbeat acknowledgement (`RTRS_HB_ACK_IMM`) arrived at `now_ns`:
    /// a receive like any other ([`Heartbeat::any_rx`]), and the latency
    /// becomes the time since [`Heartbeat::sent`] (`hb_cur_latency`). The
    /// latency is kept at least 1 ns, as 0 means unmeasured; an
    /// acknowledgement before any heartbeat was sent, or dated before it,
    /// leaves it as it was.
    pub fn acked(&mut self, now_ns: u64) {
        self.any_rx();
        if let Some(sent) = self.last_sent_ns {
            if let Some(rtt) = now_ns.checked_sub(sent) {
                self.latency_ns = if rtt == 0 { 1 } else { rtt };
            }
        }
    }

    /// Something was received on the path: the peer is alive
    /// (`hb_missed_cnt = 0` on every receive completion).
    pub fn any_rx(&mut self) {
        self.missed = 0;
    }

    /// The heartbeat stopped, as the path's connections went down
    /// (`rtrs_stop_hb`): the count starts from 0 again. The latency is
    /// kept, as the C keeps `hb_cur_latency`.
    pub fn reset(&mut self) {
        self.missed = 0;
    }

    /// The last round trip in nanoseconds, 0 if none was measured (for
    /// [`PathView::latency_ns`]).
    pub const fn latency_ns(&self) -> u64 {
        self.latency_ns
    }

    /// Periods counted since something was last received
    /// (`hb_missed_cnt`).
    pub const fn missed(&self) -> u32 {
        self.missed
    }

    /// The most periods without an answer before the path fails
    /// (`hb_missed_max`).
    pub const fn max_missed(&self) -> u32 {
        self.max_missed
    }
}

// ---------------------------------------------------------------------------
// Permits

/// The most permits a [`PermitMap`] holds. A session with a deeper queue
/// must use no more than this many of its chunks.
pub const MAX_PERMITS: u32 = 1024;

/// Words of a [`PermitMap`].
const PERMIT_WORDS: usize = (MAX_PERMITS / u64::BITS) as usize;

/// Which of a session's permits are taken: permit `i` stands for chunk
/// `i` of the server and request `i` of the client, as `mem_id` does in
/// the C (`permits_map`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PermitMap {
    bits: [u64; PERMIT_WORDS],
    count: u32,
}

impl PermitMap {
    /// `count` free permits, numbered from 0. Fails with
    /// [`Error::NotInRange`] unless `1 <= count <= MAX_PERMITS`.
    pub const fn new(count: u32) -> Result<PermitMap, Error> {
        if count == 0 || count > MAX_PERMITS {
            return Err(Error::NotInRange {
                field: "permit count",
                value: count as i64,
                min: 1,
                max: MAX_PERMITS as i64,
            });
        }
        Ok(PermitMap {
            bits: [0; PERMIT_WORDS],
            count,
        })
    }

    /// Takes the lowest free permit, as `__rtrs_get_permit` does
    /// (`find_first_zero_bit`), or `None` if all are taken.
    pub fn take(&mut self) -> Option<u32> {
        // An index range rather than `enumerate`, whose counter would carry
        // an overflow check.
        for (w, word) in (0..PERMIT_WORDS).zip(self.bits.iter_mut()) {
            let free = !*word;
            if free != 0 {
                // w < 16: the cast keeps the value.
                let id = ((w as u32) << 6) | free.trailing_zeros();
                if id >= self.count {
                    return None;
                }
                // The lowest free bit.
                *word |= free & free.wrapping_neg();
                return Some(id);
            }
        }
        None
    }

    /// Gives permit `id` back. Fails with [`Error::OutOfRange`] if there
    /// is no such permit, with [`Error::NotTaken`] if it is free (the C
    /// would `WARN_ON` that double free).
    pub fn put(&mut self, id: u32) -> Result<(), Error> {
        if id >= self.count {
            return Err(Error::OutOfRange {
                field: "permit",
                value: id as u64,
                limit: self.count as u64,
            });
        }
        let mask = 1u64 << (id & 63);
        match self.bits.get_mut((id >> 6) as usize) {
            Some(word) if *word & mask != 0 => {
                *word &= !mask;
                Ok(())
            }
            _ => Err(Error::NotTaken(id)),
        }
    }

    /// Whether permit `id` is taken (false if there is no such permit).
    pub fn is_taken(&self, id: u32) -> bool {
        id < self.count
            && matches!(self.bits.get((id >> 6) as usize), Some(w) if w & (1u64 << (id & 63)) != 0)
    }

    /// Permits taken.
    pub fn in_use(&self) -> u32 {
        // At most 1024: no overflow (nor its check, which `sum` has).
        self.bits
            .iter()
            .fold(0u32, |n, w| n.wrapping_add(w.count_ones()))
    }

    /// Permits in all, taken or free.
    pub const fn count(&self) -> u32 {
        self.count
    }
}
