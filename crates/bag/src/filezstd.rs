//! rosbag2 file compression (`compression_mode: FILE`, `NAME.mcap.zstd`, `NAME.db3.zstd`): the
//! whole file is one zstd stream. It is decompressed by streaming into a temporary file in the
//! system temp directory (deleted when its handle drops), never into memory, and the output is
//! capped relative to the compressed size, so that a small hostile file cannot fill the disk or
//! the memory (a decompression bomb). A damaged or cut stream keeps what was decompressed
//! before the damage: a recording cut off by a crash still has its first messages.

use std::io::{Read, Write};
use std::path::Path;

use crate::error::WarningCode;
use crate::error::{BagError, Result, Warning};

/// What a real bag file reaches at most: rosbag2's chunks and messages are already dense, and
/// zstd on real recordings stays far below this ratio; zeros reach tens of thousands.
pub(crate) const MAX_RATIO: u64 = 2000;
/// Below this, any ratio is accepted: tiny inputs of zeros are not worth refusing.
pub(crate) const RATIO_FLOOR_BYTES: u64 = 64 << 20;

/// A decompressed copy of a compressed bag file.
pub(crate) struct Decompressed {
    /// The temporary file (removed when this is dropped, or on Ctrl-C / SIGTERM by
    /// [`crate::outfile::remove_live`]).
    pub path: crate::outfile::LiveTempPath,
    /// `truncated` when the zstd stream is damaged or cut, `decompression_limit` when the
    /// output was cut at the cap: both data loss, both naming the compressed file.
    pub warnings: Vec<Warning>,
}

/// Most bytes a compressed file of `compressed_bytes` may decompress to.
pub(crate) fn output_limit_bytes(compressed_bytes: u64) -> u64 {
    compressed_bytes
        .saturating_mul(MAX_RATIO)
        .max(RATIO_FLOOR_BYTES)
}

/// Decompresses the zstd file `path` into a temporary file, at most `limit_bytes` of it (see
/// [`output_limit_bytes`]). Damage and the cap are warnings (what was decompressed before them
/// is kept); only I/O errors (unreadable input, temp dir full) are errors.
pub(crate) fn decompress_to_temp(path: &Path, limit_bytes: u64) -> Result<Decompressed> {
    let io = |source| BagError::Io {
        path: path.to_path_buf(),
        source,
    };
    let input = std::fs::File::open(path).map_err(io)?;
    let compressed = input.metadata().map_err(io)?.len();
    let tmp = tempfile::Builder::new()
        .prefix("bagscope-zstd-")
        .tempfile()
        .map_err(|source| BagError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let (file, tmp_path) = tmp.into_parts();
    // Tracked from now on: an interrupted run must not leave a copy of the whole bag behind.
    let tmp_path = crate::outfile::LiveTempPath::new(tmp_path);
    let tmp_err = |source| BagError::Io {
        path: tmp_path.to_path_buf(),
        source,
    };
    let mut warnings = Vec::new();
    let mut written = 0u64;
    let mut damaged = None;
    let mut capped = false;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &file);
        match zstd::stream::read::Decoder::new(input) {
            Err(e) => damaged = Some(format!("not a zstd stream ({e})")),
            Ok(mut d) => {
                // Small reads: a damaged stream loses at most the read it fails in.
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    let n = match d.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            damaged =
                                Some(format!("damaged zstd stream after {written} bytes ({e})"));
                            break;
                        }
                    };
                    let room = limit_bytes - written;
                    if n as u64 > room {
                        w.write_all(&buf[..room as usize]).map_err(tmp_err)?;
                        capped = true;
                        break;
                    }
                    w.write_all(&buf[..n]).map_err(tmp_err)?;
                    written += n as u64;
                }
            }
        }
        w.flush().map_err(tmp_err)?;
    }
    let name = path.display().to_string();
    if capped {
        warnings.push(
            Warning::new(
                WarningCode::DecompressionLimit,
                format!(
                    "zstd-compressed file of {compressed} bytes decompresses to more than {limit_bytes} bytes (over {MAX_RATIO}x, a decompression bomb?): read only its first {limit_bytes} bytes"
                ),
            )
            .file(&name)
            .loss(),
        );
    } else if let Some(reason) = damaged {
        warnings.push(
            Warning::new(
                WarningCode::Truncated,
                format!("zstd-compressed bag file: {reason}; read what was decompressed"),
            )
            .file(&name)
            .loss(),
        );
    }
    Ok(Decompressed {
        path: tmp_path,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_limit_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.zstd");
        let data = vec![7u8; 3 << 20];
        std::fs::write(&p, zstd::encode_all(&data[..], 3).unwrap()).unwrap();
        let d = decompress_to_temp(&p, 4 << 20).unwrap();
        assert!(d.warnings.is_empty());
        assert_eq!(std::fs::read(&*d.path).unwrap(), data);
        let kept = d.path.to_path_buf();
        assert!(
            crate::outfile::live_temporaries().contains(&kept),
            "Ctrl-C removes it"
        );
        drop(d);
        assert!(
            !kept.exists(),
            "the temporary file is deleted with its handle"
        );
        assert!(!crate::outfile::live_temporaries().contains(&kept));
        let d = decompress_to_temp(&p, 1 << 20).unwrap();
        assert_eq!(std::fs::metadata(&*d.path).unwrap().len(), 1 << 20);
        assert_eq!(d.warnings[0].code, "decompression_limit");
        std::fs::write(&p, b"not zstd at all").unwrap();
        let d = decompress_to_temp(&p, 1 << 20).unwrap();
        assert_eq!(d.warnings[0].code, "truncated");
        assert!(d.warnings[0].data_loss);
    }
}
