//! Compression on the wire and in the journal. Gzip members are made by a compressor kept for
//! each thread that makes them (the service's request bodies, the file backend's journal
//! frames): setting one up allocates and clears a few hundred KiB of tables, which cost more
//! than compressing a journal batch; made for every request, it took about a tenth of an
//! update's CPU. Answers are inflated (gzip or zstd), no larger than the caller allows.

use std::cell::RefCell;
use std::io::Read;

use flate2::{Compress, Compression, FlushCompress, Status};

/// The largest LZ77 window gzip allows (32 KiB), as a one-shot encoder would use.
const WINDOW_BITS: u8 = 15;

thread_local! {
    static COMPRESSOR: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// `data` as one gzip member.
pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    gzip_onto(&mut out, data);
    out
}

/// Appends `data` as one gzip member to `out`.
pub(crate) fn gzip_onto(out: &mut Vec<u8>, data: &[u8]) {
    COMPRESSOR.with_borrow_mut(|compressor| {
        // The fastest level: JSON compresses well at any level, and the CPU is the update's.
        let compressor =
            compressor.get_or_insert_with(|| Compress::new_gzip(Compression::fast(), WINDOW_BITS));
        compressor.reset();
        // JSON shrinks to about a quarter; the loop grows the output if it does not.
        out.reserve(data.len() / 4 + 64);
        loop {
            let consumed = compressor.total_in() as usize;
            let status = compressor
                .compress_vec(&data[consumed..], out, FlushCompress::Finish)
                .expect("a gzip stream of bytes in memory never fails");
            match status {
                Status::StreamEnd => return,
                Status::Ok | Status::BufError => out.reserve(out.capacity().max(64)),
            }
        }
    })
}

/// The data of the gzip stream `data`, refused if it inflates to more than `limit` bytes (a
/// small answer must not take all memory).
pub(crate) fn gunzip(data: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
    inflated(flate2::read::GzDecoder::new(data), data.len(), limit)
}

/// The largest window (as a power of two) a zstd answer may ask the client to keep: 16 MiB,
/// against the 128 MiB zstd allows by default. The service compresses at level 1, whose window
/// is 512 KiB; a frame that asks for more memory is refused before any is taken.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;

/// The data of the zstd frames `data`, refused as [`gunzip`] refuses.
pub(crate) fn unzstd(data: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
    let mut decoder = zstd::stream::read::Decoder::with_buffer(data)?;
    decoder.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
    inflated(decoder, data.len(), limit)
}

/// What `decoder` reads, `compressed` bytes on the wire, refused past `limit` bytes.
fn inflated(decoder: impl Read, compressed: usize, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity((compressed.saturating_mul(4)).min(limit as usize));
    decoder.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "it inflates to more than {limit} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_body_is_a_whole_gzip_member_whatever_came_before() {
        let large: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{{\"seq\":{i}}},").into_bytes())
            .collect();
        // Random bytes do not shrink: the output has to grow past its first guess.
        let noise: Vec<u8> = (0..50_000u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
            .collect();
        for data in [&b"{}"[..], &large, &noise, &[], &large[..1000]] {
            let gzipped = gzip(data);
            assert_eq!(&gzipped[..2], [0x1f, 0x8b], "a gzip header");
            assert_eq!(gunzip(&gzipped, data.len() as u64).unwrap(), data);
        }
        assert!(gzip(&large).len() < large.len() / 2, "it compresses");
    }

    #[test]
    fn an_answer_that_inflates_past_the_limit_is_refused() {
        let zeros = gzip(&[0; 100_000]);
        assert_eq!(gunzip(&zeros, 100_000).unwrap().len(), 100_000);
        let error = gunzip(&zeros, 99_999).unwrap_err();
        assert!(
            error.to_string().contains("more than 99999 bytes"),
            "{error}"
        );
        assert!(gunzip(b"not gzip", 100).is_err());
    }

    #[test]
    fn a_zstd_answer_is_read_whole_and_refused_past_the_limit() {
        let data: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("{{\"seq\":{i}}},").into_bytes())
            .collect();
        let compressed = zstd::encode_all(&data[..], 1).unwrap();
        assert_eq!(unzstd(&compressed, data.len() as u64).unwrap(), data);
        // Two frames one after the other are one answer, as a streaming encoder may send it.
        let twice = [compressed.clone(), compressed].concat();
        assert_eq!(
            unzstd(&twice, 2 * data.len() as u64).unwrap().len(),
            2 * data.len()
        );
        let zeros = zstd::encode_all(&[0u8; 100_000][..], 1).unwrap();
        assert!(zeros.len() < 100, "a bomb is small on the wire");
        let error = unzstd(&zeros, 99_999).unwrap_err();
        assert!(
            error.to_string().contains("more than 99999 bytes"),
            "{error}"
        );
        assert!(unzstd(b"not zstd", 100).is_err());
        // A frame made with a window larger than the client keeps.
        let mut wide = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        wide.window_log(ZSTD_WINDOW_LOG_MAX + 1).unwrap();
        wide.long_distance_matching(true).unwrap();
        std::io::Write::write_all(&mut wide, &data).unwrap();
        let wide = wide.finish().unwrap();
        let refused = unzstd(&wide, data.len() as u64).unwrap_err();
        assert!(refused.to_string().contains("too much memory"), "{refused}");
    }
}
