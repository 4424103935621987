//! The records section of a compressed batch (attribute bits 0-2): inflated and deflated with
//! the `kafka-protocol` crate's codecs (gzip, snappy, lz4 and zstd, each in the framing Kafka's
//! clients read: raw snappy blocks as librdkafka and the Java client write them, the LZ4 frame
//! format, a gzip stream, a zstd frame). The records themselves are then read and written with
//! our own decoder ([`super::RecordIter`]). No I/O.
//!
//! Used by the broker wherever it must see inside a compressed batch it stored: the log
//! cleaner (which recompresses the records it keeps with the batch's own codec, as Kafka's
//! `MemoryRecords.filterTo` does), the group coordinator's loader and `dump-log`.

use bytes::{Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Decompressor, Gzip, Lz4, Snappy, Zstd};

use super::Compression;

/// Inflates a records section compressed with `codec`. `None` (and an unknown codec, which
/// cannot be inflated) returns the bytes as they are.
pub fn decompress(codec: Compression, section: &[u8]) -> Result<Bytes, String> {
    let mut input = Bytes::copy_from_slice(section);
    let take = |b: &mut Bytes| Ok(std::mem::take(b));
    let result = match codec {
        Compression::Gzip => <Gzip as Decompressor<Bytes>>::decompress(&mut input, take),
        Compression::Snappy => <Snappy as Decompressor<Bytes>>::decompress(&mut input, take),
        Compression::Lz4 => <Lz4 as Decompressor<Bytes>>::decompress(&mut input, take),
        Compression::Zstd => <Zstd as Decompressor<Bytes>>::decompress(&mut input, take),
        Compression::None | Compression::Unknown(_) => return Ok(input),
    };
    result.map_err(|error| format!("{error:#}"))
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
}
