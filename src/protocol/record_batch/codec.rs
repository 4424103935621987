//! The records section of a compressed batch (attribute bits 0-2): deflated with the
//! `kafka-protocol` crate's codecs, inflated here with a cap on the output (gzip, snappy, lz4
//! and zstd, each in the framing Kafka's clients write: a gzip stream, raw snappy as librdkafka
//! writes it or the xerial snappy stream the Java client writes, the LZ4 frame format, a zstd
//! frame). The records themselves are then read and written with
//! our own decoder ([`super::RecordIter`]). No I/O.
//!
//! Used by the broker wherever it must see inside a compressed batch it stored: the log
//! cleaner (which recompresses the records it keeps with the batch's own codec, as Kafka's
//! `MemoryRecords.filterTo` does), the group coordinator's loader and `dump-log`.

use bytes::{Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};

use super::Compression;

/// The most a single batch's records section may inflate to. Kafka streams a compressed batch
/// record by record and never holds it whole; kastle inflates the section into memory, so a
/// small compressed batch (a gzip or zstd "bomb", or a snappy header claiming 4 GiB) must not be
/// able to take the broker's memory. A batch that inflates beyond this is refused as corrupt,
/// like any batch that does not inflate.
pub const MAX_INFLATED_BYTES: usize = 256 << 20;

/// The xerial snappy stream header the Java client writes (`SnappyOutputStream`): magic
/// `\x82SNAPPY\0`, then a version and a compatible-version `i32`, then length-prefixed blocks.
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\0";
const XERIAL_HEADER_LEN: usize = XERIAL_MAGIC.len() + 8;

/// Inflates a records section compressed with `codec`, refusing output beyond
/// [`MAX_INFLATED_BYTES`]. `None` (and an unknown codec, which cannot be inflated) returns the
/// bytes as they are.
pub fn decompress(codec: Compression, section: &[u8]) -> Result<Bytes, String> {
    decompress_capped(codec, section, MAX_INFLATED_BYTES)
}

/// [`decompress`] with an explicit output limit.
pub fn decompress_capped(codec: Compression, section: &[u8], limit: usize) -> Result<Bytes, String> {
    let out = match codec {
        Compression::Gzip => read_capped(flate2::read::GzDecoder::new(section), limit, "gzip")?,
        Compression::Lz4 => {
            let decoder = lz4::Decoder::new(section).map_err(|e| format!("lz4: {e}"))?;
            read_capped(decoder, limit, "lz4")?
        }
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::new(section).map_err(|e| format!("zstd: {e}"))?;
            read_capped(decoder, limit, "zstd")?
        }
        Compression::Snappy if section.starts_with(XERIAL_MAGIC) => xerial_snappy(section, limit)?,
        Compression::Snappy => {
            let mut out = Vec::new();
            raw_snappy(section, limit, &mut out)?;
            out
        }
        Compression::None | Compression::Unknown(_) => return Ok(Bytes::copy_from_slice(section)),
    };
    Ok(Bytes::from(out))
}

/// Reads a decoder to its end, but never more than `limit` bytes.
fn read_capped(decoder: impl std::io::Read, limit: usize, codec: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    decoder
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| format!("{codec}: {e}"))?;
    if out.len() > limit {
        return Err(format!("{codec}: inflates beyond {limit} bytes"));
    }
    Ok(out)
}

/// One raw snappy block appended to `out`; its claimed length is checked before anything is
/// allocated.
fn raw_snappy(block: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let len = snap::raw::decompress_len(block).map_err(|e| format!("snappy: {e}"))?;
    if out.len().saturating_add(len) > limit {
        return Err(format!("snappy: inflates beyond {limit} bytes"));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| format!("snappy: {e}"))?;
    out.truncate(start + written);
    Ok(())
}

/// The xerial stream: after the header, `[i32 length][raw snappy block]` until the end.
fn xerial_snappy(section: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut rest = section
        .get(XERIAL_HEADER_LEN..)
        .ok_or_else(|| "snappy: truncated xerial header".to_string())?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| "snappy: truncated xerial block length".to_string())?;
        let len = usize::try_from(i32::from_be_bytes(*len)).map_err(|_| "snappy: negative xerial block length")?;
        let block = tail
            .get(..len)
            .ok_or_else(|| "snappy: truncated xerial block".to_string())?;
        raw_snappy(block, limit, &mut out)?;
        rest = &tail[len..];
    }
    Ok(out)
}

/// Deflates encoded records with `codec`, at the crate's levels (gzip 6, lz4 4, zstd 3; Kafka's
/// defaults are 6, 9 and 3 — any level reads back the same). `None` copies them; an unknown
/// codec is an error.
pub fn compress(codec: Compression, records: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = BytesMut::new();
    let put = |b: &mut BytesMut| {
        b.extend_from_slice(records);
        Ok(())
    };
    let result = match codec {
        Compression::Gzip => <Gzip as Compressor<BytesMut>>::compress(&mut out, put),
        Compression::Snappy => <Snappy as Compressor<BytesMut>>::compress(&mut out, put),
        Compression::Lz4 => <Lz4 as Compressor<BytesMut>>::compress(&mut out, put),
        Compression::Zstd => <Zstd as Compressor<BytesMut>>::compress(&mut out, put),
        Compression::None => return Ok(records.to_vec()),
        Compression::Unknown(id) => return Err(format!("unknown compression codec {id}")),
    };
    result.map_err(|error| format!("{error:#}"))?;
    Ok(out.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODECS: [Compression; 4] = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn every_codec_round_trips_and_actually_compresses() {
        let data: Vec<u8> = (0..4096u32).flat_map(|i| (i % 17).to_be_bytes()).collect();
        for codec in CODECS {
            let packed = compress(codec, &data).expect("compress");
            assert!(packed.len() < data.len() / 2, "{codec}: {} bytes", packed.len());
            assert_eq!(decompress(codec, &packed).expect("decompress"), data, "{codec}");
        }
        assert_eq!(compress(Compression::None, b"abc").expect("none"), b"abc");
        assert!(compress(Compression::Unknown(6), b"abc").is_err());
        assert!(decompress(Compression::Gzip, b"not gzip").is_err());
    }

    #[test]
    fn a_section_that_inflates_beyond_the_cap_is_refused_for_every_codec() {
        let data = vec![0u8; 1 << 20];
        for codec in CODECS {
            let packed = compress(codec, &data).expect("compress");
            assert_eq!(
                decompress_capped(codec, &packed, 1 << 20).expect("at the cap").len(),
                1 << 20
            );
            let err = decompress_capped(codec, &packed, (1 << 20) - 1).expect_err("beyond the cap");
            assert!(err.contains("inflates beyond"), "{codec}: {err}");
        }
    }

    #[test]
    fn a_snappy_header_claiming_four_gib_is_refused_before_allocating() {
        // A raw snappy block starts with its inflated length as a varint: 0xffffffff.
        let bomb = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        let err = decompress(Compression::Snappy, &bomb).expect_err("refused");
        assert!(err.contains("inflates beyond"), "{err}");
    }

    #[test]
    fn the_java_clients_xerial_snappy_stream_inflates() {
        let a = b"records written by the Java client, block one. ".repeat(20);
        let b = b"and block two".to_vec();
        let mut xerial = XERIAL_MAGIC.to_vec();
        xerial.extend_from_slice(&1i32.to_be_bytes());
        xerial.extend_from_slice(&1i32.to_be_bytes());
        for block in [&a, &b] {
            let packed = snap::raw::Encoder::new().compress_vec(block).expect("snappy");
            xerial.extend_from_slice(&i32::try_from(packed.len()).expect("small").to_be_bytes());
            xerial.extend_from_slice(&packed);
        }
        let inflated = decompress(Compression::Snappy, &xerial).expect("inflates");
        assert_eq!(inflated, [a, b].concat());
        assert!(decompress(Compression::Snappy, &xerial[..xerial.len() - 3]).is_err());
    }
}
