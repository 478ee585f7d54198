// SPDX-License-Identifier: GPL-2.0

//! pktinject: sends hostile RoCE v2 packets to a device's UDP port 4791.
//!
//! ```text
//! pktinject --src IP --dst IP --kind KIND [--qpn N] [--psn N] [--pkey N]
//!           [--qkey N] [--rkey N] [--va N] [--len N] [--count N]
//!           [--seed N] [--sport N]
//! ```
//!
//! The packets are made by the library part (`src/lib.rs`, see the usage
//! text for the kinds); this file sends each one as one datagram from an
//! ordinary UDP socket bound to `--src`, unconnected, with `sendto` to
//! `--dst` port 4791. Over IPv4 the socket has `IP_PMTUDISC_DO`, so Linux
//! sends with DF set and identification 0, which is what the ICRC was
//! computed with; the source port is read back from the bound socket.
//! Prints `pktinject: sent N KIND`. Exit status 0: all sent; 1: a socket
//! or send error; 2: bad usage. Built static into the test guest and used
//! by selftests/rxe/hostile.sh.

use std::io::{self, Write as _};
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::Duration;

use pktinject::{parse_args, Command, CraftError, Flow, Injector, Kind, Options, USAGE};
use rxe_wire::packet::ROCE_V2_UDP_PORT;

/// Sends `buf` as one datagram, retrying while the kernel is out of
/// buffers for a moment.
fn send(sock: &UdpSocket, buf: &[u8], dst: SocketAddr) -> io::Result<()> {
    let mut retries = 0;
    loop {
        match sock.send_to(buf, dst) {
            Ok(n) if n == buf.len() => return Ok(()),
            Ok(n) => return Err(io::Error::other(format!("sent {n} of {} bytes", buf.len()))),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if retries < 1000
                    && (e.kind() == io::ErrorKind::WouldBlock
                        || e.raw_os_error() == Some(libc::ENOBUFS)) =>
            {
                retries += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("pktinject: {msg}");
    ExitCode::from(1)
}

fn usage(msg: &str) -> ExitCode {
    let synopsis = USAGE.split("\n\n").next().unwrap_or(USAGE);
    eprintln!("pktinject: {msg}\n{synopsis}\n(pktinject --help lists the kinds)");
    ExitCode::from(2)
}

fn run(o: &Options) -> ExitCode {
    // Checked before binding: one address family, a source address.
    if let Err(e) = Flow::new(o.src, o.dst, o.sport) {
        return usage(&e.to_string());
    }
    let sock = match UdpSocket::bind(SocketAddr::new(o.src, o.sport)) {
        Ok(s) => s,
        Err(e) => return fail(&format!("bind {}: {e}", SocketAddr::new(o.src, o.sport))),
    };
    // DF on every IPv4 datagram and no local fragmentation: then Linux
    // gives an unconnected socket's datagrams identification 0, which the
    // ICRC was computed with (with the default, `IP_PMTUDISC_WANT`, the
    // identification would be random).
    if o.src.is_ipv4() {
        if let Err(e) = rustix::net::sockopt::set_ip_mtu_discover(
            &sock,
            rustix::net::sockopt::Ipv4PathMtuDiscovery::DO,
        ) {
            return fail(&format!("IP_MTU_DISCOVER: {e}"));
        }
    }
    let sport = match sock.local_addr() {
        Ok(a) => a.port(),
        Err(e) => return fail(&format!("getsockname: {e}")),
    };
    // The port the kernel picked, which the ICRC covers.
    let flow = match Flow::new(o.src, o.dst, sport) {
        Ok(f) => f,
        Err(e) => return fail(&e.to_string()),
    };
    let dst = SocketAddr::new(o.dst, ROCE_V2_UDP_PORT);
    let mut inj = Injector::new(flow, o.kind, o.params, o.seed);
    let mut sent = 0u64;
    let mut index = 0u64;
    while sent < o.count {
        let pkt = match inj.next(index) {
            Ok(p) => p,
            Err(e @ CraftError::TooLong { .. }) => {
                return usage(&format!("--len {}: {e}", o.params.len))
            }
            Err(e) => return fail(&e.to_string()),
        };
        index += 1;
        let buf = inj.udp_payload(&pkt);
        match send(&sock, buf, dst) {
            Ok(()) => sent += 1,
            // Too large for the path MTU with DF: the mix goes on without.
            Err(e)
                if o.kind == Kind::Random
                    && pkt.kind == Kind::TooLong
                    && e.raw_os_error() == Some(libc::EMSGSIZE) =>
            {
                eprintln!(
                    "pktinject: {} bytes do not fit the path MTU to {}; too-long left out of the mix",
                    buf.len(),
                    o.dst
                );
                inj.leave_out_too_long();
            }
            Err(e) => {
                let hint = if e.raw_os_error() == Some(libc::EMSGSIZE) && flow.is_ipv4() {
                    " (IPv4 datagrams go out with DF set: the path MTU must hold the whole packet)"
                } else {
                    ""
                };
                return fail(&format!(
                    "sending {} packet {} ({} bytes) to {dst}: {e}{hint}",
                    pkt.kind,
                    index - 1,
                    buf.len()
                ));
            }
        }
    }
    let mut out = io::stdout().lock();
    if writeln!(out, "pktinject: sent {sent} {}", o.kind).is_err() || out.flush().is_err() {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let mut args = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => args.push(s),
            Err(a) => return usage(&format!("argument {a:?} is not UTF-8")),
        }
    }
    match parse_args(&args) {
        Ok(Command::Run(o)) => run(&o),
        Ok(Command::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(msg) => usage(&msg),
    }
}
