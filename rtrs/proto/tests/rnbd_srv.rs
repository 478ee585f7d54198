// SPDX-License-Identifier: GPL-2.0

//! The RNBD server's decisions: block operations, device paths, access
//! modes.

use rtrs_proto::rnbd::{
    AccessMode, RNBD_F_FUA, RNBD_F_SYNC, RNBD_OP_DISCARD, RNBD_OP_FLUSH, RNBD_OP_READ,
    RNBD_OP_SECURE_ERASE, RNBD_OP_WRITE, RNBD_OP_WRITE_ZEROES,
};
use rtrs_proto::rnbd_srv::{admit, full_path, mode_name, sane_prio, BlockKind, BlockOp, PATH_MAX};
use rtrs_proto::Error;

#[test]
fn every_operation_and_flag() {
    let cases = [
        (RNBD_OP_READ, BlockKind::Read),
        (RNBD_OP_WRITE, BlockKind::Write),
        (RNBD_OP_FLUSH, BlockKind::Flush),
        (RNBD_OP_DISCARD, BlockKind::Discard),
        (RNBD_OP_SECURE_ERASE, BlockKind::SecureErase),
        (RNBD_OP_WRITE_ZEROES, BlockKind::WriteZeroes),
    ];
    for (op, kind) in cases {
        for flags in [0, RNBD_F_SYNC, RNBD_F_FUA, RNBD_F_SYNC | RNBD_F_FUA] {
            let b = BlockOp::of(op | flags).unwrap();
            assert_eq!(b.kind, kind);
            assert_eq!(b.sync, flags & RNBD_F_SYNC != 0);
            assert_eq!(b.fua, flags & RNBD_F_FUA != 0);
        }
    }
    assert!(BlockKind::Read.has_data() && BlockKind::Write.has_data());
    assert!(!BlockKind::Flush.has_data() && !BlockKind::Discard.has_data());
    assert!(!BlockKind::Read.writes() && BlockKind::WriteZeroes.writes());
}

#[test]
fn unknown_operations_and_flags_are_refused() {
    for op in 6..=255u32 {
        assert_eq!(BlockOp::of(op), Err(Error::BadType(op as u16)));
    }
    for bit in 10..32 {
        assert!(BlockOp::of(RNBD_OP_WRITE | 1 << bit).is_err(), "bit {bit}");
    }
}

fn path(search: &str, sess: &str, name: &str) -> Result<String, Error> {
    let mut out = vec![0xffu8; PATH_MAX];
    let n = full_path(
        search.as_bytes(),
        sess.as_bytes(),
        name.as_bytes(),
        &mut out,
    )?;
    assert_eq!(out[n], 0, "NUL after the path");
    Ok(String::from_utf8(out[..n].to_vec()).unwrap())
}

#[test]
fn paths_under_the_search_path() {
    assert_eq!(path("/", "s", "ram0").unwrap(), "/ram0");
    assert_eq!(path("/dev", "s", "ram0").unwrap(), "/dev/ram0");
    assert_eq!(path("/dev/", "s", "/ram0").unwrap(), "/dev/ram0");
    assert_eq!(path("//dev///", "s", "mapper//x").unwrap(), "/dev/mapper/x");
    assert_eq!(
        path("/srv/%SESSNAME%/", "clt1", "disk").unwrap(),
        "/srv/clt1/disk"
    );
    // Only the part before the mark counts, as in the C.
    assert_eq!(
        path("/srv/%SESSNAME%/ignored", "c", "d").unwrap(),
        "/srv/c/d"
    );
}

#[test]
fn bad_names_are_refused() {
    assert_eq!(path("/dev", "s", ""), Err(Error::BadName));
    assert_eq!(path("/dev", "s", "../etc/x"), Err(Error::BadName));
    assert_eq!(path("/dev", "s", "a/../../b"), Err(Error::BadName));
    assert_eq!(path("/dev", "s", "a..b"), Err(Error::BadName));
    let mut out = [0u8; 64];
    assert_eq!(
        full_path(b"/dev", b"s", b"a\0b", &mut out),
        Err(Error::BadName)
    );
}

#[test]
fn long_paths_are_refused_not_cut() {
    // "/dev/" and the name, then the NUL: PATH_MAX bytes at most.
    let long = "x".repeat(PATH_MAX - 5);
    assert!(path("/dev", "s", &long).is_err());
    let fits = "x".repeat(PATH_MAX - 6);
    assert_eq!(path("/dev", "s", &fits).unwrap().len(), PATH_MAX - 1);
    let mut small = [0u8; 8];
    assert!(full_path(b"/dev", b"s", b"ram0", &mut small).is_err());
    let mut exact = [0u8; 10];
    assert_eq!(full_path(b"/dev", b"s", b"ram0", &mut exact), Ok(9));
}

#[test]
fn access_modes() {
    assert_eq!(admit(0, AccessMode::Ro), Ok(0));
    assert_eq!(admit(2, AccessMode::Ro), Ok(2));
    assert_eq!(admit(0, AccessMode::Rw), Ok(1));
    assert!(admit(1, AccessMode::Rw).is_err());
    assert_eq!(admit(0, AccessMode::Migration), Ok(1));
    assert_eq!(admit(1, AccessMode::Migration), Ok(2));
    assert!(admit(2, AccessMode::Migration).is_err());
    assert_eq!(mode_name(AccessMode::Ro), "ro");
    assert_eq!(mode_name(AccessMode::Rw), "rw");
    assert_eq!(mode_name(AccessMode::Migration), "migration");
}

#[test]
fn io_ranges() {
    use rtrs_proto::rnbd_srv::check_io;
    let n = 2048; // 1 MiB
                  // Reads and writes move exactly their data area, in whole blocks.
    assert!(check_io(BlockKind::Read, 0, 4096, 4096, n, 512).is_ok());
    assert!(check_io(BlockKind::Write, 2040, 4096, 4096, n, 4096).is_ok());
    assert!(
        check_io(BlockKind::Write, 2041, 4096, 4096, n, 512).is_err(),
        "past the end"
    );
    assert!(
        check_io(BlockKind::Write, 1, 4096, 4096, n, 4096).is_err(),
        "unaligned sector"
    );
    assert!(
        check_io(BlockKind::Read, 0, 4096, 4095, n, 512).is_err(),
        "short area"
    );
    assert!(
        check_io(BlockKind::Read, 0, 0, 0, n, 512).is_err(),
        "empty read"
    );
    assert!(
        check_io(BlockKind::Read, 0, 1000, 1000, n, 512).is_err(),
        "part of a block"
    );
    assert!(check_io(BlockKind::Read, u64::MAX, 512, 512, n, 512).is_err());
    assert!(check_io(BlockKind::Read, u64::MAX - 1, 4096, 4096, u64::MAX, 512).is_err());
    // Dataless operations carry no data and cover whole blocks.
    assert!(check_io(BlockKind::Discard, 8, 1 << 19, 0, n, 4096).is_ok());
    assert!(check_io(BlockKind::WriteZeroes, 8, 4096, 4096, n, 512).is_err());
    assert!(check_io(BlockKind::SecureErase, 0, 0, 0, n, 512).is_err());
    // A flush has no range, and no data.
    assert!(check_io(BlockKind::Flush, u64::MAX, u32::MAX, 0, n, 512).is_ok());
    assert!(check_io(BlockKind::Flush, 0, 0, 512, n, 512).is_err());
}

#[test]
fn io_ranges_never_panic() {
    use rtrs_proto::rnbd_srv::check_io;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let kinds = [
        BlockKind::Read,
        BlockKind::Write,
        BlockKind::Flush,
        BlockKind::Discard,
        BlockKind::SecureErase,
        BlockKind::WriteZeroes,
    ];
    for _ in 0..200_000 {
        let k = kinds[(next() % 6) as usize];
        let pick = |v: u64, small: u64| if v & 1 == 0 { v >> 1 } else { (v >> 1) % small };
        let sector = pick(next(), 4096);
        let size = pick(next(), 1 << 20) as u32;
        let data = pick(next(), 1 << 20) as usize;
        let ns = pick(next(), 1 << 16);
        let lbs = 1u32 << (next() % 32);
        let _ = check_io(k, sector, size, data, ns, lbs);
        let _ = BlockOp::of(next() as u32);
        let mut out = [0u8; 64];
        let name = next().to_le_bytes();
        let _ = full_path(&name[..(next() % 9) as usize], b"s", &name, &mut out);
    }
}

#[test]
fn priorities_of_known_classes_only() {
    // Class 2 (best-effort), level 4; class 1 (real-time) with a hint.
    assert_eq!(sane_prio(2 << 13 | 4), 2 << 13 | 4);
    assert_eq!(sane_prio(1 << 13 | 1 << 3), 1 << 13 | 1 << 3);
    assert_eq!(sane_prio(3 << 13), 3 << 13);
    assert_eq!(sane_prio(0), 0);
    for class in 4..8u16 {
        assert_eq!(sane_prio(class << 13 | 5), 0, "class {class}");
    }
}
