//! The library side of `kastle dump-log FILE…`: prints a segment's `.log`, `.index`,
//! `.timeindex` or `.txnindex`, or a producer-state `.snapshot`, the way Kafka's `kafka-dump-log` (`DumpLogSegments.scala`) does,
//! so output can be diffed against Kafka's tool on the same files.
//!
//! `dump/index.rs` holds the index-file formats; `dump/tests.rs` the tests. Compressed batches
//! are inflated with kafka-protocol's codecs (`record_batch::codec`) and read with our own record decoder.
//!
//! Read-only: files are read whole into memory and never modified; a corrupt file is reported
//! (where and why), never repaired. Index files are checked against the sibling `.log` when it
//! exists. Deviations from Kafka: a `.log` dump stops at the first invalid batch with a
//! `Found invalid batch at position …` line (Kafka prints the bad batch with `isvalid: false` and
//! may throw); index problems are printed inline instead of on stderr at the end.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use self::index::{dump_offset_index, dump_time_index, dump_txn_index};
use crate::protocol::record_batch::{
    increment_sequence, BatchHeader, BatchScanner, Compression, Record, RecordIter, ScanError, TimestampType,
    LOG_OVERHEAD, RECORDS_OFFSET,
};

/// What to print besides the batch headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// Kafka's `--print-data-log`: one line per record, with key and payload as UTF-8.
    pub print_data_log: bool,
}

/// What a dump found, for the CLI's exit status and for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpSummary {
    /// Batches whose framing and CRC are valid.
    pub batches: usize,
    /// Sum of their record counts (from the headers).
    pub records: u64,
    /// Where and why the file stopped being valid, if it did.
    pub invalid: Option<String>,
    /// Index entries that disagree with the sibling `.log` (or with each other).
    pub index_mismatches: usize,
}

/// Dumps one segment file to `out`, choosing the format by extension. Errors are I/O errors
/// (unreadable file, failed write) or a file name that does not start with a base offset;
/// corrupt contents are reported in the output and the summary instead.
pub fn dump_file(path: &Path, options: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpSummary> {
    writeln!(out, "Dumping {}", path.display())?;
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !matches!(extension, "log" | "index" | "timeindex" | "txnindex" | "snapshot") {
        writeln!(out, "Ignoring unknown file {}", path.display())?;
        return Ok(DumpSummary::default());
    }
    let base_offset = base_offset_of(path)?;
    match extension {
        "log" => dump_log(path, base_offset, options, out),
        "index" => dump_offset_index(path, base_offset, out),
        "timeindex" => dump_time_index(path, base_offset, out),
        "snapshot" => dump_producer_snapshot(path, out),
        _ => dump_txn_index(path, out),
    }
}

/// A producer-state snapshot, one line per producer as `DumpLogSegments.dumpProducerIdSnapshot`
/// prints it; a corrupt snapshot is reported and counts as invalid.
fn dump_producer_snapshot(path: &Path, out: &mut dyn Write) -> io::Result<DumpSummary> {
    let entries = match super::producer_snapshot::decode(&fs::read(path)?) {
        Ok(entries) => entries,
        Err(e) => {
            writeln!(out, "{e}")?;
            return Ok(DumpSummary {
                invalid: Some(e.to_string()),
                ..DumpSummary::default()
            });
        }
    };
    for e in &entries {
        let txn = e
            .current_txn_first_offset
            .map_or("OptionalLong.empty".to_string(), |o| format!("OptionalLong[{o}]"));
        write!(
            out,
            "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {txn} lastTimestamp: {} ",
            e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp
        )?;
        if let Some(b) = e.batches().next() {
            write!(
                out,
                "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                b.first_seq(),
                b.last_seq,
                b.last_offset,
                b.offset_delta,
                b.timestamp
            )?;
        }
        writeln!(out)?;
    }
    Ok(DumpSummary::default())
}

/// Kafka names segment files after their base offset: `00000000000000000042.log`.
fn base_offset_of(path: &Path) -> io::Result<i64> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name.split('.').next().unwrap_or("");
    stem.parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: file name does not start with a base offset", path.display()),
        )
    })
}

fn dump_log(path: &Path, base_offset: i64, options: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpSummary> {
    let data = fs::read(path)?;
    writeln!(out, "Log starting offset: {base_offset}")?;
    let mut summary = DumpSummary::default();
    for item in BatchScanner::new(&data) {
        let (position, header) = match item {
            Ok(found) => found,
            Err(error) => {
                if let ScanError::BadCrc { position, .. } = error {
                    // The header is readable; show it as Kafka does, marked invalid.
                    if let Ok(header) = BatchHeader::parse(data.get(position..).unwrap_or(&[])) {
                        write_batch_line(out, &header, position, false)?;
                    }
                }
                let reason = describe_scan_error(&data, &error);
                report_invalid(out, &mut summary, path, data.len(), error.position(), &reason)?;
                return Ok(summary);
            }
        };
        write_batch_line(out, &header, position, true)?;
        summary.batches += 1;
        summary.records += u64::try_from(header.record_count).unwrap_or(0);
        if options.print_data_log {
            let batch = data.get(position..position + header.size_in_bytes()).unwrap_or(&[]);
            if let Err(reason) = write_records(out, batch, &header)? {
                report_invalid(out, &mut summary, path, data.len(), position, &reason)?;
                return Ok(summary);
            }
        }
    }
    Ok(summary)
}

fn report_invalid(
    out: &mut dyn Write,
    summary: &mut DumpSummary,
    path: &Path,
    file_len: usize,
    position: usize,
    reason: &str,
) -> io::Result<()> {
    writeln!(out, "Found invalid batch at position {position}: {reason}")?;
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    writeln!(
        out,
        "Found {} invalid bytes at the end of {name}",
        file_len.saturating_sub(position)
    )?;
    summary.invalid = Some(format!("position {position}: {reason}"));
    Ok(())
}

fn describe_scan_error(data: &[u8], error: &ScanError) -> String {
    match *error {
        ScanError::Truncated { position } => {
            let rest = data.get(position..).unwrap_or(&[]);
            // Past the length field the batch says how long it should be.
            match rest.get(8..12) {
                Some(b) => format!(
                    "batch is truncated: needs {} bytes, only {} remain in the file",
                    LOG_OVERHEAD as i64 + i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                    rest.len()
                ),
                None => format!("only {} bytes remain in the file, too few for a batch", rest.len()),
            }
        }
        ScanError::BadLength { length, .. } => format!("invalid batch length {length}"),
        ScanError::BadMagic { magic, .. } => format!("unsupported magic {magic} (only v2 batches are read)"),
        ScanError::BadCrc { stored, computed, .. } => format!("crc mismatch: stored {stored}, computed {computed}"),
    }
}

/// `DumpLogSegments.printBatchLevel` for magic 2, field for field.
fn write_batch_line(out: &mut dyn Write, h: &BatchHeader, position: usize, valid: bool) -> io::Result<()> {
    let delete_horizon = match h.delete_horizon_ms() {
        Some(ms) => format!("OptionalLong[{ms}]"),
        None => "OptionalLong.empty".to_string(),
    };
    writeln!(
        out,
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} producerEpoch: {} \
         partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {} position: {} {}: {} size: {} \
         magic: {} compresscodec: {} crc: {} isvalid: {}",
        h.base_offset,
        h.last_offset(),
        h.record_count,
        h.base_sequence,
        h.last_sequence(),
        h.producer_id,
        h.producer_epoch,
        h.partition_leader_epoch,
        h.is_transactional(),
        h.is_control(),
        delete_horizon,
        position,
        h.timestamp_type(),
        h.max_timestamp,
        h.size_in_bytes(),
        h.magic,
        h.compression(),
        h.crc,
        valid,
    )
}

/// Prints every record of a valid batch. The outer `io::Result` is the writer's; the inner
/// `Err` is why the records could not be decoded (the batch is then reported invalid).
fn write_records(out: &mut dyn Write, batch: &[u8], h: &BatchHeader) -> io::Result<Result<(), String>> {
    let section = batch.get(RECORDS_OFFSET..).unwrap_or(&[]);
    let decompressed;
    let records = match h.compression() {
        Compression::None => section,
        Compression::Unknown(_) => {
            writeln!(out, "| records are compressed with {} and not decoded", h.compression())?;
            return Ok(Ok(()));
        }
        codec => match decompress(codec, section) {
            Ok(bytes) => {
                decompressed = bytes;
                &decompressed[..]
            }
            // The CRC matched, so the bytes are what the producer sent; a codec variant this
            // decoder does not handle is not corruption. Say so and go on.
            Err(error) => {
                writeln!(out, "| records are compressed with {codec} and not decoded: {error}")?;
                return Ok(Ok(()));
            }
        },
    };
    let mut iter = RecordIter::new(records, h.record_count);
    for (index, record) in iter.by_ref().enumerate() {
        match record {
            Ok(record) => write_record_line(out, h, &record)?,
            Err(error) => return Ok(Err(format!("record {index} cannot be decoded: {error}"))),
        }
    }
    let trailing = records.len().saturating_sub(iter.position());
    if trailing > 0 {
        return Ok(Err(format!("{trailing} bytes follow the last record")));
    }
    Ok(Ok(()))
}

/// Decompresses a records section (see [`crate::protocol::record_batch::codec`]); the records
/// are then read by our own decoder, which has no per-record allocation to exhaust. Also used by
/// readers of internal topics (the group coordinator's loader).
pub(crate) use crate::protocol::record_batch::codec::decompress;

/// The per-record line of `DumpLogSegments.dumpLog` with `--print-data-log`.
fn write_record_line(out: &mut dyn Write, h: &BatchHeader, r: &Record<'_>) -> io::Result<()> {
    // LogAppendTime batches carry one broker timestamp for all records (DefaultRecordBatch).
    let timestamp = match h.timestamp_type() {
        TimestampType::LogAppendTime => h.max_timestamp,
        TimestampType::CreateTime => h.base_timestamp.wrapping_add(r.timestamp_delta),
    };
    let sequence = if h.base_sequence >= 0 {
        increment_sequence(h.base_sequence, r.offset_delta)
    } else {
        -1
    };
    let size = |field: Option<&[u8]>| field.map_or(-1, |f| i64::try_from(f.len()).unwrap_or(i64::MAX));
    let header_keys: Vec<_> = r.headers.iter().map(|(k, _)| String::from_utf8_lossy(k)).collect();
    write!(
        out,
        "| offset: {} {}: {} keySize: {} valueSize: {} sequence: {} headerKeys: [{}]",
        h.base_offset.wrapping_add(i64::from(r.offset_delta)),
        h.timestamp_type(),
        timestamp,
        size(r.key),
        size(r.value),
        sequence,
        header_keys.join(","),
    )?;
    if h.is_control() {
        write!(out, "{}", describe_control_record(r.key, r.value))?;
    } else {
        if let Some(key) = r.key {
            write!(out, " key: {}", String::from_utf8_lossy(key))?;
        }
        if let Some(value) = r.value {
            write!(out, " payload: {}", String::from_utf8_lossy(value))?;
        }
    }
    writeln!(out)
}

/// Control records: key `{version i16, type i16}`; COMMIT/ABORT values are
/// `{version i16, coordinatorEpoch i32}` (`ControlRecordType`, `EndTransactionMarker`).
fn describe_control_record(key: Option<&[u8]>, value: Option<&[u8]>) -> String {
    let type_id = key
        .and_then(|k| k.get(2..4))
        .map_or(-1, |b| i16::from_be_bytes([b[0], b[1]]));
    let name = match type_id {
        0 => "ABORT",
        1 => "COMMIT",
        2 => "LEADER_CHANGE",
        3 => "SNAPSHOT_HEADER",
        4 => "SNAPSHOT_FOOTER",
        5 => "KRAFT_VERSION",
        6 => "KRAFT_VOTERS",
        _ => "UNKNOWN",
    };
    let coordinator_epoch = value
        .and_then(|v| v.get(2..6))
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match (type_id, coordinator_epoch) {
        (0 | 1, Some(epoch)) => format!(" endTxnMarker: {name} coordinatorEpoch: {epoch}"),
        _ => format!(" controlType: {name}({type_id})"),
    }
}

mod index;
#[cfg(test)]
mod tests;
