//! Producer-state snapshot files, byte-compatible with Kafka's `<offset>.snapshot`
//! (`ProducerStateManager.writeSnapshot` / `readSnapshot`, version 1):
//!
//! ```text
//! version                 int16   (1)
//! crc                     uint32  CRC-32C of every byte after this field
//! producer_entries        int32 count, then per entry:
//!   producer_id             int64
//!   epoch                   int16
//!   last_sequence           int32
//!   last_offset             int64   (-1: no batch)
//!   offset_delta            int32
//!   timestamp               int64
//!   coordinator_epoch       int32
//!   current_txn_first_offset int64  (-1: none)
//! ```
//!
//! A snapshot named after offset N holds the state of the log up to N (exclusive). Kafka
//! writes one when a segment rolls (named after the new segment's base offset) and on clean
//! shutdown. This module owns the encoding and the files of one partition dir; what to put in
//! them is [`super::producer_state`]'s.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::producer_state::{BatchMetadata, ProducerStateEntry};

pub const SUFFIX: &str = ".snapshot";
const VERSION: i16 = 1;
const ENTRIES_OFFSET: usize = 6;
const ENTRY_SIZE: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/// Why a snapshot cannot be used (Kafka's `CorruptSnapshotException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot is {len} bytes, too short for its header or its {count} entries")]
    Truncated { len: usize, count: i64 },
    #[error("snapshot has unknown version {0}")]
    UnknownVersion(i16),
    #[error("snapshot is corrupt: stored crc {stored}, computed crc {computed}")]
    BadCrc { stored: u32, computed: u32 },
}

/// `<20-digit offset>.snapshot`, as Kafka names it.
pub fn file_name(offset: i64) -> String {
    format!("{offset:020}{SUFFIX}")
}

pub fn path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(file_name(offset))
}

/// The bytes of a snapshot of `entries`.
pub fn encode<'a>(entries: impl ExactSizeIterator<Item = &'a ProducerStateEntry>) -> Vec<u8> {
    let mut buf = Vec::with_capacity(ENTRIES_OFFSET + 4 + entries.len() * ENTRY_SIZE);
    buf.extend_from_slice(&VERSION.to_be_bytes());
    buf.extend_from_slice(&0u32.to_be_bytes());
    buf.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in entries {
        buf.extend_from_slice(&e.producer_id.to_be_bytes());
        buf.extend_from_slice(&e.producer_epoch.to_be_bytes());
        buf.extend_from_slice(&e.last_seq().to_be_bytes());
        buf.extend_from_slice(&e.last_data_offset().to_be_bytes());
        buf.extend_from_slice(&e.last_offset_delta().to_be_bytes());
        buf.extend_from_slice(&e.last_timestamp.to_be_bytes());
        buf.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        buf.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
    }
    let crc = crc32c::crc32c(&buf[ENTRIES_OFFSET..]);
    buf[2..ENTRIES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    buf
}

/// The entries of a snapshot; each keeps only its last batch, as Kafka's do.
pub fn decode(buf: &[u8]) -> Result<Vec<ProducerStateEntry>, SnapshotError> {
    let truncated = |count| SnapshotError::Truncated { len: buf.len(), count };
    if buf.len() < ENTRIES_OFFSET + 4 {
        return Err(truncated(0));
    }
    let version = i16::from_be_bytes([buf[0], buf[1]]);
    if version != VERSION {
        return Err(SnapshotError::UnknownVersion(version));
    }
    let stored = u32::from_be_bytes([buf[2], buf[3], buf[4], buf[5]]);
    let computed = crc32c::crc32c(&buf[ENTRIES_OFFSET..]);
    if stored != computed {
        return Err(SnapshotError::BadCrc { stored, computed });
    }
    let count = i32::from_be_bytes([buf[6], buf[7], buf[8], buf[9]]);
    let body = &buf[ENTRIES_OFFSET + 4..];
    if count < 0 || body.len() != count as usize * ENTRY_SIZE {
        return Err(truncated(i64::from(count)));
    }
    Ok(body.chunks_exact(ENTRY_SIZE).map(decode_entry).collect())
}

fn decode_entry(e: &[u8]) -> ProducerStateEntry {
    let i64_at = |at: usize| i64::from_be_bytes(e[at..at + 8].try_into().unwrap_or([0; 8]));
    let i32_at = |at: usize| i32::from_be_bytes(e[at..at + 4].try_into().unwrap_or([0; 4]));
    let producer_id = i64_at(0);
    let epoch = i16::from_be_bytes([e[8], e[9]]);
    let last_seq = i32_at(10);
    let last_offset = i64_at(14);
    let offset_delta = i32_at(22);
    let timestamp = i64_at(26);
    let coordinator_epoch = i32_at(34);
    let txn = i64_at(38);
    let last = (last_offset >= 0).then_some(BatchMetadata {
        last_seq,
        last_offset,
        offset_delta,
        timestamp,
    });
    ProducerStateEntry::from_snapshot(
        producer_id,
        epoch,
        last,
        timestamp,
        coordinator_epoch,
        (txn >= 0).then_some(txn),
    )
}

/// The snapshot offsets present in `dir`, ascending.
pub fn list(dir: &Path) -> std::io::Result<Vec<i64>> {
    let mut offsets = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(digits) = name.strip_suffix(SUFFIX) {
            if let Ok(offset) = digits.parse::<i64>() {
                offsets.push(offset);
            }
        }
    }
    offsets.sort_unstable();
    Ok(offsets)
}

/// Writes the snapshot at `offset` and fsyncs it.
pub fn write(dir: &Path, offset: i64, bytes: &[u8]) -> std::io::Result<()> {
    write_unsynced(dir, offset, bytes)?.sync_all()
}

/// Writes the snapshot at `offset` without an fsync and returns the file, to be fsynced later
/// (a roll's snapshot, fsynced by its background flush as Kafka does since KAFKA-15046). A
/// crash before then may leave it torn: loading refuses it and takes an older one.
pub fn write_unsynced(dir: &Path, offset: i64, bytes: &[u8]) -> std::io::Result<std::fs::File> {
    let mut file = std::fs::File::create(path(dir, offset))?;
    file.write_all(bytes)?;
    Ok(file)
}

pub fn read(dir: &Path, offset: i64) -> std::io::Result<Vec<u8>> {
    std::fs::read(path(dir, offset))
}

/// Removes the snapshots for which `doomed(offset)` holds.
pub fn delete_where(dir: &Path, doomed: impl Fn(i64) -> bool) -> std::io::Result<()> {
    for offset in list(dir)?.into_iter().filter(|o| doomed(*o)) {
        match std::fs::remove_file(path(dir, offset)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::producer_state::{AppendOrigin, ProducerBatch, ProducerStateManager};

    fn state_with_two_producers() -> ProducerStateManager {
        let mut s = ProducerStateManager::new(0);
        for (pid, epoch, seq, offset) in [(1000, 0, 0, 0), (1000, 0, 3, 3), (1001, 2, 7, 6)] {
            let b = ProducerBatch {
                producer_id: pid,
                producer_epoch: epoch,
                first_seq: seq,
                last_seq: seq + 2,
                first_offset: offset,
                last_offset: offset + 2,
                max_timestamp: 1_700_000_000_000 + offset,
            };
            let mut a = s.prepare(AppendOrigin::Client);
            a.append(&s, &b).expect("valid");
            s.commit(a);
        }
        s
    }

    #[test]
    fn a_snapshot_has_kafkas_byte_layout() {
        let s = state_with_two_producers();
        let bytes = encode(s.entries().into_iter());
        assert_eq!(bytes.len(), 10 + 2 * ENTRY_SIZE);
        assert_eq!(&bytes[0..2], &[0, 1], "version 1");
        assert_eq!(&bytes[6..10], &[0, 0, 0, 2], "two entries");
        assert_eq!(i64::from_be_bytes(bytes[10..18].try_into().expect("8")), 1000);
        assert_eq!(i16::from_be_bytes([bytes[18], bytes[19]]), 0, "epoch");
        assert_eq!(
            i32::from_be_bytes(bytes[20..24].try_into().expect("4")),
            5,
            "last sequence"
        );
        assert_eq!(
            i64::from_be_bytes(bytes[24..32].try_into().expect("8")),
            5,
            "last offset"
        );
        assert_eq!(
            i32::from_be_bytes(bytes[32..36].try_into().expect("4")),
            2,
            "offset delta"
        );
        assert_eq!(
            i64::from_be_bytes(bytes[48..56].try_into().expect("8")),
            -1,
            "no transaction"
        );
        assert_eq!(
            u32::from_be_bytes(bytes[2..6].try_into().expect("4")),
            crc32c::crc32c(&bytes[6..]),
            "CRC-32C over the entries array"
        );
        assert_eq!(file_name(123), "00000000000000000123.snapshot");
    }

    #[test]
    fn a_snapshot_round_trips_the_last_batch_of_each_producer() {
        let s = state_with_two_producers();
        let entries = decode(&encode(s.entries().into_iter())).expect("decodes");
        assert_eq!(entries.len(), 2);
        let p = &entries[0];
        assert_eq!(
            (p.producer_id, p.producer_epoch, p.last_seq(), p.last_data_offset()),
            (1000, 0, 5, 5)
        );
        assert_eq!(p.batches().count(), 1);
        assert!(
            p.find_duplicate(0, 3, 5).is_some(),
            "the last batch is still deduplicated"
        );
        assert_eq!(entries[1].producer_epoch, 2);
    }

    #[test]
    fn corrupt_or_truncated_snapshots_are_refused() {
        let s = state_with_two_producers();
        let mut bytes = encode(s.entries().into_iter());
        bytes[20] ^= 1;
        assert!(matches!(decode(&bytes), Err(SnapshotError::BadCrc { .. })));
        let good = encode(s.entries().into_iter());
        assert!(matches!(
            decode(&good[..good.len() - 1]),
            Err(SnapshotError::BadCrc { .. })
        ));
        assert!(matches!(decode(&good[..5]), Err(SnapshotError::Truncated { .. })));
        let mut v2 = good.clone();
        v2[1] = 2;
        assert_eq!(decode(&v2), Err(SnapshotError::UnknownVersion(2)));
        assert_eq!(decode(&encode(std::iter::empty())).expect("empty").len(), 0);
    }

    #[test]
    fn snapshot_files_are_listed_and_deleted_by_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        for offset in [0, 50, 100] {
            write(dir.path(), offset, &encode(std::iter::empty())).expect("write");
        }
        std::fs::write(dir.path().join("00000000000000000000.log"), b"").expect("log");
        assert_eq!(list(dir.path()).expect("list"), vec![0, 50, 100]);
        delete_where(dir.path(), |o| o > 60).expect("delete");
        assert_eq!(list(dir.path()).expect("list"), vec![0, 50]);
    }
}
