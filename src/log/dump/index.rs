//! Index files of a segment for `dump-log`: `.index` (offset → position), `.timeindex`
//! (timestamp → offset) and `.txnindex` (aborted transactions), each checked against the
//! sibling `.log` when it exists. Read-only.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::DumpSummary;
use crate::protocol::record_batch::{BatchHeader, BatchScanner};

/// Batches of the sibling `.log` (valid prefix only), or `None` when there is no such file.
/// Like Kafka, the sibling is the index's name up to the first `.`, plus `.log`.
fn sibling_log_batches(index_path: &Path) -> io::Result<Option<Vec<(usize, BatchHeader)>>> {
    let name = index_path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name.split('.').next().unwrap_or("");
    let log_path: PathBuf = index_path.with_file_name(format!("{stem}.log"));
    let data = match fs::read(&log_path) {
        Ok(data) => data,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(BatchScanner::new(&data).map_while(Result::ok).collect()))
}

/// Reads fixed-size index entries; a size that is not a whole number of entries is reported
/// like Kafka's index sanity check, and the whole entries are still dumped.
fn read_index(path: &Path, entry_size: usize, summary: &mut DumpSummary, out: &mut dyn Write) -> io::Result<Vec<u8>> {
    let data = fs::read(path)?;
    if data.is_empty() {
        writeln!(out, "{} is empty.", path.display())?;
    } else if data.len() % entry_size != 0 {
        let reason = format!(
            "index file size {} is not a multiple of the entry size {entry_size}",
            data.len()
        );
        writeln!(out, "Found invalid index: {reason}")?;
        summary.invalid = Some(reason);
    }
    Ok(data)
}

pub(super) fn dump_offset_index(path: &Path, base_offset: i64, out: &mut dyn Write) -> io::Result<DumpSummary> {
    let mut summary = DumpSummary::default();
    let data = read_index(path, 8, &mut summary, out)?;
    let log = sibling_log_batches(path)?;
    if log.is_none() {
        writeln!(out, "No sibling .log file; index entries are not checked")?;
    }
    let mut previous: Option<i64> = None;
    for (i, entry) in data.chunks_exact(8).enumerate() {
        let relative = u32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]]);
        let position = u32::from_be_bytes([entry[4], entry[5], entry[6], entry[7]]);
        // Kafka preallocates index files: a zero relative offset after the first entry marks the
        // unused tail, and an all-zero first entry an index with no entries (Kafka never indexes
        // position 0: an entry is added only after index.interval.bytes of appends).
        if relative == 0 && (i > 0 || position == 0) {
            break;
        }
        let offset = base_offset.wrapping_add(i64::from(relative));
        writeln!(out, "offset: {offset} position: {position}")?;
        let Some(batches) = &log else { continue };
        let problem = match previous {
            Some(prev) if offset <= prev => Some(format!("offset is not greater than the previous entry's {prev}")),
            _ => match batches.binary_search_by_key(&(position as usize), |(p, _)| *p) {
                Err(_) => Some(format!("no batch starts at position {position}")),
                Ok(found) => {
                    let h = &batches[found].1;
                    (offset < h.base_offset || offset > h.last_offset()).then(|| {
                        format!(
                            "batch at position {position} holds offsets {} to {}",
                            h.base_offset,
                            h.last_offset()
                        )
                    })
                }
            },
        };
        if let Some(problem) = problem {
            writeln!(
                out,
                "Index offset mismatch: entry {i} offset: {offset} position: {position}: {problem}"
            )?;
            summary.index_mismatches += 1;
        }
        previous = Some(offset);
    }
    Ok(summary)
}

pub(super) fn dump_time_index(path: &Path, base_offset: i64, out: &mut dyn Write) -> io::Result<DumpSummary> {
    let mut summary = DumpSummary::default();
    let data = read_index(path, 12, &mut summary, out)?;
    let log = sibling_log_batches(path)?;
    if log.is_none() {
        writeln!(out, "No sibling .log file; index entries are not checked")?;
    }
    let mut previous: Option<i64> = None;
    for (i, entry) in data.chunks_exact(12).enumerate() {
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&entry[..8]);
        let timestamp = i64::from_be_bytes(ts);
        let relative = u32::from_be_bytes([entry[8], entry[9], entry[10], entry[11]]);
        if relative == 0 && (i > 0 || timestamp == 0) {
            break;
        }
        let offset = base_offset.wrapping_add(i64::from(relative));
        writeln!(out, "timestamp: {timestamp} offset: {offset}")?;
        let Some(batches) = &log else { continue };
        let problem = match previous {
            Some(prev) if timestamp < prev => Some(format!("timestamp is smaller than the previous entry's {prev}")),
            _ => {
                // Batches are in offset order: find the first whose last offset reaches `offset`.
                let at = batches.partition_point(|(_, h)| h.last_offset() < offset);
                match batches.get(at) {
                    Some((_, h)) if h.base_offset <= offset => None,
                    _ => Some("offset is not in the log".to_string()),
                }
            }
        };
        if let Some(problem) = problem {
            writeln!(
                out,
                "Time index mismatch: entry {i} timestamp: {timestamp} offset: {offset}: {problem}"
            )?;
            summary.index_mismatches += 1;
        }
        previous = Some(timestamp);
    }
    Ok(summary)
}

/// `.txnindex`: 34-byte aborted-transaction entries, printed like `DumpLogSegments.dumpTxnIndex`.
pub(super) fn dump_txn_index(path: &Path, out: &mut dyn Write) -> io::Result<DumpSummary> {
    let mut summary = DumpSummary::default();
    let data = read_index(path, 34, &mut summary, out)?;
    for entry in data.chunks_exact(34) {
        let long = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&entry[at..at + 8]);
            i64::from_be_bytes(b)
        };
        writeln!(
            out,
            "version: {} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
            i16::from_be_bytes([entry[0], entry[1]]),
            long(2),
            long(10),
            long(18),
            long(26),
        )?;
    }
    Ok(summary)
}
