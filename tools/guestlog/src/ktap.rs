//! A KTAP reader that counts leaf results.
//!
//! A result line is `[indent]ok N name [# directive]` or `not ok ...`.
//! Nested KTAP (indented subtests, as the kernel's kunit prints and as our
//! selftests lift from test modules) makes a parent result summarise its
//! children; only leaves are counted, so a suite of ten cases counts ten.

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

/// Parses all result lines of a KTAP stream, marking parents.
pub fn parse(text: &str) -> Vec<TestResult> {
    let mut out: Vec<TestResult> = Vec::new();
    // For each depth, whether a deeper result was seen since the last result
    // at that depth or shallower.
    let mut deeper_seen: Vec<bool> = Vec::new();
    for line in text.lines() {
        let Some((depth, outcome, name)) = parse_result(line) else {
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
        });
    }
    out
}

/// Counts the leaf results. A parent that failed although all of its
/// children passed (a script failing after its module's cases) counts as
/// one more failure, so no failure is ever hidden by nesting.
pub fn summarize(results: &[TestResult]) -> Summary {
    let mut s = Summary::default();
    for (i, r) in results.iter().enumerate() {
        let leaf = !r.has_children;
        let hidden_failure = r.has_children
            && r.outcome == Outcome::Fail
            && !children_of(results, i).any(|c| c.outcome == Outcome::Fail);
        if leaf || hidden_failure {
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
    fn summary_line() {
        let s = Summary {
            passed: 3,
            failed: 0,
            skipped: 1,
        };
        assert_eq!(s.line(), "3 passed, 0 failed, 1 skipped");
    }
}
