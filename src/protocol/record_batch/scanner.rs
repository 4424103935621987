//! Walking a buffer of back-to-back v2 batches (a segment file, a fetch response, a produce
//! request) and stopping at the first byte that is not a valid batch, with a typed reason.
//!
//! This is what log recovery needs (`LogSegment.recover`: validate size, magic and CRC of each
//! batch, truncate at the first invalid one) and what `kastle dump-log` reports. The scanner checks
//! framing, magic and CRC only: record counts and offsets are a produce-time concern
//! ([`super::validate_batches`]), and compacted batches legitimately hold fewer records than their
//! offset range. Legacy magic 0/1 message sets are reported as [`ScanError::BadMagic`].

use thiserror::Error;

use super::header::{
    be_i32, compute_crc, BatchHeader, CRC_OFFSET, CURRENT_MAGIC, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
};

/// Why scanning stopped. `position` is the byte offset of the offending batch in the scanned
/// buffer: everything before it is valid, so a caller recovering a log truncates there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ScanError {
    /// The buffer ends inside a batch (a partial write at the tail of a segment, or a read that
    /// stopped mid-batch).
    #[error("batch at byte {position} is truncated")]
    Truncated { position: usize },
    /// The length field cannot describe a v2 batch (negative or smaller than the 49-byte header).
    #[error("batch at byte {position} has invalid length {length} (minimum {MIN_BATCH_LENGTH})")]
    BadLength { position: usize, length: i32 },
    /// Not a v2 batch. Kafka would read 0/1 as legacy message sets; kastle never writes them.
    #[error("batch at byte {position} has magic {magic}, expected {CURRENT_MAGIC}")]
    BadMagic { position: usize, magic: i8 },
    /// The stored CRC does not match the bytes: corruption on disk or in transit.
    #[error("batch at byte {position} is corrupt: stored crc {stored}, computed crc {computed}")]
    BadCrc {
        position: usize,
        stored: u32,
        computed: u32,
    },
}

impl ScanError {
    /// Where the invalid data starts; the length of the valid prefix.
    pub fn position(&self) -> usize {
        match *self {
            ScanError::Truncated { position }
            | ScanError::BadLength { position, .. }
            | ScanError::BadMagic { position, .. }
            | ScanError::BadCrc { position, .. } => position,
        }
    }
}

/// What the first 17 bytes of a batch say: its total size and format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    pub size: usize,
    pub magic: i8,
}

/// Reads the size and magic of the batch at `position` without requiring the whole batch.
pub(crate) fn read_frame(buf: &[u8], position: usize) -> Result<Frame, ScanError> {
    let rest = buf.get(position..).unwrap_or(&[]);
    if rest.len() < LOG_OVERHEAD {
        return Err(ScanError::Truncated { position });
    }
    let length = be_i32(rest, LENGTH_OFFSET);
    let batch_length = match usize::try_from(length) {
        Ok(len) if len >= MIN_BATCH_LENGTH => len,
        _ => return Err(ScanError::BadLength { position, length }),
    };
    let magic = *rest.get(MAGIC_OFFSET).ok_or(ScanError::Truncated { position })? as i8;
    Ok(Frame {
        size: LOG_OVERHEAD + batch_length,
        magic,
    })
}

/// Given a frame already read at `position`, returns the whole batch if it is present and, when
/// `verify_crc`, its CRC matches.
pub(crate) fn complete_batch(buf: &[u8], position: usize, frame: Frame, verify_crc: bool) -> Result<&[u8], ScanError> {
    let rest = buf.get(position..).unwrap_or(&[]);
    let batch = rest.get(..frame.size).ok_or(ScanError::Truncated { position })?;
    if verify_crc {
        let stored = be_i32(batch, CRC_OFFSET) as u32;
        let computed = compute_crc(batch);
        if stored != computed {
            return Err(ScanError::BadCrc {
                position,
                stored,
                computed,
            });
        }
    }
    Ok(batch)
}

/// Checks the batch at `position` (framing, magic, and the CRC when `verify_crc`) and parses its
/// header.
pub fn scan_batch(buf: &[u8], position: usize, verify_crc: bool) -> Result<BatchHeader, ScanError> {
    let frame = read_frame(buf, position)?;
    if frame.magic != CURRENT_MAGIC {
        return Err(ScanError::BadMagic {
            position,
            magic: frame.magic,
        });
    }
    let batch = complete_batch(buf, position, frame, verify_crc)?;
    Ok(BatchHeader::parse_unchecked(batch))
}

/// Iterator over `(position, header)` of each valid batch in a buffer. After the first invalid
/// point it yields that one error and then ends; [`BatchScanner::position`] is then the length of
/// the valid prefix.
#[derive(Debug, Clone)]
pub struct BatchScanner<'a> {
    buf: &'a [u8],
    position: usize,
    verify_crc: bool,
    stopped: bool,
}

impl<'a> BatchScanner<'a> {
    /// Checks framing, magic and CRC of every batch: for recovery and anything untrusted.
    pub fn new(buf: &'a [u8]) -> Self {
        BatchScanner {
            buf,
            position: 0,
            verify_crc: true,
            stopped: false,
        }
    }

    /// Checks framing and magic only, for bytes already validated when they were written (reads
    /// of a clean log): walking headers without touching every byte of the payload.
    pub fn without_crc(buf: &'a [u8]) -> Self {
        BatchScanner {
            buf,
            position: 0,
            verify_crc: false,
            stopped: false,
        }
    }

    /// Bytes of whole valid batches seen so far.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl Iterator for BatchScanner<'_> {
    type Item = Result<(usize, BatchHeader), ScanError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped || self.position >= self.buf.len() {
            return None;
        }
        match scan_batch(self.buf, self.position, self.verify_crc) {
            Ok(header) => {
                let at = self.position;
                self.position += header.size_in_bytes();
                Some(Ok((at, header)))
            }
            Err(error) => {
                self.stopped = true;
                Some(Err(error))
            }
        }
    }
}

/// Length of the longest prefix of `buf` made of valid batches, and why the rest is not one
/// (`None` when the whole buffer is valid).
pub fn valid_prefix_len(buf: &[u8]) -> (usize, Option<ScanError>) {
    let mut scanner = BatchScanner::new(buf);
    let error = scanner.by_ref().find_map(Result::err);
    (scanner.position(), error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::test_support::build_batch;

    fn two_batches() -> (Vec<u8>, usize) {
        let mut buf = build_batch(0, 1, &[(Some(b"k"), Some(b"v1")), (None, Some(b"v2"))], 1_000);
        let first = buf.len();
        buf.extend(build_batch(2, 1, &[(None, Some(b"v3"))], 2_000));
        (buf, first)
    }

    #[test]
    fn a_clean_buffer_scans_to_the_end() {
        let (buf, first) = two_batches();
        let batches: Vec<_> = BatchScanner::new(&buf).collect::<Result<_, _>>().expect("all valid");
        assert_eq!(
            batches.iter().map(|(p, h)| (*p, h.base_offset)).collect::<Vec<_>>(),
            vec![(0, 0), (first, 2)]
        );
        assert_eq!(valid_prefix_len(&buf), (buf.len(), None));
        assert_eq!(valid_prefix_len(&[]), (0, None));
    }

    #[test]
    fn the_scanner_stops_at_a_partial_batch_at_the_tail() {
        let (buf, first) = two_batches();
        for cut in [first + 5, first + 15, buf.len() - 1] {
            let (len, error) = valid_prefix_len(&buf[..cut]);
            assert_eq!(len, first, "cut at {cut}");
            assert!(
                matches!(error, Some(ScanError::Truncated { position }) if position == first),
                "{error:?}"
            );
        }
    }

    #[test]
    fn the_scanner_stops_at_garbage_with_a_bad_length() {
        let (mut buf, first) = two_batches();
        buf.truncate(first);
        buf.extend([0u8; 64]); // preallocated zeros: length 0
        assert_eq!(
            valid_prefix_len(&buf),
            (
                first,
                Some(ScanError::BadLength {
                    position: first,
                    length: 0
                })
            )
        );
        buf[first + 8..first + 12].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(
            valid_prefix_len(&buf).1,
            Some(ScanError::BadLength {
                position: first,
                length: -5
            })
        );
    }

    #[test]
    fn the_scanner_stops_at_a_flipped_byte_with_both_crcs() {
        let (mut buf, first) = two_batches();
        let stored = be_i32(&buf[first..], CRC_OFFSET) as u32;
        let last = buf.len() - 1;
        buf[last] ^= 0x01;
        let (len, error) = valid_prefix_len(&buf);
        assert_eq!(len, first);
        assert_eq!(
            error,
            Some(ScanError::BadCrc {
                position: first,
                stored,
                computed: compute_crc(&buf[first..])
            })
        );
    }

    #[test]
    fn the_scanner_stops_at_a_legacy_or_unknown_magic() {
        let (mut buf, first) = two_batches();
        buf[first + MAGIC_OFFSET] = 1;
        assert_eq!(
            valid_prefix_len(&buf),
            (
                first,
                Some(ScanError::BadMagic {
                    position: first,
                    magic: 1
                })
            )
        );
    }

    #[test]
    fn the_scanner_yields_one_error_and_then_ends() {
        let (buf, first) = two_batches();
        let mut scanner = BatchScanner::new(&buf[..first + 20]);
        assert!(matches!(scanner.next(), Some(Ok((0, _)))));
        assert!(matches!(scanner.next(), Some(Err(ScanError::Truncated { .. }))));
        assert!(scanner.next().is_none());
        assert_eq!(scanner.position(), first);
    }

    #[test]
    fn without_crc_walks_past_a_flipped_payload_byte_but_not_past_bad_framing() {
        let (mut buf, first) = two_batches();
        let last = buf.len() - 1;
        buf[last] ^= 0x01;
        assert_eq!(valid_prefix_len(&buf).0, first, "the checking scanner stops");
        let headers: Vec<_> = BatchScanner::without_crc(&buf)
            .collect::<Result<_, _>>()
            .expect("framing is fine");
        assert_eq!(headers.len(), 2);
        let mut cut = BatchScanner::without_crc(&buf[..buf.len() - 1]);
        assert!(cut.next().is_some_and(|r| r.is_ok()));
        assert_eq!(cut.next(), Some(Err(ScanError::Truncated { position: first })));
    }
}
