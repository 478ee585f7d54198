// SPDX-License-Identifier: GPL-2.0

//! The send side of a MAD agent as a state machine: requests waiting for
//! their response, their timeouts and retries, and response matching.
//!
//! A request that expects a response (a GET, a SET, or a CM message that
//! the peer answers) is started with a timeout and a number of retries.
//! [`Outstanding::on_response`] matches a received response to it by
//! transaction ID and management class, as the C MAD layer's
//! `find_send_wr` does, and finishes it. [`Outstanding::on_tick`] tells the
//! caller, at the deadlines, to send a request again or that it has timed
//! out after its last retry. [`Outstanding::extend`] pushes a deadline out
//! (a CM MRA: the peer asks for more time). Transaction IDs are made by
//! [`TidSource`]: the agent's 32-bit number in the high half and a counter
//! in the low half, as the C layer does, so responses find their agent.
//!
//! Pure logic over `core` with a fixed capacity: time comes in as
//! milliseconds from the caller's clock, and nothing here sends.

/// How a request is retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Milliseconds to wait for the response after each send.
    pub timeout_ms: u32,
    /// Sends after the first before giving up.
    pub retries: u8,
}

/// What [`Outstanding::on_tick`] asks of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send the request with this transaction ID again (same bytes); it is
    /// `attempt` (from 1) of the retries.
    Resend {
        /// The request.
        tid: u64,
        /// Which retry this is.
        attempt: u8,
        /// The caller's cookie.
        cookie: u64,
    },
    /// No response after the last retry: the request failed.
    TimedOut {
        /// The request.
        tid: u64,
        /// The caller's cookie.
        cookie: u64,
    },
}

/// Why a request could not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// As many requests outstanding as there is room for.
    Full,
    /// A request with this transaction ID is already outstanding.
    Duplicate,
    /// A zero timeout: the request could never get its response.
    NoTimeout,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    tid: u64,
    class: u8,
    cookie: u64,
    deadline: u64,
    retry: Retry,
    /// Retries sent so far.
    sent: u8,
}

/// The requests of one agent waiting for responses, at most `N`.
#[derive(Clone, Debug)]
pub struct Outstanding<const N: usize> {
    entries: [Option<Entry>; N],
}

impl<const N: usize> Default for Outstanding<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Outstanding<N> {
    /// Nothing outstanding.
    pub const fn new() -> Self {
        Outstanding { entries: [None; N] }
    }

    /// How many requests wait.
    pub fn len(&self) -> usize {
        self.entries.iter().flatten().count()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn find(&self, tid: u64, class: u8) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.is_some_and(|e| e.tid == tid && e.class == class))
    }

    /// Starts waiting for the response to request `tid` of `class`, sent
    /// at `now` (ms); `cookie` comes back with the outcome.
    pub fn start(
        &mut self,
        tid: u64,
        class: u8,
        cookie: u64,
        now: u64,
        retry: Retry,
    ) -> Result<(), StartError> {
        if retry.timeout_ms == 0 {
            return Err(StartError::NoTimeout);
        }
        if self.find(tid, class).is_some() {
            return Err(StartError::Duplicate);
        }
        let slot = self
            .entries
            .iter_mut()
            .find(|e| e.is_none())
            .ok_or(StartError::Full)?;
        *slot = Some(Entry {
            tid,
            class,
            cookie,
            deadline: now.saturating_add(u64::from(retry.timeout_ms)),
            retry,
            sent: 0,
        });
        Ok(())
    }

    /// A response with `tid` of `class` arrived: the request it answers is
    /// finished and its cookie returned; None for a response nobody waits
    /// for (late, duplicate, or not ours).
    pub fn on_response(&mut self, tid: u64, class: u8) -> Option<u64> {
        let i = self.find(tid, class)?;
        self.entries.get_mut(i)?.take().map(|e| e.cookie)
    }

    /// Gives up waiting for `tid` of `class` (the caller cancelled it).
    pub fn cancel(&mut self, tid: u64, class: u8) -> Option<u64> {
        self.on_response(tid, class)
    }

    /// Waits `extra_ms` more for `tid` of `class` from `now` (a CM MRA);
    /// false if it is not outstanding.
    pub fn extend(&mut self, tid: u64, class: u8, now: u64, extra_ms: u64) -> bool {
        let Some(i) = self.find(tid, class) else {
            return false;
        };
        match self.entries.get_mut(i) {
            Some(Some(e)) => {
                e.deadline = e.deadline.max(now.saturating_add(extra_ms));
                true
            }
            _ => false,
        }
    }

    /// The earliest deadline, for the caller's timer.
    pub fn next_deadline(&self) -> Option<u64> {
        self.entries.iter().flatten().map(|e| e.deadline).min()
    }

    /// At `now`: every request whose deadline has passed is sent again
    /// (with a new deadline) or, after its last retry, fails; `act` is told
    /// which, one call each, in slot order.
    pub fn on_tick(&mut self, now: u64, mut act: impl FnMut(Action)) {
        for slot in self.entries.iter_mut() {
            let Some(e) = slot else { continue };
            if e.deadline > now {
                continue;
            }
            if e.sent < e.retry.retries {
                e.sent += 1;
                e.deadline = now.saturating_add(u64::from(e.retry.timeout_ms));
                act(Action::Resend {
                    tid: e.tid,
                    attempt: e.sent,
                    cookie: e.cookie,
                });
            } else {
                let (tid, cookie) = (e.tid, e.cookie);
                *slot = None;
                act(Action::TimedOut { tid, cookie });
            }
        }
    }
}

/// Transaction IDs of one agent: its number in the high 32 bits, a
/// counter in the low 32 (wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TidSource {
    agent: u32,
    next: u32,
}

impl TidSource {
    /// The IDs of agent `agent`, starting the counter at `first`.
    pub const fn new(agent: u32, first: u32) -> Self {
        TidSource { agent, next: first }
    }

    /// The next transaction ID.
    pub fn next_tid(&mut self) -> u64 {
        let tid = u64::from(self.agent) << 32 | u64::from(self.next);
        self.next = self.next.wrapping_add(1);
        tid
    }

    /// The agent a transaction ID belongs to (its high half).
    pub const fn agent_of(tid: u64) -> u32 {
        (tid >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    const R: Retry = Retry {
        timeout_ms: 100,
        retries: 2,
    };

    fn tick<const N: usize>(o: &mut Outstanding<N>, now: u64) -> Vec<Action> {
        let mut v = Vec::new();
        o.on_tick(now, |a| v.push(a));
        v
    }

    #[test]
    fn response_finishes_the_request() {
        let mut o = Outstanding::<4>::new();
        o.start(7, 0x07, 70, 0, R).unwrap();
        assert_eq!(o.len(), 1);
        assert_eq!(o.on_response(7, 0x03), None, "another class");
        assert_eq!(o.on_response(8, 0x07), None, "another TID");
        assert_eq!(o.on_response(7, 0x07), Some(70));
        assert_eq!(o.on_response(7, 0x07), None, "a duplicate response");
        assert!(o.is_empty());
        assert!(tick(&mut o, 1000).is_empty());
    }

    #[test]
    fn retries_then_times_out() {
        let mut o = Outstanding::<4>::new();
        o.start(1, 7, 10, 0, R).unwrap();
        assert_eq!(o.next_deadline(), Some(100));
        assert!(tick(&mut o, 99).is_empty());
        assert_eq!(
            tick(&mut o, 100),
            [Action::Resend {
                tid: 1,
                attempt: 1,
                cookie: 10
            }]
        );
        assert_eq!(o.next_deadline(), Some(200));
        assert_eq!(
            tick(&mut o, 250),
            [Action::Resend {
                tid: 1,
                attempt: 2,
                cookie: 10
            }]
        );
        assert!(tick(&mut o, 300).is_empty());
        assert_eq!(tick(&mut o, 350), [Action::TimedOut { tid: 1, cookie: 10 }]);
        assert!(o.is_empty());
        assert_eq!(o.next_deadline(), None);
    }

    #[test]
    fn a_late_response_after_a_retry_still_counts() {
        let mut o = Outstanding::<2>::new();
        o.start(5, 7, 1, 0, R).unwrap();
        assert_eq!(tick(&mut o, 100).len(), 1);
        assert_eq!(o.on_response(5, 7), Some(1));
        assert!(tick(&mut o, 10_000).is_empty());
    }

    #[test]
    fn extend_waits_longer() {
        let mut o = Outstanding::<2>::new();
        o.start(9, 7, 3, 0, R).unwrap();
        assert!(o.extend(9, 7, 50, 1000));
        assert!(tick(&mut o, 900).is_empty());
        assert_eq!(tick(&mut o, 1050).len(), 1);
        assert!(!o.extend(10, 7, 0, 5), "not outstanding");
        // Never shortens.
        assert!(o.extend(9, 7, 0, 1));
        assert_eq!(o.next_deadline(), Some(1150));
    }

    #[test]
    fn capacity_duplicates_and_bad_timeouts() {
        let mut o = Outstanding::<2>::new();
        o.start(1, 7, 0, 0, R).unwrap();
        assert_eq!(o.start(1, 7, 0, 0, R), Err(StartError::Duplicate));
        o.start(1, 3, 0, 0, R).unwrap();
        assert_eq!(o.start(2, 7, 0, 0, R), Err(StartError::Full));
        assert_eq!(o.cancel(1, 7), Some(0));
        let none = Retry {
            timeout_ms: 0,
            retries: 3,
        };
        assert_eq!(o.start(2, 7, 0, 0, none), Err(StartError::NoTimeout));
        assert_eq!(o.cancel(1, 3), Some(0));
        o.start(2, 7, 0, u64::MAX - 5, R).unwrap();
        assert_eq!(o.next_deadline(), Some(u64::MAX), "saturates");
    }

    #[test]
    fn zero_retries_time_out_at_the_first_deadline() {
        let mut o = Outstanding::<1>::new();
        let once = Retry {
            timeout_ms: 10,
            retries: 0,
        };
        o.start(4, 7, 44, 0, once).unwrap();
        assert_eq!(tick(&mut o, 10), [Action::TimedOut { tid: 4, cookie: 44 }]);
    }

    #[test]
    fn tids_carry_their_agent_and_wrap() {
        let mut t = TidSource::new(0xabcd, u32::MAX);
        let a = t.next_tid();
        let b = t.next_tid();
        assert_eq!(a, 0xabcd_ffff_ffff);
        assert_eq!(b, 0xabcd_0000_0000);
        assert_eq!(TidSource::agent_of(a), 0xabcd);
        assert_eq!(TidSource::agent_of(b), 0xabcd);
    }
}
