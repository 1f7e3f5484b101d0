//! rosbag2 `compression_mode: FILE`: each bag file is one zstd stream (`NAME.db3.zstd`,
//! `NAME.mcap.zstd`). The file is decompressed once, streamed into a temporary file (memory:
//! the decoder's window only), which is read like any other bag file and deleted when the
//! returned handle is dropped.

use std::io::{Read, Write};
use std::path::Path;

use crate::error::{BagError, Result};

/// Largest decompressed size accepted for one file, unless the compressed file is large
/// enough to make this too small (see [`default_limit_bytes`]).
const MIN_LIMIT_BYTES: u64 = 4 << 30;

/// A limit on what one compressed bag file may decompress to: a zstd stream of zeros grows a
/// thousandfold and more, and the temporary file must not fill the disk. Real recordings
/// compress 2x to 20x; 256x the compressed size, and at least 4 GiB, leaves room for any of them.
pub(crate) fn default_limit_bytes(compressed_bytes: u64) -> u64 {
    compressed_bytes.saturating_mul(256).max(MIN_LIMIT_BYTES)
}

/// Decompresses the zstd file at `path` into a new temporary file (deleted when the handle
/// drops). More than `limit_bytes` of output is an error naming the limit; a stream that
/// ends early or is damaged is an error naming the file.
#[allow(dead_code)] // for readers that cannot use a partial file
pub(crate) fn decompress_to_temp(path: &Path, limit_bytes: u64) -> Result<tempfile::TempPath> {
    let (t, stopped) = decompress_partial(path, limit_bytes)?;
    match stopped {
        None => Ok(t),
        Some(reason) => Err(BagError::Decompress {
            path: path.to_path_buf(),
            reason,
        }),
    }
}

/// [`decompress_to_temp`] that keeps what was decompressed when the stream is damaged or
/// passes the limit (a recording cut off by a crash still has its first messages): the
/// temporary file, and why it stopped early, if it did. `Err` only when nothing can be
/// written (the file cannot be opened, no temporary file).
pub(crate) fn decompress_partial(
    path: &Path,
    limit_bytes: u64,
) -> Result<(tempfile::TempPath, Option<String>)> {
    let io = |source: std::io::Error| BagError::Io {
        path: path.to_path_buf(),
        source,
    };
    let input = std::fs::File::open(path).map_err(io)?;
    let tmp = tempfile::Builder::new()
        .prefix("bagscope-zstd-")
        .tempfile()
        .map_err(|source| BagError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let (file, tmp_path) = tmp.into_parts();
    let write_err = |source: std::io::Error| BagError::Io {
        path: tmp_path.to_path_buf(),
        source,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut total: u64 = 0;
    let mut stopped = None;
    match zstd::stream::read::Decoder::new(input) {
        Err(e) => stopped = Some(format!("not a zstd stream ({e})")),
        Ok(mut dec) => {
            // Small reads: a damaged stream loses at most the read it fails in.
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match dec.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        stopped = Some(format!("damaged zstd stream after {total} bytes ({e})"));
                        break;
                    }
                };
                let room = limit_bytes - total;
                if n as u64 > room {
                    out.write_all(&buf[..room as usize]).map_err(write_err)?;
                    stopped = Some(format!(
                        "decompresses to more than {limit_bytes} bytes, the limit for one file (a zstd bomb, or a bag larger than 256x its compressed size)"
                    ));
                    break;
                }
                total += n as u64;
                out.write_all(&buf[..n]).map_err(write_err)?;
            }
        }
    }
    out.flush().map_err(write_err)?;
    drop(out);
    Ok((tmp_path, stopped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.zstd");
        let data = vec![7u8; 3 << 20];
        std::fs::write(&p, zstd::encode_all(&data[..], 3).unwrap()).unwrap();
        let t = decompress_to_temp(&p, 4 << 20).unwrap();
        assert_eq!(std::fs::read(&t).unwrap(), data);
        let kept = t.to_path_buf();
        drop(t);
        assert!(
            !kept.exists(),
            "the temporary file is deleted with its handle"
        );
        let e = decompress_to_temp(&p, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
        std::fs::write(&p, b"not zstd at all").unwrap();
        let e = decompress_to_temp(&p, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("damaged zstd stream"), "{e}");
    }
}
