//! A KTAP reader that counts leaf results and keeps what failures said.
//!
//! A result line is `[indent]ok N name [# directive]` or `not ok ...`.
//! Nested KTAP (indented subtests, as the kernel's kunit prints and as our
//! selftests lift from test modules) makes a parent result summarise its
//! children; only leaves are counted, so a suite of ten cases counts ten.
//!
//! A test prints its diagnostics (nested lines that are not results) before
//! its result line, so each result keeps the diagnostics since the previous
//! result line; [`failure_report`] shows the last of them under each counted
//! failure, within a bound, and [`tail`] shows where a stream stopped.

/// The outcome of one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
}

/// One result line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    /// Nesting depth: indentation / 4 (after an optional `# ` prefix, which
    /// kselftest's runner puts in front of a test program's own output).
    pub depth: usize,
    pub outcome: Outcome,
    pub name: String,
    /// Whether a deeper result line came before it (it is a parent).
    pub has_children: bool,
    /// The [`diagnostic`] lines between the previous result line and this
    /// one, trimmed, in order.
    pub diagnostics: Vec<String>,
}

/// Counts of leaf results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    /// The `N passed, N failed, N skipped` line.
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// Parses one line as a KTAP result line.
pub fn parse_result(line: &str) -> Option<(usize, Outcome, String)> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut rest = line;
    let mut indent = 0;
    loop {
        if let Some(r) = rest.strip_prefix("# ") {
            // kselftest's runner prefixes a program's output with "# ";
            // each such prefix is one level of nesting.
            indent += 4;
            rest = r;
        } else if let Some(r) = rest.strip_prefix("    ") {
            indent += 4;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\t') {
            indent += 4;
            rest = r;
        } else {
            break;
        }
    }
    let (fail, rest) = if let Some(r) = rest.strip_prefix("not ok ") {
        (true, r)
    } else if let Some(r) = rest.strip_prefix("ok ") {
        (false, r)
    } else {
        return None;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].trim_start();
    let (name, directive) = match rest.split_once('#') {
        Some((n, d)) => (n.trim(), Some(d.trim())),
        None => (rest.trim(), None),
    };
    let skip = directive.is_some_and(|d| d.len() >= 4 && d[..4].eq_ignore_ascii_case("skip"));
    let outcome = match (fail, skip) {
        (_, true) => Outcome::Skip,
        (true, false) => Outcome::Fail,
        (false, false) => Outcome::Pass,
    };
    Some((indent / 4, outcome, name.to_string()))
}

/// Returns a line, trimmed, if it is a test's own diagnostic: nested (behind
/// one or more `# ` prefixes, or indented), and not a result line, a KTAP
/// version line, a plan (`1..N`) or empty once its prefixes are taken off.
pub fn diagnostic(line: &str) -> Option<&str> {
    if parse_result(line).is_some() {
        return None;
    }
    let mut rest = line.trim_end();
    let mut nested = false;
    loop {
        if let Some(r) = rest.strip_prefix("# ") {
            rest = r;
        } else if rest == "#" {
            rest = "";
        } else if let Some(r) = rest.strip_prefix([' ', '\t']) {
            rest = r;
        } else {
            break;
        }
        nested = true;
    }
    let header = rest.starts_with("KTAP version ") || rest.starts_with("TAP version ");
    if !nested || rest.is_empty() || header || is_plan(rest) {
        return None;
    }
    Some(line.trim())
}

/// Whether `s` is a KTAP plan: `N..M`, then nothing or a directive.
fn is_plan(s: &str) -> bool {
    let Some((from, to)) = s.split_once("..") else {
        return false;
    };
    let to_digits = to.bytes().take_while(u8::is_ascii_digit).count();
    !from.is_empty()
        && from.bytes().all(|b| b.is_ascii_digit())
        && to_digits > 0
        && to[to_digits..]
            .trim_start()
            .chars()
            .next()
            .is_none_or(|c| c == '#')
}

/// Parses all result lines of a KTAP stream, marking parents and keeping
/// each one's diagnostics.
pub fn parse(text: &str) -> Vec<TestResult> {
    let mut out: Vec<TestResult> = Vec::new();
    // For each depth, whether a deeper result was seen since the last result
    // at that depth or shallower.
    let mut deeper_seen: Vec<bool> = Vec::new();
    let mut diagnostics: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some((depth, outcome, name)) = parse_result(line) else {
            if let Some(d) = diagnostic(line) {
                diagnostics.push(d.to_string());
            }
            continue;
        };
        if deeper_seen.len() <= depth {
            deeper_seen.resize(depth + 1, false);
        }
        let has_children = deeper_seen[depth];
        for d in deeper_seen.iter_mut().skip(depth) {
            *d = false;
        }
        for d in deeper_seen.iter_mut().take(depth) {
            *d = true;
        }
        out.push(TestResult {
            depth,
            outcome,
            name,
            has_children,
            diagnostics: std::mem::take(&mut diagnostics),
        });
    }
    out
}

/// Whether the result at `i` is counted: a leaf, or a parent that failed
/// although none of its children did (a hidden failure).
fn counted(results: &[TestResult], i: usize) -> bool {
    let r = &results[i];
    let hidden_failure = r.has_children
        && r.outcome == Outcome::Fail
        && !children_of(results, i).any(|c| c.outcome == Outcome::Fail);
    !r.has_children || hidden_failure
}

/// Counts the leaf results. A parent that failed although all of its
/// children passed (a script failing after its module's cases) counts as
/// one more failure, so no failure is ever hidden by nesting.
pub fn summarize(results: &[TestResult]) -> Summary {
    let mut s = Summary::default();
    for (i, r) in results.iter().enumerate() {
        if counted(results, i) {
            match r.outcome {
                Outcome::Pass => s.passed += 1,
                Outcome::Fail => s.failed += 1,
                Outcome::Skip => s.skipped += 1,
            }
        }
    }
    s
}

/// The results nested under the parent at `i` (they precede it).
fn children_of(results: &[TestResult], i: usize) -> impl Iterator<Item = &TestResult> {
    let depth = results[i].depth;
    results[..i]
        .iter()
        .rev()
        .take_while(move |r| r.depth > depth)
}

/// At most this many diagnostic lines (the last) are shown per failure.
pub const CONTEXT_PER_FAILURE: usize = 12;
/// At most this many context lines are shown across all failures.
pub const CONTEXT_TOTAL: usize = 40;
/// How many KTAP lines [`tail`] shows of a stream that stopped early.
pub const TAIL_LINES: usize = 8;

/// The failures, for the caller to print behind its own prefix: a
/// `FAILED: name` line for each failed result, in order; under each counted
/// failure (a leaf, or a hidden failure, see [`summarize`]) the last
/// [`CONTEXT_PER_FAILURE`] of its diagnostics as `  | line`, after an
/// `  | (N earlier lines not shown)` line if some were cut. The context
/// lines, notes included, are at most [`CONTEXT_TOTAL`] in all (the failure
/// that reaches the bound shows its last lines that fit); a last line says
/// how many failures' context that left out.
pub fn failure_report(results: &[TestResult]) -> Vec<String> {
    let mut out = Vec::new();
    let mut budget = CONTEXT_TOTAL;
    let mut left_out = 0;
    for (i, r) in results.iter().enumerate() {
        if r.outcome != Outcome::Fail {
            continue;
        }
        out.push(format!("FAILED: {}", r.name));
        let context = &r.diagnostics;
        if context.is_empty() || !counted(results, i) {
            continue;
        }
        let mut shown = context.len().min(CONTEXT_PER_FAILURE).min(budget);
        if shown < context.len() && shown + 1 > budget {
            // The note about the cut lines takes one of the lines left.
            shown = budget.saturating_sub(1);
        }
        if shown == 0 {
            left_out += 1;
            continue;
        }
        let cut = context.len() - shown;
        if cut > 0 {
            out.push(format!("  | ({cut} earlier lines not shown)"));
        }
        out.extend(context[cut..].iter().map(|l| format!("  | {l}")));
        budget -= shown + usize::from(cut > 0);
    }
    if left_out > 0 {
        out.push(format!(
            "  (context of {left_out} more failures not shown: {CONTEXT_TOTAL} lines at most)"
        ));
    }
    out
}

/// The last `n` non-empty lines of `text`, without trailing blanks: where a
/// stream that never reached its end stopped.
pub fn tail(text: &str, n: usize) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .rev()
        .take(n)
        .collect();
    lines.reverse();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_results() {
        assert_eq!(
            parse_result("ok 1 foo"),
            Some((0, Outcome::Pass, "foo".into()))
        );
        assert_eq!(
            parse_result("not ok 12 bar baz"),
            Some((0, Outcome::Fail, "bar baz".into()))
        );
        assert_eq!(
            parse_result("ok 3 x # SKIP no device"),
            Some((0, Outcome::Skip, "x".into()))
        );
        assert_eq!(
            parse_result("not ok 3 x # skip"),
            Some((0, Outcome::Skip, "x".into()))
        );
        assert_eq!(
            parse_result("not ok 4 y # error -22"),
            Some((0, Outcome::Fail, "y".into()))
        );
        assert_eq!(
            parse_result("    ok 2 sub"),
            Some((1, Outcome::Pass, "sub".into()))
        );
        assert_eq!(
            parse_result("# ok 2 sub"),
            Some((1, Outcome::Pass, "sub".into()))
        );
        assert_eq!(
            parse_result("# # not ok 2 s"),
            Some((2, Outcome::Fail, "s".into()))
        );
    }

    #[test]
    fn non_results() {
        for l in [
            "",
            "okay 1",
            "ok",
            "ok x",
            "1..4",
            "KTAP version 1",
            "# ok",
            "[ 1.0] ok 1 a",
        ] {
            assert_eq!(parse_result(l), None, "{l:?}");
        }
    }

    #[test]
    fn nested_counts_leaves() {
        let text = "KTAP version 1\n1..2\n    KTAP version 1\n    1..3\n    ok 1 a\n    \
                    not ok 2 b\n    ok 3 c # SKIP\nnot ok 1 suite\nok 2 lone\n";
        let r = parse(text);
        assert_eq!(r.len(), 5);
        assert!(r[3].has_children);
        assert!(!r[4].has_children);
        assert_eq!(
            summarize(&r),
            Summary {
                passed: 2,
                failed: 1,
                skipped: 1
            }
        );
    }

    #[test]
    fn parent_failure_without_failed_child_counts() {
        let r = parse("    ok 1 a\n    ok 2 b\nnot ok 1 suite\n");
        assert_eq!(
            summarize(&r),
            Summary {
                passed: 2,
                failed: 1,
                skipped: 0
            }
        );
    }

    #[test]
    fn siblings_after_nested_block_are_leaves() {
        let r = parse("        ok 1 x\n    ok 1 a\n    ok 2 b\nok 1 s\n");
        assert!(r[1].has_children);
        assert!(!r[2].has_children);
        assert!(r[3].has_children);
        assert_eq!(summarize(&r).passed, 2);
    }

    #[test]
    fn diagnostics() {
        for (l, d) in [
            ("# # setup: 7 s\r", Some("# # setup: 7 s")),
            (
                "#     # serving (ucmatose): error: 8",
                Some("#     # serving (ucmatose): error: 8"),
            ),
            (
                "    # test_x: EXPECTATION FAILED ",
                Some("# test_x: EXPECTATION FAILED"),
            ),
            ("# selftests: rxe: rc.sh", Some("# selftests: rxe: rc.sh")),
            ("# 1..7 is a range", Some("# 1..7 is a range")),
            ("top level text", None),
            ("# ok 1 setup", None),
            ("# KTAP version 1", None),
            ("    TAP version 14", None),
            ("# 1..7", None),
            ("    1..0 # SKIP no device", None),
            ("# ", None),
            ("# #", None),
            ("    ", None),
            ("KTAP version 1", None),
            ("1..2", None),
        ] {
            assert_eq!(diagnostic(l), d, "{l:?}");
        }
    }

    #[test]
    fn failure_with_context() {
        let text = "KTAP version 1\n1..1\n# selftests: multihost: ucma.sh\n# KTAP version 1\n\
                    # 1..3\n# ok 1 setup\n# # setup: 7 s\n#     # serving (ucmatose): cmatose: \
                    event: RDMA_CM_EVENT_REJECTED, error: 8\n#     # \n# not ok 2 ucmatose # \
                    ucma_pair ucmatose\n# ok 3 teardown\nnot ok 1 selftests: multihost: \
                    ucma.sh # exit=1\n# rdma-rs: guest done\n";
        let r = parse(text);
        assert_eq!(r[0].diagnostics, ["# selftests: multihost: ucma.sh"]);
        assert_eq!(
            failure_report(&r),
            [
                "FAILED: ucmatose",
                "  | # # setup: 7 s",
                "  | #     # serving (ucmatose): cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8",
                // The parent's failure is its child's: no context of its own.
                "FAILED: selftests: multihost: ucma.sh",
            ]
        );
    }

    #[test]
    fn context_cut_to_last_twelve() {
        let mut text = String::new();
        for i in 1..=15 {
            text += &format!("    # line {i}\n");
        }
        text += "not ok 1 many\nnot ok 2 none\n";
        let report = failure_report(&parse(&text));
        assert_eq!(report.len(), 2 + 12 + 1);
        assert_eq!(report[0], "FAILED: many");
        assert_eq!(report[1], "  | (3 earlier lines not shown)");
        assert_eq!(report[2], "  | # line 4");
        assert_eq!(report[13], "  | # line 15");
        assert_eq!(report[14], "FAILED: none");
    }

    #[test]
    fn parent_hidden_failure_has_context() {
        let text = "# selftests: core: x.sh\n# ok 1 a\n# # a: 6 s\n# ok 2 b\n\
                    # # ran 2 cases, planned 3\nnot ok 1 selftests: core: x.sh # exit=1\n";
        let r = parse(text);
        assert_eq!(summarize(&r).failed, 1);
        assert_eq!(
            failure_report(&r),
            [
                "FAILED: selftests: core: x.sh",
                "  | # # ran 2 cases, planned 3",
            ]
        );
    }

    #[test]
    fn context_bounded_in_all() {
        let mut text = String::new();
        for t in 1..=6 {
            // Test 5 has no context, so nothing of it is left out.
            let n = if t == 5 { 0 } else { 12 };
            for i in 1..=n {
                text += &format!("# # t{t} line {i}\n");
            }
            text += &format!("# not ok {t} t{t}\n");
        }
        let report = failure_report(&parse(&text));
        let context = report.iter().filter(|l| l.starts_with("  | ")).count();
        assert_eq!(context, CONTEXT_TOTAL);
        let failed: Vec<&String> = report.iter().filter(|l| l.starts_with("FAILED")).collect();
        assert_eq!(failed.len(), 6);
        // Three whole, then the last three lines of the fourth.
        let fourth = report.iter().position(|l| l == "FAILED: t4").unwrap();
        assert_eq!(
            report[fourth + 1..fourth + 5],
            [
                "  | (9 earlier lines not shown)",
                "  | # # t4 line 10",
                "  | # # t4 line 11",
                "  | # # t4 line 12",
            ]
        );
        assert_eq!(report[fourth + 5], "FAILED: t5");
        assert_eq!(report[fourth + 6], "FAILED: t6");
        assert_eq!(
            report.last().unwrap(),
            "  (context of 1 more failures not shown: 40 lines at most)"
        );
    }

    #[test]
    fn unfinished_tail() {
        let text = "KTAP version 1\r\n1..2\r\n# selftests: rxe: rc.sh\r\n# ok 1 setup\r\n\
                    \r\n# # a\r\n# # b\r\n# # c\r\n# # d\r\n# # e\r\n\r\n# # f\r\n\n";
        assert_eq!(
            tail(text, TAIL_LINES),
            [
                "# selftests: rxe: rc.sh",
                "# ok 1 setup",
                "# # a",
                "# # b",
                "# # c",
                "# # d",
                "# # e",
                "# # f",
            ]
        );
        assert_eq!(tail("ok 1 a\n", TAIL_LINES), ["ok 1 a"]);
        assert!(tail("", TAIL_LINES).is_empty());
    }

    #[test]
    fn summary_line() {
        let s = Summary {
            passed: 3,
            failed: 0,
            skipped: 1,
        };
        assert_eq!(s.line(), "3 passed, 0 failed, 1 skipped");
    }
}
