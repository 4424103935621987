//! Kafka's checkpoint text files, byte for byte: the four per-log-dir offset checkpoints
//! (`replication-offset-checkpoint`, `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `cleaner-offset-checkpoint`) and the per-partition
//! `leader-epoch-checkpoint`, plus the write-tmp/fsync/rename/fsync-dir replace they all use.
//!
//! Layout (Kafka's `CheckpointFile`): line 1 the version (`0`), line 2 the entry count, then one
//! entry per line with fields separated by one space, every line ending in `\n`. Reading mirrors
//! Kafka's `CheckpointReadBuffer`: an empty file, or one that stops after the version line, is an
//! empty checkpoint; a missing file is too (Kafka creates it empty when it opens it). Kafka
//! splits entries on the regex `\s+`, so runs of whitespace and trailing whitespace are accepted,
//! while leading whitespace yields an empty first field and fails.
//!
//! This module owns the format only: what the offsets mean, and when to write them, belongs to
//! the callers (ReplicaManager, LogManager, the cleaner, the leader-epoch cache).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::types::TopicPartition;

pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
pub const RECOVERY_POINT_OFFSET_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// Lives in the partition dir (`<topic>-<partition>/`), not the log dir.
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// Both offset and leader-epoch checkpoints are at version 0 in every Kafka release so far.
const CURRENT_VERSION: i32 = 0;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("malformed checkpoint file {}, line {line}: {reason}", path.display())]
    Malformed {
        path: PathBuf,
        /// 1-based: the version is line 1, the count line 2, the first entry line 3.
        line: usize,
        reason: MalformedReason,
    },
    /// Refused before writing: a topic with whitespace (or none at all) would split into the wrong
    /// number of fields and make the file unreadable, to Kafka as to us.
    #[error("refusing to write topic {topic:?} to checkpoint file {}: not a legal topic name", path.display())]
    InvalidTopic { path: PathBuf, topic: String },
}

/// Why a line was rejected; each case is one Kafka also rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MalformedReason {
    #[error("not UTF-8")]
    NotUtf8,
    /// The version or count line is not a decimal `i32`.
    #[error("expected an integer, found {text:?}")]
    NotAnInteger { text: String },
    #[error("unrecognised version {found}, expected {expected}")]
    UnsupportedVersion { found: i32, expected: i32 },
    /// The count line disagrees with the number of entry lines (reported on line 2).
    #[error("expected {expected} entries, found {found}")]
    CountMismatch { expected: i32, found: usize },
    /// An entry line does not split into the expected number of fields.
    #[error("expected {expected} fields, found {found}")]
    FieldCount { expected: usize, found: usize },
    /// An entry field that should be a number is not one.
    #[error("{field} is not a number: {text:?}")]
    BadField { field: &'static str, text: String },
    /// A leader epoch or start offset below zero: Kafka's cache refuses these
    /// (`IllegalArgumentException` while loading), so the file is unusable.
    #[error("{field} must not be negative, found {value}")]
    Negative { field: &'static str, value: i64 },
}

/// Replaces `path` with `text` so that a crash leaves either the old or the new contents:
/// write `<path>.tmp`, fsync it, rename it over `path`, fsync the parent dir (Kafka's
/// `CheckpointFile.write` + `Utils.atomicMoveWithFallback`). A stale `.tmp` from an earlier
/// crash is simply overwritten.
pub fn write_atomically(path: &Path, text: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = File::create(&tmp).and_then(|mut file| {
        file.write_all(text)?;
        file.sync_all()
    });
    if let Err(e) = written {
        // Best effort: a half-written tmp file is harmless but untidy.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    sync_dir(dir)
}

/// Makes the rename durable. Directories cannot be opened for fsync on every platform; Kafka
/// skips this step on Windows too.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// One of the offset checkpoints: entries `topic partition offset`, one file per log dir.
#[derive(Debug, Clone)]
pub struct OffsetCheckpointFile {
    path: PathBuf,
}

impl OffsetCheckpointFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes every entry, ordered by topic then partition (Kafka writes in hash-map order;
    /// readers never depend on the order, and a fixed one makes the file reproducible).
    pub fn write(&self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<(), CheckpointError> {
        let mut lines = Vec::with_capacity(offsets.len());
        for (tp, offset) in offsets {
            if tp.topic.is_empty() || tp.topic.contains(is_java_whitespace) {
                return Err(CheckpointError::InvalidTopic {
                    path: self.path.clone(),
                    topic: tp.topic.clone(),
                });
            }
            lines.push(format!("{} {} {}", tp.topic, tp.partition, offset));
        }
        write_entries(&self.path, &lines)
    }

    /// Missing or empty file → empty map. A partition listed twice keeps its last offset, as
    /// Kafka's reader does (both lines still count towards the entry count).
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, i64>, CheckpointError> {
        let entries = read_entries(&self.path, 3, |fields| {
            let partition = parse_field::<i32>("partition", fields[1])?;
            let offset = parse_field::<i64>("offset", fields[2])?;
            Ok((
                TopicPartition {
                    topic: fields[0].to_owned(),
                    partition,
                },
                offset,
            ))
        })?;
        Ok(entries.into_iter().collect())
    }
}

/// One leader epoch and the offset of the first record written in it (Kafka's `EpochEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

impl EpochEntry {
    pub const fn new(epoch: i32, start_offset: i64) -> Self {
        Self { epoch, start_offset }
    }
}

impl fmt::Display for EpochEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EpochEntry(epoch={}, startOffset={})", self.epoch, self.start_offset)
    }
}

/// `<topic>-<partition>/leader-epoch-checkpoint`: entries `epoch startOffset`.
#[derive(Debug, Clone)]
pub struct LeaderEpochCheckpointFile {
    path: PathBuf,
}

impl LeaderEpochCheckpointFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The checkpoint inside a partition dir (Kafka's `LeaderEpochCheckpointFile.newFile`).
    pub fn in_partition_dir(dir: &Path) -> Self {
        Self::new(dir.join(LEADER_EPOCH_CHECKPOINT))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the entries in the order given (the cache keeps them ascending).
    pub fn write(&self, entries: &[EpochEntry]) -> Result<(), CheckpointError> {
        let lines: Vec<String> = entries
            .iter()
            .map(|e| format!("{} {}", e.epoch, e.start_offset))
            .collect();
        write_entries(&self.path, &lines)
    }

    /// Entries in file order; missing or empty file → none. Order is not checked here: the cache
    /// replays entries through its `assign` rule, as Kafka's constructor does. Negative values are
    /// rejected here rather than in the cache so the error can name the line.
    pub fn read(&self) -> Result<Vec<EpochEntry>, CheckpointError> {
        read_entries(&self.path, 2, |fields| {
            let epoch = parse_field::<i32>("leader epoch", fields[0])?;
            let start_offset = parse_field::<i64>("start offset", fields[1])?;
            non_negative("leader epoch", i64::from(epoch))?;
            non_negative("start offset", start_offset)?;
            Ok(EpochEntry { epoch, start_offset })
        })
    }
}

fn write_entries(path: &Path, lines: &[String]) -> Result<(), CheckpointError> {
    let mut text = format!("{CURRENT_VERSION}\n{}\n", lines.len());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    write_atomically(path, text.as_bytes()).map_err(|source| CheckpointError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Kafka's `CheckpointReadBuffer.read`. `parse` sees exactly `arity` fields.
fn read_entries<T>(
    path: &Path,
    arity: usize,
    parse: impl Fn(&[&str]) -> Result<T, MalformedReason>,
) -> Result<Vec<T>, CheckpointError> {
    let malformed = |line: usize, reason: MalformedReason| CheckpointError::Malformed {
        path: path.to_owned(),
        line,
        reason,
    };
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(CheckpointError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = 1 + bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        malformed(line, MalformedReason::NotUtf8)
    })?;

    let mut lines = text.lines();
    let Some(version_line) = lines.next() else {
        return Ok(Vec::new());
    };
    let version = parse_header(version_line).map_err(|r| malformed(1, r))?;
    if version != CURRENT_VERSION {
        let reason = MalformedReason::UnsupportedVersion {
            found: version,
            expected: CURRENT_VERSION,
        };
        return Err(malformed(1, reason));
    }
    let Some(count_line) = lines.next() else {
        return Ok(Vec::new());
    };
    let expected = parse_header(count_line).map_err(|r| malformed(2, r))?;

    let mut entries = Vec::new();
    for (index, line) in lines.enumerate() {
        let line_number = index + 3;
        let fields = split_fields(line);
        if fields.len() != arity {
            let reason = MalformedReason::FieldCount {
                expected: arity,
                found: fields.len(),
            };
            return Err(malformed(line_number, reason));
        }
        entries.push(parse(&fields).map_err(|r| malformed(line_number, r))?);
    }
    if usize::try_from(expected).ok() != Some(entries.len()) {
        let reason = MalformedReason::CountMismatch {
            expected,
            found: entries.len(),
        };
        return Err(malformed(2, reason));
    }
    Ok(entries)
}

/// The version and count lines are parsed whole, like `Integer.parseInt(line)`.
fn parse_header(line: &str) -> Result<i32, MalformedReason> {
    line.parse()
        .map_err(|_| MalformedReason::NotAnInteger { text: line.to_owned() })
}

fn parse_field<N: std::str::FromStr>(field: &'static str, text: &str) -> Result<N, MalformedReason> {
    text.parse().map_err(|_| MalformedReason::BadField {
        field,
        text: text.to_owned(),
    })
}

fn non_negative(field: &'static str, value: i64) -> Result<(), MalformedReason> {
    match value {
        0.. => Ok(()),
        _ => Err(MalformedReason::Negative { field, value }),
    }
}

/// Java's `\s`: the whitespace Kafka's `split("\\s+")` splits on.
fn is_java_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r')
}

/// Java's `line.split("\\s+")`: runs of whitespace separate fields, trailing ones vanish, and a
/// leading run produces an empty first field (so `" a b"` has three fields, not two).
fn split_fields(line: &str) -> Vec<&str> {
    let mut fields: Vec<&str> = line.split(is_java_whitespace).filter(|f| !f.is_empty()).collect();
    if line.starts_with(is_java_whitespace) && !fields.is_empty() {
        fields.insert(0, "");
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.to_owned(),
            partition,
        }
    }

    fn offsets_file(text: impl AsRef<[u8]>) -> (tempfile::TempDir, OffsetCheckpointFile) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(REPLICATION_OFFSET_CHECKPOINT);
        fs::write(&path, text).expect("seed file");
        (dir, OffsetCheckpointFile::new(path))
    }

    fn epochs_file(text: &str) -> (tempfile::TempDir, LeaderEpochCheckpointFile) {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT), text).expect("seed file");
        let file = LeaderEpochCheckpointFile::in_partition_dir(dir.path());
        (dir, file)
    }

    #[test]
    fn offset_checkpoint_written_by_kafka_parses_and_we_write_the_same_bytes() {
        let kafka_text = "0\n2\norders 0 42\norders 1 7\n";
        let (dir, file) = offsets_file(kafka_text);
        let map = file.read().expect("read");
        assert_eq!(map, BTreeMap::from([(tp("orders", 0), 42), (tp("orders", 1), 7)]));

        let ours = OffsetCheckpointFile::new(dir.path().join(RECOVERY_POINT_OFFSET_CHECKPOINT));
        ours.write(&map).expect("write");
        assert_eq!(fs::read_to_string(ours.path()).expect("read back"), kafka_text);
    }

    #[test]
    fn offset_entries_are_written_sorted_by_topic_then_partition() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = OffsetCheckpointFile::new(dir.path().join(LOG_START_OFFSET_CHECKPOINT));
        let map = BTreeMap::from([(tp("b", 10), 3), (tp("a.x_y-z", 2), 0), (tp("b", 9), -1)]);
        file.write(&map).expect("write");
        let text = fs::read_to_string(file.path()).expect("read back");
        assert_eq!(text, "0\n3\na.x_y-z 2 0\nb 9 -1\nb 10 3\n");
        assert_eq!(file.read().expect("round trip"), map);
    }

    #[test]
    fn an_empty_map_is_written_as_version_and_zero_count() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = OffsetCheckpointFile::new(dir.path().join(CLEANER_OFFSET_CHECKPOINT));
        file.write(&BTreeMap::new()).expect("write");
        assert_eq!(fs::read_to_string(file.path()).expect("read back"), "0\n0\n");
        assert!(file.read().expect("read").is_empty());
    }

    #[test]
    fn missing_empty_and_header_only_files_read_as_empty_like_kafka() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = OffsetCheckpointFile::new(dir.path().join("nope"));
        assert!(missing.read().expect("missing").is_empty());
        for text in ["", "0\n", "0"] {
            let (_dir, file) = offsets_file(text);
            assert!(file.read().expect(text).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn kafka_reader_leniencies_are_kept() {
        // `\s+` splitting: several spaces, tabs and trailing whitespace are fine; CRLF too.
        let (_dir, file) = offsets_file("0\r\n2\r\norders  0\t42 \r\norders 1 7\n");
        let map = file.read().expect("read");
        assert_eq!(map, BTreeMap::from([(tp("orders", 0), 42), (tp("orders", 1), 7)]));
        // A partition listed twice: last one wins, both count.
        let (_dir, file) = offsets_file("0\n2\nt 0 1\nt 0 5\n");
        assert_eq!(file.read().expect("read"), BTreeMap::from([(tp("t", 0), 5)]));
    }

    #[test]
    fn malformed_offset_files_name_the_line_and_reason() {
        use MalformedReason::*;
        #[rustfmt::skip]
        let cases: [(&[u8], usize, MalformedReason); 11] = [
            (b"x\n", 1, NotAnInteger { text: "x".into() }),
            (b"1\n0\n", 1, UnsupportedVersion { found: 1, expected: 0 }),
            (b"0\ntwo\n", 2, NotAnInteger { text: "two".into() }),
            (b"0\n2\nt 0 1\n", 2, CountMismatch { expected: 2, found: 1 }),
            (b"0\n0\nt 0 1\n", 2, CountMismatch { expected: 0, found: 1 }),
            (b"0\n-1\n", 2, CountMismatch { expected: -1, found: 0 }),
            (b"0\n1\nt 0\n", 3, FieldCount { expected: 3, found: 2 }),
            (b"0\n2\nt 0 1\n t 1 1\n", 4, FieldCount { expected: 3, found: 4 }),
            (b"0\n1\nt 0 1\n\n", 4, FieldCount { expected: 3, found: 0 }), // a blank line is an entry to Kafka
            (b"0\n1\nt zero 1\n", 3, BadField { field: "partition", text: "zero".into() }),
            (b"0\n1\nt\xff 0 1\n", 3, NotUtf8),
        ];
        for (text, want_line, want_reason) in cases {
            let shown = String::from_utf8_lossy(text);
            let (_dir, file) = offsets_file(text);
            match file.read() {
                Err(CheckpointError::Malformed { path, line, reason }) => {
                    assert_eq!((line, &reason), (want_line, &want_reason), "{shown:?}");
                    assert_eq!(path, file.path());
                }
                other => panic!("{shown:?}: expected Malformed, got {other:?}"),
            }
        }
    }

    #[test]
    fn topics_that_would_corrupt_the_file_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = OffsetCheckpointFile::new(dir.path().join(REPLICATION_OFFSET_CHECKPOINT));
        for topic in ["", "a b", "a\tb"] {
            let err = file.write(&BTreeMap::from([(tp(topic, 0), 1)])).expect_err(topic);
            assert!(matches!(err, CheckpointError::InvalidTopic { .. }), "{topic:?}");
        }
        assert!(!file.path().exists(), "nothing written");
    }

    #[test]
    fn leader_epoch_checkpoint_round_trips_kafkas_bytes() {
        let kafka_text = "0\n3\n0 0\n3 120\n7 9001\n";
        let (dir, file) = epochs_file(kafka_text);
        let entries = file.read().expect("read");
        assert_eq!(
            entries,
            [EpochEntry::new(0, 0), EpochEntry::new(3, 120), EpochEntry::new(7, 9001)]
        );

        let ours = LeaderEpochCheckpointFile::new(dir.path().join("copy"));
        ours.write(&entries).expect("write");
        assert_eq!(fs::read_to_string(ours.path()).expect("read back"), kafka_text);
    }

    #[test]
    fn malformed_leader_epoch_files_name_the_line_and_reason() {
        use MalformedReason::*;
        #[rustfmt::skip]
        let cases: [(&str, usize, MalformedReason); 5] = [
            ("0\n1\n1 2 3\n", 3, FieldCount { expected: 2, found: 3 }),
            ("0\n1\nx 2\n", 3, BadField { field: "leader epoch", text: "x".into() }),
            ("0\n2\n1 2\n2 99999999999999999999\n", 4, BadField { field: "start offset", text: "99999999999999999999".into() }),
            ("0\n1\n-1 2\n", 3, Negative { field: "leader epoch", value: -1 }),
            ("0\n2\n1 2\n2 -5\n", 4, Negative { field: "start offset", value: -5 }),
        ];
        for (text, want_line, want_reason) in cases {
            let (_dir, file) = epochs_file(text);
            match file.read() {
                Err(CheckpointError::Malformed { line, reason, .. }) => {
                    assert_eq!((line, &reason), (want_line, &want_reason), "{text:?}")
                }
                other => panic!("{text:?}: expected Malformed, got {other:?}"),
            }
        }
    }

    #[test]
    fn write_replaces_the_file_and_leaves_no_tmp_behind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        let tmp = dir.path().join("leader-epoch-checkpoint.tmp");
        // A stale tmp from a crash mid-write must not leak into the next write.
        fs::write(&tmp, "garbage from a crash, longer than what follows").expect("seed tmp");
        fs::write(&path, "0\n1\n1 1\n").expect("seed old");
        let file = LeaderEpochCheckpointFile::new(&path);
        file.write(&[EpochEntry::new(2, 5)]).expect("write");
        assert_eq!(fs::read_to_string(&path).expect("read"), "0\n1\n2 5\n");
        assert!(!tmp.exists());
    }

    #[test]
    fn write_into_a_missing_dir_is_an_io_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("gone").join(LEADER_EPOCH_CHECKPOINT);
        let err = LeaderEpochCheckpointFile::new(&path).write(&[]).expect_err("no dir");
        assert!(
            matches!(&err, CheckpointError::Io { path: p, .. } if *p == path),
            "{err}"
        );
    }
}
