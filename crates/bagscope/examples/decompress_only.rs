//! The floor for a full scan: decompress every chunk of an MCAP file on all cores and nothing
//! else. Used by `bench/peers.sh` as the baseline the stamp scan is compared with.
//!
//! usage: cargo run --release -p bagscope --example decompress_only -- FILE.mcap

use rayon::prelude::*;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: decompress_only FILE.mcap");
    let file = std::fs::File::open(&path).expect("open");
    // SAFETY: read-only map of a file nobody writes while we read it.
    let bytes = unsafe { memmap2::Mmap::map(&file) }.expect("mmap");
    let summary = mcap::Summary::read(&bytes)
        .expect("summary")
        .expect("a summary with chunk indexes");
    let total: usize = summary
        .chunk_indexes
        .par_iter()
        .map_init(
            || (zstd::bulk::Decompressor::new().unwrap(), Vec::new()),
            |(z, buf), ci| {
                let start = ci.chunk_start_offset as usize + 9;
                let end = (ci.chunk_start_offset + ci.chunk_length) as usize;
                let rec = mcap::read::parse_record(mcap::records::op::CHUNK, &bytes[start..end])
                    .expect("chunk");
                let mcap::records::Record::Chunk { header, data } = rec else {
                    unreachable!()
                };
                buf.clear();
                buf.reserve(header.uncompressed_size as usize);
                z.decompress_to_buffer(&data[..], buf).expect("zstd")
            },
        )
        .sum();
    println!(
        "{total} bytes decompressed from {} chunks",
        summary.chunk_indexes.len()
    );
}
