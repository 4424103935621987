//! One v2 record of an uncompressed (or inflated) records section (`DefaultRecord.java`), decoded
//! as borrowed slices.
//!
//! Layout: `length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//! keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value | headerCount varint |
//! [headerKeyLength varint | headerKey (UTF-8) | headerValueLength varint (-1 = null) | headerValue]`.
//!
//! Everything here parses untrusted bytes: every length is checked against the record's own
//! declared size, and a record whose fields do not add up to that size is rejected, as Kafka does.
//! This module does not decompress: a compressed batch holds its records as one compressed blob,
//! which [`super::codec::decompress`] inflates into a section this module reads.

use thiserror::Error;

use super::varint::{read_varint, read_varlong, VarintError};

/// Which length field of a record was out of range; used in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordField {
    Length,
    Key,
    Value,
    HeaderCount,
    HeaderKey,
    HeaderValue,
}

impl std::fmt::Display for RecordField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecordField::Length => "record length",
            RecordField::Key => "key length",
            RecordField::Value => "value length",
            RecordField::HeaderCount => "header count",
            RecordField::HeaderKey => "header key length",
            RecordField::HeaderValue => "header value length",
        })
    }
}

/// Why a single record could not be decoded. Positions are byte offsets into the slice that was
/// being decoded (the batch's records section when called through [`RecordIter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RecordError {
    #[error(transparent)]
    Varint(#[from] VarintError),
    /// A length field is negative where Kafka does not allow it (or below -1 for nullable fields).
    #[error("invalid {field} {length}")]
    NegativeLength { field: RecordField, length: i32 },
    /// A field claims more bytes than the record (or the records section) has left.
    #[error("{field} {length} at byte {position} overruns the record ({remaining} bytes remain)")]
    Overrun {
        field: RecordField,
        length: i32,
        position: usize,
        remaining: usize,
    },
    /// The fields, read in full, did not use exactly the declared record length.
    #[error("record declares {declared} bytes but its fields use {read}")]
    SizeMismatch { declared: usize, read: usize },
}

/// One decoded record; slices borrow from the batch buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    /// Milliseconds relative to the batch's base timestamp (ignored for LogAppendTime batches,
    /// whose records all carry the batch's max timestamp).
    pub timestamp_delta: i64,
    /// Unused by every Kafka version so far; kept so a dump can show it if ever set.
    pub attributes: i8,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// Header keys are UTF-8 in Kafka but kept as bytes: decoding never fails on them.
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
    /// Bytes this record occupies, including its length varint.
    pub size_in_bytes: usize,
}

impl<'a> Record<'a> {
    /// Decodes the record starting at `*pos` and advances `pos` past it.
    pub fn decode(buf: &'a [u8], pos: &mut usize) -> Result<Record<'a>, RecordError> {
        let start = *pos;
        let mut cursor = start;
        let length = read_varint(buf, &mut cursor)?;
        let body_start = cursor;
        let remaining = buf.len().saturating_sub(body_start);
        let declared = usize::try_from(length).map_err(|_| RecordError::NegativeLength {
            field: RecordField::Length,
            length,
        })?;
        if declared > remaining {
            return Err(RecordError::Overrun {
                field: RecordField::Length,
                length,
                position: start,
                remaining,
            });
        }
        let body_end = body_start + declared;
        // Every field below is read from the record's own bytes, so a bad inner length can never
        // reach into the next record.
        let body = &buf[..body_end];

        let attributes = *body
            .get(cursor)
            .ok_or(RecordError::Varint(VarintError::Truncated { position: cursor }))? as i8;
        cursor += 1;
        let timestamp_delta = read_varlong(body, &mut cursor)?;
        let offset_delta = read_varint(body, &mut cursor)?;
        let key = read_nullable(body, &mut cursor, RecordField::Key)?;
        let value = read_nullable(body, &mut cursor, RecordField::Value)?;

        let header_count = read_varint(body, &mut cursor)?;
        let header_count = usize::try_from(header_count).map_err(|_| RecordError::NegativeLength {
            field: RecordField::HeaderCount,
            length: header_count,
        })?;
        // Each header needs at least two bytes (two one-byte varints); cap the allocation by what
        // the record can actually hold so a huge count cannot exhaust memory.
        let headroom = body_end - cursor;
        if header_count > headroom {
            return Err(RecordError::Overrun {
                field: RecordField::HeaderCount,
                length: header_count as i32,
                position: cursor,
                remaining: headroom,
            });
        }
        let mut headers = Vec::with_capacity(header_count);
        for _ in 0..header_count {
            let key_len = read_varint(body, &mut cursor)?;
            if key_len < 0 {
                return Err(RecordError::NegativeLength {
                    field: RecordField::HeaderKey,
                    length: key_len,
                });
            }
            let header_key = take(body, &mut cursor, key_len, RecordField::HeaderKey)?;
            let header_value = read_nullable(body, &mut cursor, RecordField::HeaderValue)?;
            headers.push((header_key, header_value));
        }

        if cursor != body_end {
            return Err(RecordError::SizeMismatch {
                declared,
                read: cursor - body_start,
            });
        }
        *pos = body_end;
        Ok(Record {
            offset_delta,
            timestamp_delta,
            attributes,
            key,
            value,
            headers,
            size_in_bytes: body_end - start,
        })
    }
}

fn read_nullable<'a>(buf: &'a [u8], pos: &mut usize, field: RecordField) -> Result<Option<&'a [u8]>, RecordError> {
    let length = read_varint(buf, pos)?;
    match length {
        -1 => Ok(None),
        l if l < -1 => Err(RecordError::NegativeLength { field, length }),
        l => take(buf, pos, l, field).map(Some),
    }
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, length: i32, field: RecordField) -> Result<&'a [u8], RecordError> {
    let remaining = buf.len().saturating_sub(*pos);
    let len = usize::try_from(length).map_err(|_| RecordError::NegativeLength { field, length })?;
    if len > remaining {
        return Err(RecordError::Overrun {
            field,
            length,
            position: *pos,
            remaining,
        });
    }
    let slice = &buf[*pos..*pos + len];
    *pos += len;
    Ok(slice)
}

/// Iterates the records of an uncompressed batch's records section (the bytes after the 61-byte
/// header). Yields at most `count` records and stops after the first error.
#[derive(Debug, Clone)]
pub struct RecordIter<'a> {
    buf: &'a [u8],
    pos: usize,
    remaining: usize,
    failed: bool,
}

impl<'a> RecordIter<'a> {
    /// `records` is the section after the batch header; `count` the header's record count
    /// (negative counts yield nothing).
    pub fn new(records: &'a [u8], count: i32) -> Self {
        RecordIter {
            buf: records,
            pos: 0,
            remaining: usize::try_from(count).unwrap_or(0),
            failed: false,
        }
    }

    /// Bytes of the records section consumed so far; after the last record this must equal the
    /// section length, or the batch has trailing bytes.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let result = Record::decode(self.buf, &mut self.pos);
        self.failed = result.is_err();
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::super::varint::{write_varint, write_varlong};
    use super::*;

    fn encode(
        offset_delta: i32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> Vec<u8> {
        let mut body = vec![0u8];
        write_varlong(&mut body, 7);
        write_varint(&mut body, offset_delta);
        for field in [key, value] {
            match field {
                Some(bytes) => {
                    write_varint(&mut body, bytes.len() as i32);
                    body.extend_from_slice(bytes);
                }
                None => write_varint(&mut body, -1),
            }
        }
        write_varint(&mut body, headers.len() as i32);
        for (k, v) in headers {
            write_varint(&mut body, k.len() as i32);
            body.extend_from_slice(k);
            match v {
                Some(bytes) => {
                    write_varint(&mut body, bytes.len() as i32);
                    body.extend_from_slice(bytes);
                }
                None => write_varint(&mut body, -1),
            }
        }
        let mut out = Vec::new();
        write_varint(&mut out, body.len() as i32);
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn a_record_with_key_value_and_headers_decodes_to_borrowed_slices() {
        let bytes = encode(3, Some(b"k"), Some(b"value"), &[(b"h1", Some(b"x")), (b"h2", None)]);
        let mut pos = 0;
        let record = Record::decode(&bytes, &mut pos).expect("valid record");
        assert_eq!(pos, bytes.len());
        assert_eq!(record.offset_delta, 3);
        assert_eq!(record.timestamp_delta, 7);
        assert_eq!(record.key, Some(&b"k"[..]));
        assert_eq!(record.value, Some(&b"value"[..]));
        assert_eq!(record.headers, vec![(&b"h1"[..], Some(&b"x"[..])), (&b"h2"[..], None)]);
        assert_eq!(record.size_in_bytes, bytes.len());
    }

    #[test]
    fn null_key_and_value_decode_as_none() {
        let bytes = encode(0, None, None, &[]);
        let record = Record::decode(&bytes, &mut 0).expect("valid record");
        assert_eq!((record.key, record.value), (None, None));
    }

    #[test]
    fn a_key_longer_than_the_record_is_an_overrun_not_a_panic() {
        let mut bytes = encode(0, Some(b"abc"), None, &[]);
        // Patch the key length (byte 4: length, attrs, tsDelta, offsetDelta precede it) to 60.
        bytes[4] = 120; // zig-zag 60
        let err = Record::decode(&bytes, &mut 0).expect_err("overrun");
        assert!(
            matches!(
                err,
                RecordError::Overrun {
                    field: RecordField::Key,
                    length: 60,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_record_length_beyond_the_buffer_is_rejected() {
        let bytes = encode(0, Some(b"abc"), None, &[]);
        let err = Record::decode(&bytes[..bytes.len() - 1], &mut 0).expect_err("short");
        assert!(
            matches!(
                err,
                RecordError::Overrun {
                    field: RecordField::Length,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn spare_bytes_inside_a_record_are_a_size_mismatch() {
        let mut bytes = encode(0, None, None, &[]);
        bytes[0] += 2; // declare one extra byte (zig-zag +1)
        bytes.push(0);
        let err = Record::decode(&bytes, &mut 0).expect_err("mismatch");
        assert_eq!(
            err,
            RecordError::SizeMismatch {
                declared: bytes.len() - 1,
                read: bytes.len() - 2
            }
        );
    }

    #[test]
    fn a_negative_header_count_is_rejected() {
        let mut bytes = encode(0, None, None, &[]);
        let last = bytes.len() - 1;
        bytes[last] = 0x03; // zig-zag -2
        let err = Record::decode(&bytes, &mut 0).expect_err("negative");
        assert_eq!(
            err,
            RecordError::NegativeLength {
                field: RecordField::HeaderCount,
                length: -2
            }
        );
    }

    #[test]
    fn the_iterator_stops_after_count_records_and_after_the_first_error() {
        let mut section = encode(0, None, Some(b"a"), &[]);
        section.extend(encode(1, None, Some(b"b"), &[]));
        let records: Vec<_> = RecordIter::new(&section, 2).collect();
        assert_eq!(records.len(), 2);
        assert!(records.iter().all(Result::is_ok));

        let results: Vec<_> = RecordIter::new(&section, 5).collect();
        assert_eq!(results.len(), 3, "two records then one error, then nothing");
        assert!(results[2].is_err());
    }
}
