//! rosbag2 file compression (`compression_mode: FILE`, `NAME.mcap.zstd`, `NAME.db3.zstd`): the
//! whole file is one zstd stream. It is decompressed by streaming into a temporary file in the
//! system temp directory (deleted when dropped), never into memory, and the output is capped
//! relative to the compressed size, so that a small hostile file cannot fill the disk or the
//! memory (a decompression bomb).

use std::io::{Read, Write};
use std::path::Path;

use crate::error::{BagError, Result, Warning};

/// What a real bag file reaches at most: rosbag2's chunks and messages are already dense, and
/// zstd on real recordings stays far below this ratio; zeros reach tens of thousands.
pub(crate) const MAX_RATIO: u64 = 2000;
/// Below this, any ratio is accepted: tiny inputs of zeros are not worth refusing.
pub(crate) const RATIO_FLOOR_BYTES: u64 = 64 << 20;

/// A decompressed copy of a compressed bag file.
pub(crate) struct Decompressed {
    /// The temporary file (removed when this is dropped); `path()` for readers that open by name.
    pub file: tempfile::NamedTempFile,
    pub len_bytes: u64,
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

/// Decompresses the zstd file `path` into a temporary file, at most
/// [`output_limit_bytes`] of it. Damage and the cap are warnings (what was decompressed before
/// them is kept); only I/O errors (unreadable input, temp dir full) are errors.
pub(crate) fn decompress_to_temp(path: &Path) -> Result<Decompressed> {
    let io = |source| BagError::Io {
        path: path.to_path_buf(),
        source,
    };
    let input = std::fs::File::open(path).map_err(io)?;
    let compressed = input.metadata().map_err(io)?.len();
    let limit = output_limit_bytes(compressed);
    let mut file = tempfile::Builder::new()
        .prefix("bagscope-")
        .suffix(".decompressed")
        .tempfile()
        .map_err(|source| BagError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let tmp_err = |source| BagError::Io {
        path: std::env::temp_dir(),
        source,
    };
    let mut warnings = Vec::new();
    let mut written = 0u64;
    let mut damaged = None;
    match zstd::stream::read::Decoder::new(input) {
        Err(e) => damaged = Some(e),
        Ok(d) => {
            // One byte past the limit tells a stream that reaches the cap from one that ends
            // exactly there.
            let mut r = d.take(limit.saturating_add(1));
            let mut w = std::io::BufWriter::with_capacity(1 << 20, file.as_file_mut());
            let mut buf = vec![0u8; 1 << 20];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        w.write_all(&buf[..n]).map_err(tmp_err)?;
                        written += n as u64;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        damaged = Some(e);
                        break;
                    }
                }
            }
            w.flush().map_err(tmp_err)?;
        }
    }
    let name = path.display().to_string();
    if written > limit {
        file.as_file().set_len(limit).map_err(tmp_err)?;
        written = limit;
        warnings.push(
            Warning::new(
                "decompression_limit",
                format!(
                    "zstd-compressed file of {compressed} bytes decompresses to more than {limit} bytes (over {MAX_RATIO}x, a decompression bomb?): read only its first {limit} bytes"
                ),
            )
            .file(&name)
            .loss(),
        );
    } else if let Some(e) = damaged {
        warnings.push(
            Warning::new(
                "truncated",
                format!(
                    "zstd-compressed bag file is damaged ({e}); read what could be decompressed"
                ),
            )
            .file(&name)
            .loss(),
        );
    }
    Ok(Decompressed {
        file,
        len_bytes: written,
        warnings,
    })
}
