//! Kernel splat detection in a guest's console log.
//!
//! Any of these in the kernel log fails a run, whatever the tests said:
//! BUG (KASAN, sleeping in atomic context, bad page, ...), WARNING (WARN_ON,
//! lockdep's reports, debugobjects), Oops and panics, refcount_t saturation,
//! kmemleak reports, UBSAN, hung tasks and RCU stalls.

/// Substrings that mark a splat, with the kind reported for each.
/// The first match names the kind, so the more specific come first.
const PATTERNS: &[(&str, &str)] = &[
    ("ODEBUG:", "debugobjects"),
    ("BUG:", "BUG"),
    ("WARNING:", "WARNING"),
    ("------------[ cut here ]------------", "WARNING"),
    ("Oops:", "Oops"),
    ("Oops[", "Oops"),
    ("general protection fault", "Oops"),
    ("Kernel panic", "panic"),
    (
        "sleeping function called from invalid context",
        "atomic sleep",
    ),
    ("refcount_t:", "refcount"),
    ("new suspected memory leak", "kmemleak"),
    ("unreferenced object 0x", "kmemleak"),
    ("UBSAN:", "UBSAN"),
    ("DEBUG_LOCKS_WARN_ON", "lockdep"),
    ("INFO: trying to register non-static key", "lockdep"),
    ("possible circular locking dependency", "lockdep"),
    ("possible recursive locking detected", "lockdep"),
    ("inconsistent lock state", "lockdep"),
    ("blocked for more than", "hung task"),
    ("detected stalls on CPUs", "RCU stall"),
    ("self-detected stall on CPU", "RCU stall"),
];

/// One splat: the kind and the line it was found on (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splat {
    pub kind: &'static str,
    pub line_no: usize,
    pub line: String,
}

/// Finds every splat line in a console log.
pub fn scan(log: &str) -> Vec<Splat> {
    let mut out = Vec::new();
    for (i, line) in log.lines().enumerate() {
        if let Some((_, kind)) = PATTERNS.iter().find(|(p, _)| line.contains(p)) {
            out.push(Splat {
                kind,
                line_no: i + 1,
                line: line.trim_end().to_string(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(log: &str) -> Vec<&'static str> {
        scan(log).into_iter().map(|s| s.kind).collect()
    }

    #[test]
    fn clean_boot_log_has_no_splat() {
        let log = "[    0.000000] Linux version 6.12.117\n\
                   [    1.234567] rdma_core: loaded\n\
                   [    2.000000] kmemleak: Kernel memory leak detector initialized\n";
        assert!(scan(log).is_empty());
    }

    #[test]
    fn each_kind_is_caught() {
        let cases = [
            (
                "[ 5.1] WARNING: CPU: 0 PID: 77 at foo.c:12 bar+0x1/0x2",
                "WARNING",
            ),
            (
                "[ 5.1] BUG: KASAN: slab-use-after-free in x+0x10/0x20",
                "BUG",
            ),
            (
                "[ 5.1] BUG: sleeping function called from invalid context at y.c:1",
                "BUG",
            ),
            ("[ 5.1] refcount_t: underflow; use-after-free.", "refcount"),
            (
                "[ 5.1] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
                "kmemleak",
            ),
            (
                "unreferenced object 0xffff888003a1b2c0 (size 64):",
                "kmemleak",
            ),
            (
                "[ 5.1] Oops: general protection fault, probably for non-canonical address",
                "Oops",
            ),
            (
                "[ 5.1] Kernel panic - not syncing: Fatal exception",
                "panic",
            ),
            (
                "[ 5.1] ODEBUG: free active (active state 0) object: x type: work_struct",
                "debugobjects",
            ),
            (
                "[ 5.1] INFO: task insmod:88 blocked for more than 120 seconds.",
                "hung task",
            ),
        ];
        for (line, kind) in cases {
            assert_eq!(kinds(line), vec![kind], "{line}");
        }
    }

    #[test]
    fn line_numbers_are_one_based() {
        let s = scan("a\nb\n[ 1.0] WARNING: at x\n");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].line_no, 3);
    }
}
