// SPDX-License-Identifier: GPL-2.0

//! The page rules of a zero-copy request (`rtrs_proto::pieces`).

use rtrs_proto::pieces::pieces_fit;

const P: usize = 4096;

#[test]
fn whole_pages_and_one_piece_fit() {
    assert!(pieces_fit([(0, P)], P));
    assert!(pieces_fit([(0, P), (0, P), (0, P)], P));
    // One piece anywhere in its page.
    assert!(pieces_fit([(512, 512)], P));
    assert!(pieces_fit([(P - 1, 1)], P));
}

#[test]
fn a_buffer_at_any_offset_fits() {
    // 8 KiB from byte 512 of a page: the first piece ends its page, the
    // last starts one.
    assert!(pieces_fit([(512, P - 512), (0, P), (0, 512)], P));
    assert!(pieces_fit([(P - 512, 512), (0, 1024)], P));
}

#[test]
fn holes_and_overruns_do_not() {
    assert!(!pieces_fit([], P));
    assert!(!pieces_fit([(0, 0)], P));
    assert!(!pieces_fit([(0, P + 1)], P));
    assert!(!pieces_fit([(P, 1)], P));
    assert!(!pieces_fit([(P + 1, 0)], P));
    assert!(!pieces_fit([(usize::MAX, 2)], P));
    // A first piece that does not end its page, a later one that does
    // not start its own.
    assert!(!pieces_fit([(0, 512), (0, P)], P));
    assert!(!pieces_fit([(0, P), (512, 512)], P));
    // Scattered 512-byte pieces (selftests/tools/scatterio.c).
    let scattered: Vec<(usize, usize)> = (0..8).map(|i| (512 * ((i + 1) % 8), 512)).collect();
    assert!(!pieces_fit(scattered, P));
}

#[test]
fn agrees_with_a_byte_map() {
    // Against a plain model: the pieces, laid out page after page, leave
    // no gap between the first byte and the last.
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..100_000 {
        let n = (next() % 4) as usize + 1;
        let pieces: Vec<(usize, usize)> = (0..n)
            .map(|_| {
                let off =
                    [0, 512, P - 512, P, (next() % (P as u64 + 2)) as usize][(next() % 5) as usize];
                let len = [
                    0,
                    512,
                    P,
                    P - off.min(P),
                    (next() % (P as u64 + 2)) as usize,
                ][(next() % 5) as usize];
                (off, len)
            })
            .collect();
        let valid = pieces.iter().all(|&(o, l)| l > 0 && o + l <= P);
        let contiguous = pieces
            .windows(2)
            .all(|w| w[0].0 + w[0].1 == P && w[1].0 == 0);
        assert_eq!(
            pieces_fit(pieces.clone(), P),
            valid && contiguous,
            "{pieces:?}"
        );
    }
}
