//! Kafka's zig-zag variable-length integers (`ByteUtils.readVarint` / `readVarlong` and the
//! matching writers), used by the v2 record layout.
//!
//! Readers take untrusted bytes and a cursor; they never index past the slice and report where a
//! value went wrong. Like Kafka, a varint may use at most 5 bytes and a varlong at most 10; bits
//! beyond 32 (64) in the last byte are dropped, as Java's shifts drop them.

use thiserror::Error;

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum VarintError {
    /// The slice ended before the last byte of the value (one without the continuation bit).
    #[error("varint at byte {position} runs past the end of the data")]
    Truncated { position: usize },
    /// More continuation bytes than a 32-bit (5) or 64-bit (10) value can have.
    #[error("varint at byte {position} is longer than {max_bytes} bytes")]
    TooLong { position: usize, max_bytes: usize },
}

const MAX_VARINT_BYTES: usize = 5;
const MAX_VARLONG_BYTES: usize = 10;

fn read_unsigned(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Result<u64, VarintError> {
    let start = *pos;
    let mut value: u64 = 0;
    for i in 0..max_bytes {
        let byte = *buf.get(start + i).ok_or(VarintError::Truncated { position: start })?;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *pos = start + i + 1;
            return Ok(value);
        }
    }
    Err(VarintError::TooLong {
        position: start,
        max_bytes,
    })
}

/// Reads a zig-zag varint (Kafka `int32` varint) at `*pos`, advancing `pos` past it.
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    // Truncating to 32 bits mirrors Java, where the 5th byte's high bits shift out of an int.
    let raw = read_unsigned(buf, pos, MAX_VARINT_BYTES)? as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zig-zag varlong (Kafka `int64` varint) at `*pos`, advancing `pos` past it.
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let raw = read_unsigned(buf, pos, MAX_VARLONG_BYTES)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

fn write_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends `value` as a zig-zag varint.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, u64::from(((value << 1) ^ (value >> 31)) as u32));
}

/// Appends `value` as a zig-zag varlong.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// Number of bytes `write_varint(value)` produces.
pub fn varint_size(value: i32) -> usize {
    let mut raw = ((value << 1) ^ (value >> 31)) as u32;
    let mut size = 1;
    while raw >= 0x80 {
        raw >>= 7;
        size += 1;
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_across_the_whole_range() {
        for value in [0, 1, -1, 63, -64, 64, 300, -300, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out.len(), varint_size(value), "size of {value}");
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos), Ok(value));
            assert_eq!(pos, out.len());
        }
        for value in [0, 1, -1, 1_700_000_000_000, -1_700_000_000_000, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            let mut pos = 0;
            assert_eq!(read_varlong(&out, &mut pos), Ok(value));
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn zig_zag_encoding_matches_kafka_byte_for_byte() {
        // Values from Kafka's ByteUtilsTest: -1 -> 0x01, 1 -> 0x02, -64 -> 0x7f, 64 -> 0x80 0x01.
        let cases: [(i32, &[u8]); 4] = [(-1, &[0x01]), (1, &[0x02]), (-64, &[0x7f]), (64, &[0x80, 0x01])];
        for (value, bytes) in cases {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, bytes, "encoding of {value}");
        }
    }

    #[test]
    fn a_varint_cut_short_reports_where_it_started() {
        let mut pos = 2;
        assert_eq!(
            read_varint(&[0, 0, 0x80, 0x80], &mut pos),
            Err(VarintError::Truncated { position: 2 })
        );
        assert_eq!(pos, 2, "cursor is untouched on error");
    }

    #[test]
    fn a_varint_longer_than_five_bytes_is_rejected() {
        let mut pos = 0;
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut pos),
            Err(VarintError::TooLong {
                position: 0,
                max_bytes: 5
            })
        );
        let mut pos = 0;
        assert!(read_varlong(&[0xff; 11], &mut pos).is_err());
    }
}
