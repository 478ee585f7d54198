// SPDX-License-Identifier: GPL-2.0

//! The packet and protocol counters of a device.
//!
//! One table of named counters, shown twice: as the files of
//! `/sys/class/rdma_rs/<dev>/ports/1/hw_counters/` and as the lines of the
//! configfs item's `counters` file. Where the C rxe keeps the same counter,
//! it has the C name (`sent_pkts` ... `rdma_recvs`, incremented at the
//! same events); the rest are ours: the split of sent and received
//! packets, receive drops by reason, local ACK timeouts, and what fault
//! injection did.

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::c_str;
use kernel::str::CStr;

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $id:ident => $name:literal,)*) => {
        /// A counter of the table (its index).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub(crate) enum Counter {
            $($(#[doc = $doc])* $id,)*
        }

        /// The counters' names, in table order.
        pub(crate) static NAMES: &[&CStr] = &[$(c_str!($name),)*];
    };
}

counters! {
    /// Packets sent, on the wire or by the loopback path (C rxe).
    SentPkts => "sent_pkts",
    /// Packets that passed the header checks and reached a QP (C rxe).
    RcvdPkts => "rcvd_pkts",
    /// Duplicate requests answered again by RC responders (C rxe).
    DuplicateRequest => "duplicate_request",
    /// Requests ahead of the expected PSN: a sequence NAK went out (C rxe).
    OutOfSeqRequest => "out_of_seq_request",
    /// RNR NAKs received by RC requesters (C rxe).
    RcvdRnrErr => "rcvd_rnr_err",
    /// RNR NAKs sent by RC responders: no receive posted (C rxe).
    SendRnrErr => "send_rnr_err",
    /// PSN sequence NAKs received by RC requesters (C rxe).
    RcvdSeqErr => "rcvd_seq_err",
    /// Response packets (ACKs, READ responses) handed to requesters (C rxe).
    AckDeferred => "ack_deferred",
    /// Requests failed with RETRY_EXC_ERR (C rxe).
    RetryExceededErr => "retry_exceeded_err",
    /// Requests failed with RNR_RETRY_EXC_ERR (C rxe).
    RetryRnrExceededErr => "retry_rnr_exceeded_err",
    /// Retransmissions started, after a timeout or a sequence NAK (C rxe).
    CompleterRetryErr => "completer_retry_err",
    /// Packets the network stack refused (C rxe).
    SendErr => "send_err",
    /// Times the port went down (C rxe).
    LinkDowned => "link_downed",
    /// SEND work requests completed by requesters (C rxe).
    RdmaSends => "rdma_sends",
    /// Receive work requests completed successfully (C rxe).
    RdmaRecvs => "rdma_recvs",
    /// Packets handed to the network stack.
    TxPackets => "tx_packets",
    /// Packets to a device of ours, delivered without the network stack.
    LoopbackPackets => "loopback_packets",
    /// Of those, RC and UC packets handed over without a frame: no fault
    /// was armed on either device (`net/xmit.rs`).
    LoopbackDirect => "loopback_direct",
    /// Of those, packets handed over in a run, after the run's first,
    /// under the one taking of the receiving QP's lock that the first
    /// made (`transport/req.rs`, `send_run`).
    LoopbackRun => "loopback_run",
    /// Packets a QP took.
    RxPackets => "rx_packets",
    /// Packets for this device dropped, for any of the reasons below.
    RxDropped => "rx_dropped",
    /// Dropped: not a RoCE v2 packet we can parse (truncated, bad lengths
    /// or pad, unknown opcode, bad ICRC).
    RxDropMalformed => "rx_drop_malformed",
    /// Dropped: no QP has the destination QPN.
    RxDropNoQp => "rx_drop_no_qp",
    /// Dropped: the P_Key does not match the QP's.
    RxDropPkey => "rx_drop_pkey",
    /// Dropped: a UD datagram with the wrong Q_Key.
    RxDropQkey => "rx_drop_qkey",
    /// Dropped by the QP: wrong state or transport, out of the PSN window,
    /// no receive for a datagram, or not for anything outstanding.
    RxDropQp => "rx_drop_qp",
    /// Local ACK timeouts of RC requesters.
    Timeouts => "timeouts",
    /// READ/FLUSH requests beyond the responder's `max_dest_rd_atomic`.
    RdAtomicExceeded => "rd_atomic_exceeded",
    /// Requests refused for a length, as the C rxe refuses them: a RETH
    /// length over 2^31 (RC: NAKed as an invalid request; UC: the message
    /// dropped), a UD or UC message longer than its receive (dropped and
    /// the receive kept; through an SRQ the receive completes with
    /// REM_INV_REQ_ERR). A dropped one also counts in `rx_dropped`.
    LengthErr => "length_err",
    /// Tag matching: messages that matched a tagged buffer of a TM SRQ.
    TmMatched => "tm_matched",
    /// Tag matching: tagged messages that matched nothing (unexpected),
    /// delivered to an ordinary receive.
    TmUnexpected => "tm_unexpected",
    /// Tag matching: matched rendezvous requests whose READ was queued.
    TmRndv => "tm_rndv",
    /// Tag matching: SENDs to a TM SRQ refused for their header (no TMH,
    /// an unknown operation, headers past the payload).
    TmBadHeader => "tm_bad_header",
    /// Fault injection: sent packets dropped.
    FaultTxDrop => "fault_tx_drop",
    /// Fault injection: sent packets duplicated.
    FaultTxDup => "fault_tx_dup",
    /// Fault injection: sent packets held back behind the next one.
    FaultTxReorder => "fault_tx_reorder",
    /// Fault injection: sent packets corrupted.
    FaultTxCorrupt => "fault_tx_corrupt",
    /// Fault injection: received packets dropped.
    FaultRxDrop => "fault_rx_drop",
    /// Fault injection: received packets duplicated.
    FaultRxDup => "fault_rx_dup",
    /// Fault injection: received packets held back behind the next one.
    FaultRxReorder => "fault_rx_reorder",
    /// Fault injection: received packets corrupted.
    FaultRxCorrupt => "fault_rx_corrupt",
}

/// How many counters there are.
const COUNT: usize = Counter::FaultRxCorrupt as usize + 1;

/// The counters of one device. Any context.
pub(crate) struct Counters([AtomicU64; COUNT]);

impl Default for Counters {
    fn default() -> Self {
        Counters([const { AtomicU64::new(0) }; COUNT])
    }
}

impl Counters {
    /// Adds one to `c`.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Adds `n` to `c`.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.0[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a received packet dropped for `reason`.
    pub(crate) fn drop_rx(&self, reason: Counter) {
        self.inc(Counter::RxDropped);
        self.inc(reason);
    }

    /// The value of the counter at `index` in table order (0 past the end).
    pub(crate) fn get(&self, index: usize) -> u64 {
        self.0.get(index).map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// Every counter as a `name value` line.
    pub(crate) fn write(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        for (i, name) in NAMES.iter().enumerate() {
            writeln!(out, "{} {}", name, self.get(i))?;
        }
        Ok(())
    }
}
