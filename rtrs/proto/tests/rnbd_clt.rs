// SPDX-License-Identifier: GPL-2.0

//! The RNBD client's decisions: `map_device` options, mapping names, the
//! limits taken from a (possibly hostile) server's OPEN answer, the `rw`
//! word of each IO.

use rtrs_proto::rnbd::{AccessMode, OpenRsp, RNBD_FUA, RNBD_WRITEBACK};
use rtrs_proto::rnbd_clt::{
    dev_dir_name, io_rw, parse_ipv4, parse_sectors, DevLimits, MapError, MapOpts, PathSpec,
    MAP_MAX_PATHS, RTRS_PORT,
};
use rtrs_proto::rnbd_srv::{BlockKind, BlockOp};
use rtrs_proto::Error;

#[test]
fn map_options_as_the_kernel_takes_them() {
    let o = MapOpts::parse(
        b"sessname=s1 path=ip:10.0.0.1 path=ip:10.0.1.1@ip:10.0.1.2 device_path=ram0\n",
        2,
    )
    .unwrap();
    assert_eq!(o.sessname, b"s1");
    assert_eq!(o.device_path, b"ram0");
    assert_eq!(o.access_mode, AccessMode::Rw);
    assert_eq!(o.nr_poll_queues, 0);
    assert_eq!(
        o.paths(),
        &[
            PathSpec {
                src: None,
                dst: [10, 0, 0, 1],
                port: RTRS_PORT
            },
            PathSpec {
                src: Some([10, 0, 1, 1]),
                dst: [10, 0, 1, 2],
                port: RTRS_PORT
            },
        ]
    );
    // Spaces collapse; a port applies to the paths after it; the modes.
    let o = MapOpts::parse(
        b"  path=1.2.3.4  dest_port=4321 path=5.6.7.8 sessname=x device_path=/dev/a/b access_mode=migration nr_poll_queues=-1",
        4,
    )
    .unwrap();
    assert_eq!(o.paths()[0].port, RTRS_PORT);
    assert_eq!(o.paths()[1].port, 4321);
    assert_eq!(o.access_mode, AccessMode::Migration);
    assert_eq!(o.nr_poll_queues, 4);
    assert_eq!(
        MapOpts::parse(b"sessname=x device_path=d access_mode=ro", 1)
            .unwrap()
            .access_mode,
        AccessMode::Ro
    );
    // No path is needed here (an existing session has them).
    assert_eq!(
        MapOpts::parse(b"sessname=x device_path=d", 1)
            .unwrap()
            .n_paths,
        0
    );
}

#[test]
fn map_options_refused() {
    let long = [b'a'; 256];
    let mut sess = b"device_path=d sessname=".to_vec();
    sess.extend_from_slice(&long);
    let mut dev = b"sessname=s device_path=".to_vec();
    dev.extend_from_slice(&long);
    let mut many = b"sessname=s device_path=d".to_vec();
    for _ in 0..=MAP_MAX_PATHS {
        many.extend_from_slice(b" path=1.1.1.1");
    }
    let cases: &[(&[u8], MapError)] = &[
        (b"", MapError::Missing),
        (b"sessname=s", MapError::Missing),
        (b"device_path=d path=1.2.3.4", MapError::Missing),
        (b"sessname=s device_path=d bogus=1", MapError::Unknown),
        (b"sessname=s device_path=d path", MapError::Unknown),
        (b"sessname= device_path=d", MapError::Unknown),
        (b"sessname=a/b device_path=d", MapError::BadSessname),
        (&sess, MapError::BadSessname),
        (&dev, MapError::BadDevicePath),
        (&many, MapError::TooManyPaths),
        (b"sessname=s device_path=d path=1.2.3", MapError::BadPath),
        (
            b"sessname=s device_path=d path=1.2.3.4.5",
            MapError::BadPath,
        ),
        (
            b"sessname=s device_path=d path=1.2.3.256",
            MapError::BadPath,
        ),
        (
            b"sessname=s device_path=d path=gid:fe80::1",
            MapError::BadPath,
        ),
        (b"sessname=s device_path=d path=1.2.3.4@", MapError::BadPath),
        (b"sessname=s device_path=d path=1..3.4", MapError::BadPath),
        (
            b"sessname=s device_path=d dest_port=65536",
            MapError::BadPort,
        ),
        (b"sessname=s device_path=d dest_port=-1", MapError::BadPort),
        (b"sessname=s device_path=d dest_port=12a", MapError::BadPort),
        (
            b"sessname=s device_path=d access_mode=RW",
            MapError::BadAccessMode,
        ),
        (
            b"sessname=s device_path=d nr_poll_queues=3",
            MapError::BadPollQueues,
        ),
        (
            b"sessname=s device_path=d nr_poll_queues=-2",
            MapError::BadPollQueues,
        ),
    ];
    for (text, want) in cases {
        assert_eq!(
            MapOpts::parse(text, 2),
            Err(*want),
            "{:?}",
            String::from_utf8_lossy(text)
        );
        assert!(!want.what().is_empty());
    }
    assert_eq!(parse_ipv4(b"ip:0.0.0.0"), Ok([0; 4]));
    assert_eq!(parse_ipv4(b"255.255.255.255"), Ok([255; 4]));
    assert_eq!(parse_ipv4(b"0255.1.1.1"), Err(MapError::BadPath));
}

#[test]
fn map_options_never_panic() {
    // Random words from the options' alphabet: parse or refuse.
    let alphabet = b"sesnamdvic_pth=ro@.:0123456789 \n-x";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 80) as usize;
        let mut t = Vec::with_capacity(len);
        let mut y = x;
        for _ in 0..len {
            y = y.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            t.push(alphabet[(y >> 33) as usize % alphabet.len()]);
        }
        if let Ok(o) = MapOpts::parse(&t, 8) {
            assert!(!o.sessname.is_empty() && !o.device_path.is_empty());
            assert!(o.n_paths <= MAP_MAX_PATHS);
        }
    }
}

#[test]
fn mapping_directory_names() {
    let mut out = [0u8; 300];
    let n = dev_dir_name(b"/dev/ram0", b"s1", &mut out).unwrap();
    assert_eq!(&out[..n], b"!dev!ram0@s1");
    let n = dev_dir_name(b"ram0", b"s", &mut out).unwrap();
    assert_eq!(&out[..n], b"ram0@s");
    let long = [b'a'; 200];
    assert!(matches!(
        dev_dir_name(&long, &long[..60], &mut out),
        Err(Error::OutOfRange { .. })
    ));
    let mut small = [0u8; 5];
    assert!(dev_dir_name(b"ram0", b"s", &mut small).is_err());
}

fn rsp() -> OpenRsp {
    OpenRsp {
        device_id: 3,
        nsectors: 65536,
        max_hw_sectors: 256,
        max_write_zeroes_sectors: 0,
        max_discard_sectors: 1 << 20,
        discard_granularity: 4096,
        discard_alignment: 0,
        physical_block_size: 4096,
        logical_block_size: 512,
        max_segments: 128,
        secure_discard: 0,
        obsolete_rotational: 0,
        cache_policy: 0,
    }
}

#[test]
fn limits_of_a_sane_answer() {
    let l = DevLimits::of(&rsp(), 128 * 1024).unwrap();
    assert_eq!(l.nsectors, 65536);
    assert_eq!(l.logical_block_size, 512);
    assert_eq!(l.physical_block_size, 4096);
    assert_eq!(l.max_hw_sectors, 256);
    assert_eq!(l.max_discard_sectors, 1 << 20);
    assert_eq!(l.discard_granularity, 4096);
    assert_eq!(l.max_write_zeroes_sectors, 0);
    assert_eq!(l.max_secure_erase_sectors, 0);
    assert!(!l.write_cache && !l.fua);
    // The transport's size bounds the server's.
    assert_eq!(
        DevLimits::of(&rsp(), 64 * 1024).unwrap().max_hw_sectors,
        128
    );
    // None said: the transport's.
    let mut r = rsp();
    r.max_hw_sectors = 0;
    assert_eq!(DevLimits::of(&r, 64 * 1024).unwrap().max_hw_sectors, 128);
    // Cache bits: FUA only with a write cache.
    r.cache_policy = RNBD_FUA;
    let l = DevLimits::of(&r, 4096).unwrap();
    assert!(!l.write_cache && !l.fua);
    r.cache_policy = RNBD_WRITEBACK | RNBD_FUA;
    let l = DevLimits::of(&r, 4096).unwrap();
    assert!(l.write_cache && l.fua);
    r.secure_discard = 1;
    assert_eq!(
        DevLimits::of(&r, 4096).unwrap().max_secure_erase_sectors,
        1 << 20
    );
}

#[test]
fn limits_of_a_hostile_answer() {
    for lbs in [0u16, 1, 256, 511, 513, 1000, 8192, 65535] {
        let mut r = rsp();
        r.logical_block_size = lbs;
        assert!(
            matches!(DevLimits::of(&r, 1 << 20), Err(Error::OutOfRange { .. })),
            "{lbs}"
        );
    }
    let mut r = rsp();
    r.logical_block_size = 4096;
    r.nsectors = 7;
    assert!(DevLimits::of(&r, 1 << 20).is_err());
    r.nsectors = 8 * 10 + 7;
    assert_eq!(DevLimits::of(&r, 1 << 20).unwrap().nsectors, 80);
    // Physical below logical, not a power of two: the logical one.
    r.physical_block_size = 512;
    assert_eq!(
        DevLimits::of(&r, 1 << 20).unwrap().physical_block_size,
        4096
    );
    r.physical_block_size = 12288;
    assert_eq!(
        DevLimits::of(&r, 1 << 20).unwrap().physical_block_size,
        4096
    );
    // Granularity below a block or odd: a block.
    r.discard_granularity = 100;
    assert_eq!(
        DevLimits::of(&r, 1 << 20).unwrap().discard_granularity,
        4096
    );
    // A tiny largest request: a page.
    r.max_hw_sectors = 1;
    assert_eq!(DevLimits::of(&r, 1 << 20).unwrap().max_hw_sectors, 8);
    // A transport under a page a request.
    assert!(DevLimits::of(&rsp(), 2048).is_err());
    // Random answers: every limit the block layer is given is sane.
    let mut x: u64 = 12345;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = OpenRsp {
            device_id: x as u32,
            nsectors: x >> 3,
            max_hw_sectors: (x >> 7) as u32,
            max_write_zeroes_sectors: (x >> 11) as u32,
            max_discard_sectors: (x >> 13) as u32,
            discard_granularity: (x >> 17) as u32 & 0x1ffff,
            discard_alignment: 0,
            physical_block_size: (x >> 23) as u16,
            logical_block_size: 1 << ((x >> 40) % 16),
            max_segments: (x >> 29) as u16,
            secure_discard: (x >> 31) as u16 & 1,
            obsolete_rotational: 0,
            cache_policy: (x >> 50) as u8,
        };
        let io = ((x >> 44) as u32 & 0xfffff) | 1;
        if let Ok(l) = DevLimits::of(&r, io) {
            let lbs = l.logical_block_size;
            assert!(lbs.is_power_of_two() && (512..=4096).contains(&lbs));
            assert!(l.physical_block_size >= lbs && l.physical_block_size.is_power_of_two());
            assert!(l.nsectors > 0 && l.nsectors % u64::from(lbs / 512) == 0);
            assert!(l.max_hw_sectors >= 8 && l.max_hw_sectors <= (io / 512).max(8));
            assert!(l.discard_granularity >= lbs && l.discard_granularity.is_power_of_two());
            assert!(!l.fua || l.write_cache);
        }
    }
}

#[test]
fn io_rw_as_the_server_reads_it() {
    let kinds = [
        BlockKind::Read,
        BlockKind::Write,
        BlockKind::Flush,
        BlockKind::Discard,
        BlockKind::SecureErase,
        BlockKind::WriteZeroes,
    ];
    for kind in kinds {
        for (sync, fua) in [(false, false), (true, false), (false, true), (true, true)] {
            let b = BlockOp::of(io_rw(kind, sync, fua)).unwrap();
            assert_eq!(b.kind, kind);
            let flush = kind == BlockKind::Flush;
            assert_eq!(b.fua, fua || flush);
            assert_eq!(b.sync, kind == BlockKind::Read || sync || fua || flush);
        }
    }
}

#[test]
fn resize_sizes_as_kstrtoul_reads_them() {
    assert_eq!(parse_sectors(b"1000"), Some(1000));
    assert_eq!(parse_sectors(b"0"), Some(0));
    assert_eq!(parse_sectors(b"0x10"), Some(16));
    assert_eq!(parse_sectors(b"0X1f"), Some(31));
    assert_eq!(parse_sectors(b"010"), Some(8));
    assert_eq!(parse_sectors(b"18446744073709551615"), Some(u64::MAX));
    for bad in [
        &b""[..],
        b"0x",
        b"-1",
        b"+1",
        b"12a",
        b"09",
        b" 1",
        b"1 ",
        b"18446744073709551616",
        b"0x10000000000000000",
    ] {
        assert_eq!(parse_sectors(bad), None, "{:?}", core::str::from_utf8(bad));
    }
}
