// SPDX-License-Identifier: GPL-2.0

//! Session geometry, `mem_bits`, and requests placed in a chunk by a
//! client and found again by a server: honest requests of every shape,
//! then lying ones, which must all end in an error.

use rtrs_proto::chunk::ChunkGeometry;
use rtrs_proto::conn::ConnRsp;
use rtrs_proto::consts::*;
use rtrs_proto::imm::{mem_bits, Imm, IoReq};
use rtrs_proto::msg::{RdmaMsg, RdmaRead, RdmaWrite, SgDesc};
use rtrs_proto::rnbd::{self, Io};
use rtrs_proto::Error;

#[test]
fn mem_bits_from_queue_depth() {
    // mem_bits = 28 - (ilog2(queue_depth - 1) + 1).
    let cases = [
        (1, 28),
        (2, 27),
        (3, 26),
        (4, 26),
        (128, 21),
        (511, 19),
        (512, 19),
        (513, 18),
        (1024, 18),
        (32768, 13),
        (65535, 12),
    ];
    for (qd, bits) in cases {
        assert_eq!(mem_bits(qd), Ok(bits), "queue depth {qd}");
    }
    assert_eq!(mem_bits(DEFAULT_SESS_QUEUE_DEPTH), Ok(19));
    assert_eq!(mem_bits(0), Err(Error::BadQueueDepth(0)));
    assert_eq!(mem_bits(65536), Err(Error::BadQueueDepth(65536)));
}

#[test]
fn geometry_on_chunk_sizes() {
    let bad = |q, c| {
        Err(Error::BadGeometry {
            queue_depth: q,
            chunk_size: c,
        })
    };
    // What check_module_params accepts with the default queue depth:
    // 9 bits of chunk number leave 19 bits, up to 512 KiB chunks.
    for shift in 13..=19 {
        let g = ChunkGeometry::server(512, 1 << shift).unwrap();
        assert_eq!(g.mem_bits(), 19);
        assert_eq!(g.chunk_size(), 1 << shift);
    }
    assert_eq!(ChunkGeometry::server(512, 1 << 20), bad(512, 1 << 20));
    assert_eq!(ChunkGeometry::server(512, 4096), bad(512, 4096));
    assert_eq!(ChunkGeometry::server(512, 3 * 8192), bad(512, 3 * 8192));
    assert_eq!(ChunkGeometry::server(512, 0), bad(512, 0));
    // The largest queue depth a C server can use: with the smallest chunk
    // (13 bits), 15 bits of chunk number remain.
    assert!(ChunkGeometry::server(32768, MIN_CHUNK_SIZE).is_ok());
    assert_eq!(
        ChunkGeometry::server(32769, MIN_CHUNK_SIZE),
        bad(32769, MIN_CHUNK_SIZE)
    );
    assert_eq!(
        ChunkGeometry::server(MAX_SESS_QUEUE_DEPTH, MIN_CHUNK_SIZE),
        bad(MAX_SESS_QUEUE_DEPTH, MIN_CHUNK_SIZE)
    );
    // A client takes what the server sends, power of two or not.
    assert!(ChunkGeometry::new(512, 100_000).is_ok());
    assert_eq!(ChunkGeometry::new(0, 8192), Err(Error::BadQueueDepth(0)));
    assert!(ChunkGeometry::new(1, 1 << 28).is_ok());
    assert_eq!(ChunkGeometry::new(2, 1 << 28), bad(2, 1 << 28));
    assert_eq!(ChunkGeometry::new(1, (1 << 28) + 1), bad(1, (1 << 28) + 1));
}

#[test]
fn geometry_from_conn_rsp() {
    let rsp = ConnRsp::accept(512, DEFAULT_MAX_CHUNK_SIZE - MAX_HDR_SIZE, MAX_HDR_SIZE, 0);
    let g = ChunkGeometry::from_conn_rsp(&rsp).unwrap();
    assert_eq!(
        g,
        ChunkGeometry::server(512, DEFAULT_MAX_CHUNK_SIZE).unwrap()
    );
    let overflow = ConnRsp::accept(512, u32::MAX, 1, 0);
    assert!(matches!(
        ChunkGeometry::from_conn_rsp(&overflow),
        Err(Error::BadGeometry { .. })
    ));
    assert_eq!(
        ChunkGeometry::from_conn_rsp(&ConnRsp::accept(0, 4096, 4096, 0)),
        Err(Error::BadQueueDepth(0))
    );
}

const CHUNK: u32 = 16384;

/// 48 chunks: chunk numbers take 6 bits, and 48 to 63 fit them but are
/// beyond the queue.
fn geometry() -> ChunkGeometry {
    ChunkGeometry::server(48, CHUNK).unwrap()
}

/// The server's side: from the immediate to the request in the chunk.
fn receive(g: &ChunkGeometry, chunk: &[u8], imm: u32) -> Result<(u32, u32, u32), Error> {
    let Imm::IoReq(payload) = Imm::parse(imm)? else {
        panic!("not an IO request immediate");
    };
    let at = g.locate(payload)?;
    let req = g.parse_request(chunk, at)?;
    Ok((req.buf_id, req.data_len(), req.usr_len()))
}

#[test]
fn write_request_placed_and_found() {
    let g = geometry();
    let io = Io {
        device_id: 1,
        sector: 8,
        rw: rnbd::RNBD_OP_WRITE,
        bi_size: 4096,
        prio: 0,
    };
    let data = [0x5au8; 4096];
    let l = g.write_request(47, 4096, rnbd::IO_LEN as u16).unwrap();
    assert_eq!(l.rdma_off, 0);
    assert_eq!(l.msg_off, 4096 + 32);
    assert_eq!(l.rdma_len, 4096 + 32 + 4);
    // The client's RDMA write: data, user message, rtrs message.
    let mut chunk = vec![0u8; CHUNK as usize];
    let w = l.rdma_off as usize;
    chunk[w..w + 4096].copy_from_slice(&data);
    io.write(&mut chunk[w + 4096..]).unwrap();
    RdmaWrite { usr_len: 32 }
        .write(&mut chunk[l.msg_off as usize..])
        .unwrap();
    // The server's side.
    let Imm::IoReq(payload) = Imm::parse(l.imm).unwrap() else {
        panic!()
    };
    let at = g.locate(payload).unwrap();
    assert_eq!(
        at,
        IoReq {
            buf_id: 47,
            off: 4128
        }
    );
    let req = g.parse_request(&chunk, at).unwrap();
    assert_eq!(req.msg, RdmaMsg::Write(RdmaWrite { usr_len: 32 }));
    assert_eq!(req.data_range(), 0..4096);
    assert_eq!(req.usr_range(), 4096..4128);
    assert_eq!(&chunk[req.data_range()], &data);
    assert_eq!(Io::parse(&chunk[req.usr_range()]), Ok(io));
}

#[test]
fn read_request_placed_and_found() {
    let g = geometry();
    let desc = [SgDesc {
        addr: 0xffff_8880_0000_0000,
        key: 0x1234,
        len: 8192,
    }];
    let l = g.read_request(3, 8192, 32, 1).unwrap();
    assert_eq!(l.rdma_off, 8192);
    assert_eq!(l.msg_off, 8192 + 32);
    assert_eq!(l.rdma_len, 32 + 8 + 16);
    let mut chunk = vec![0u8; CHUNK as usize];
    let msg = RdmaRead::new(32, RTRS_MSG_NEED_INVAL_F, &desc).unwrap();
    msg.write(&mut chunk[l.msg_off as usize..]).unwrap();
    assert_eq!(receive(&g, &chunk, l.imm), Ok((3, 8192, 32)));
    let at = g.locate(l.imm & MAX_IMM_PAYL_MASK).unwrap();
    let req = g.parse_request(&chunk, at).unwrap();
    let RdmaMsg::Read(r) = req.msg else { panic!() };
    assert!(r.need_inval());
    let d = r.descs().get(0).unwrap();
    assert_eq!(d, desc[0]);
    assert_eq!(g.read_response_len(&d), Ok(8192));
}

#[test]
fn requests_that_do_not_fit() {
    let g = geometry();
    // Exactly full, one byte too many.
    assert!(g.write_request(0, CHUNK - 4 - 32, 32).is_ok());
    assert_eq!(
        g.write_request(0, CHUNK - 4 - 31, 32),
        Err(Error::OutsideChunk {
            end: u64::from(CHUNK) + 1,
            chunk_size: CHUNK
        })
    );
    assert!(g.read_request(0, CHUNK - 24 - 32, 32, 1).is_ok());
    // The C client would accept this one: it counts 8 bytes, not 24.
    assert!(matches!(
        g.read_request(0, CHUNK - 8 - 32, 32, 1),
        Err(Error::OutsideChunk { .. })
    ));
    assert_eq!(
        g.read_request(0, 0, 0, 2),
        Err(Error::TooManySg { count: 2, max: 1 })
    );
    assert!(matches!(
        g.write_request(48, 0, 0),
        Err(Error::OutOfRange {
            field: "buf_id",
            ..
        })
    ));
    assert!(matches!(
        g.write_request(0, u32::MAX, u16::MAX),
        Err(Error::OutsideChunk { .. })
    ));
}

#[test]
fn lying_clients_get_errors() {
    let g = geometry();
    let mem_bits = g.mem_bits();
    assert_eq!(mem_bits, 22);
    let mut chunk = vec![0u8; CHUNK as usize];
    let imm = |buf_id: u32, off: u32| (buf_id << mem_bits) | off;

    // A chunk number beyond the queue, an offset beyond the chunk.
    assert!(matches!(
        g.locate(imm(48, 0)),
        Err(Error::OutOfRange {
            field: "buf_id",
            ..
        })
    ));
    assert!(matches!(
        g.locate(imm(0, CHUNK)),
        Err(Error::OutOfRange { field: "off", .. })
    ));
    assert!(matches!(
        g.parse_request(
            &chunk,
            IoReq {
                buf_id: 0,
                off: CHUNK
            }
        ),
        Err(Error::OutOfRange { field: "off", .. })
    ));

    // A write message straddling the end of the chunk: the C server would
    // read past it.
    let off = CHUNK - 2;
    chunk[off as usize..].copy_from_slice(&RTRS_MSG_WRITE.to_le_bytes());
    assert_eq!(
        g.parse_request(&chunk, g.locate(imm(1, off)).unwrap()),
        Err(Error::OutsideChunk {
            end: u64::from(CHUNK) + 2,
            chunk_size: CHUNK
        })
    );
    // A read whose descriptor would lie beyond the chunk.
    let off = CHUNK - 8;
    RdmaRead::new(0, 0, &[])
        .unwrap()
        .write(&mut chunk[off as usize..])
        .unwrap();
    chunk[off as usize + 6] = 1;
    assert_eq!(
        g.parse_request(&chunk, IoReq { buf_id: 1, off }),
        Err(Error::OutsideChunk {
            end: u64::from(CHUNK) + 16,
            chunk_size: CHUNK
        })
    );
    // A user message longer than the offset.
    RdmaWrite { usr_len: 101 }.write(&mut chunk[100..]).unwrap();
    assert_eq!(
        g.parse_request(
            &chunk,
            IoReq {
                buf_id: 2,
                off: 100
            }
        ),
        Err(Error::UsrLenTooLong {
            usr_len: 101,
            off: 100
        })
    );
    RdmaWrite { usr_len: 100 }.write(&mut chunk[100..]).unwrap();
    assert!(g
        .parse_request(
            &chunk,
            IoReq {
                buf_id: 2,
                off: 100
            }
        )
        .is_ok());
    // Another type at the offset.
    chunk[100] = RTRS_MSG_INFO_RSP as u8;
    assert_eq!(
        g.parse_request(
            &chunk,
            IoReq {
                buf_id: 2,
                off: 100
            }
        ),
        Err(Error::BadType(RTRS_MSG_INFO_RSP))
    );
    // A read with two descriptors.
    RdmaRead::new(0, 0, &[])
        .unwrap()
        .write(&mut chunk[200..])
        .unwrap();
    chunk[206] = 2;
    assert_eq!(
        g.parse_request(
            &chunk,
            IoReq {
                buf_id: 2,
                off: 200
            }
        ),
        Err(Error::TooManySg { count: 2, max: 1 })
    );
    // A read response longer than the chunk, or empty.
    let d = |len| SgDesc {
        addr: 0,
        key: 0,
        len,
    };
    assert!(g.read_response_len(&d(CHUNK)).is_ok());
    assert!(g.read_response_len(&d(CHUNK + 1)).is_err());
    assert!(g.read_response_len(&d(0)).is_err());
    // A caller's chunk slice shorter than the chunk: the message must be
    // in it; bytes past the chunk size are never looked at.
    RdmaWrite { usr_len: 0 }.write(&mut chunk[300..]).unwrap();
    assert_eq!(
        g.parse_request(
            &chunk[..302],
            IoReq {
                buf_id: 0,
                off: 300
            }
        ),
        Err(Error::TooShort {
            needed: 304,
            got: 302
        })
    );
    let mut long = chunk.clone();
    long.extend_from_slice(&[0u8; 8]);
    let off = CHUNK - 2;
    long[off as usize..off as usize + 4].copy_from_slice(&[2, 0, 0, 0]);
    assert!(matches!(
        g.parse_request(&long, IoReq { buf_id: 0, off }),
        Err(Error::OutsideChunk { .. })
    ));
}

#[test]
fn every_offset_of_a_small_chunk() {
    // For every offset and every content of a 2-chunk session with 8 KiB
    // chunks, the request found is inside the chunk.
    let g = ChunkGeometry::new(2, 8192).unwrap();
    let mut chunk = vec![0u8; 8192];
    for off in 0..8192u32 {
        for (t, sg, usr) in [(2u16, 0u16, 0u16), (3, 1, 8), (3, 0, 9000), (2, 0, 4)] {
            let o = off as usize;
            let hdr = [t.to_le_bytes(), usr.to_le_bytes(), [0, 0], sg.to_le_bytes()];
            for (i, b) in hdr.iter().flatten().enumerate() {
                if let Some(x) = chunk.get_mut(o + i) {
                    *x = *b;
                }
            }
            if let Ok(req) = g.parse_request(&chunk, IoReq { buf_id: 1, off }) {
                assert!(req.msg_off as usize + req.msg.len() <= 8192);
                assert!(req.usr_range().end <= 8192);
                assert!(req.data_range().end <= req.usr_range().start);
            }
        }
    }
}
