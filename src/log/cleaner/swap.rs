//! Replacing segments with their cleaned copy so that a crash at any point recovers to either
//! the old segments or the new one (Kafka's `.cleaned` → `.swap` → rename protocol):
//!
//! 1. the cleaner writes and fsyncs `<base>.log.cleaned` (a crash now: `.cleaned` is deleted on
//!    load, the old segments stay);
//! 2. `<base>.log.cleaned` is renamed `<base>.log.swap` — the commit point;
//! 3. the old segments' files are deleted;
//! 4. `<base>.log.swap` is renamed `<base>.log` and its indexes are rebuilt.
//!
//! On load, [`recover_interrupted_swaps`] finishes step 3 and 4 for every `.swap` file: it
//! deletes the segments whose base offset falls in the swap file's offset range (Kafka's
//! LogLoader rule) and renames it into place.

use std::io;
use std::path::Path;

use super::policy::SegmentView;
use crate::log::log::{Log, LogError};
use crate::log::segment::{self, LogSegment, SegmentIoError};
use crate::protocol::record_batch::BatchScanner;

pub const CLEANED_SUFFIX: &str = ".log.cleaned";
pub const SWAP_SUFFIX: &str = ".log.swap";

/// Deletes `.cleaned` files and completes every `.swap` of `dir` (a partition dir), before the
/// log lists its segments. Returns the base offsets of the swapped-in segments: they have no
/// index yet, and the log must rebuild it.
pub fn recover_interrupted_swaps(dir: &Path) -> io::Result<Vec<i64>> {
    let mut swaps = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        match segment::parse_base_offset(&name) {
            Some((base, SWAP_SUFFIX)) => swaps.push(base),
            // Index copies of a cleaning, if any tool left them: indexes are rebuilt anyway.
            Some((_, suffix)) if suffix.ends_with(".cleaned") || suffix.ends_with(".swap") => {
                tracing::info!(file = %entry.path().display(), "deleting a leftover of an interrupted compaction");
                std::fs::remove_file(entry.path())?;
            }
            _ => {}
        }
    }
    swaps.sort_unstable();
    for &base in &swaps {
        let swap = dir.join(segment::file_name(base, SWAP_SUFFIX));
        let data = std::fs::read(&swap)?;
        // The swap replaced the segments its records came from: at least the one at its base.
        let end = BatchScanner::without_crc(&data)
            .map_while(Result::ok)
            .map(|(_, h)| h.next_offset())
            .max()
            .unwrap_or(base)
            .max(base + 1);
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some((old, ".log")) = segment::parse_base_offset(&name) {
                if (base..end).contains(&old) {
                    remove_segment_files(dir, old)?;
                }
            }
        }
        remove_segment_files(dir, base)?;
        std::fs::rename(&swap, dir.join(segment::file_name(base, ".log")))?;
        tracing::info!(file = %swap.display(), "completed an interrupted compaction swap");
    }
    Ok(swaps)
}

fn remove_segment_files(dir: &Path, base: i64) -> io::Result<()> {
    for suffix in [".log", ".index", ".timeindex", ".txnindex"] {
        match std::fs::remove_file(dir.join(segment::file_name(base, suffix))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Replaces `group` (segments as the cleaner saw them) with the fsynced `cleaned` file, under
/// the log's lock. Returns `Ok(false)` and deletes `cleaned` when the log changed meanwhile
/// (truncation or retention touched those segments): that cleaning is simply dropped.
pub fn swap_in(log: &mut Log, group: &[SegmentView], cleaned: &Path, now_ms: i64) -> Result<bool, LogError> {
    let (Some(first), Some(last)) = (group.first(), group.last()) else {
        return Ok(false);
    };
    let active = log.segments().keys().next_back().copied();
    let current: Vec<(i64, u64)> = log
        .segments()
        .range(first.base_offset..last.end_offset)
        .map(|(b, s)| (*b, s.size()))
        .collect();
    let expected: Vec<(i64, u64)> = group.iter().map(|s| (s.base_offset, s.size_bytes)).collect();
    if current != expected || active.is_some_and(|a| a < last.end_offset) {
        let _ = std::fs::remove_file(cleaned);
        return Ok(false);
    }
    let dir = log.dir().to_path_buf();
    let base = first.base_offset;
    let swap = dir.join(segment::file_name(base, SWAP_SUFFIX));
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| SegmentIoError { op, path, source }
    };
    let renamed = std::fs::rename(cleaned, &swap).map_err(io("rename", cleaned));
    renamed.map_err(|e| log.storage_error(e))?;
    for s in group {
        if let Some(old) = log.segments_mut().remove(&s.base_offset) {
            old.delete().map_err(|e| log.storage_error(e))?;
        }
    }
    let target = dir.join(segment::file_name(base, ".log"));
    let renamed = std::fs::rename(&swap, &target).map_err(io("rename", &swap));
    renamed.map_err(|e| log.storage_error(e))?;
    let opened = LogSegment::open(
        &dir,
        base,
        log.config().segment_config(),
        log.faults(),
        true,
        usize::MAX,
        now_ms,
    );
    let (seg, _) = opened.map_err(|e| log.storage_error(e))?;
    log.segments_mut().insert(base, seg);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::test_support::build_batch;

    fn write_segment(dir: &Path, base: i64, n: i64, suffix: &str) {
        let mut data = Vec::new();
        for i in 0..n {
            data.extend(build_batch(base + i, 0, &[(Some(b"k"), Some(b"v"))], 1));
        }
        std::fs::write(dir.join(segment::file_name(base, suffix)), data).expect("write");
        if suffix == ".log" {
            std::fs::write(dir.join(segment::file_name(base, ".index")), b"").expect("index");
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_crash_before_the_swap_keeps_the_old_segments() {
        let dir = tempfile::tempdir().expect("dir");
        write_segment(dir.path(), 0, 5, ".log");
        write_segment(dir.path(), 5, 5, ".log");
        write_segment(dir.path(), 0, 1, CLEANED_SUFFIX);
        recover_interrupted_swaps(dir.path()).expect("recover");
        assert_eq!(
            files(dir.path()),
            vec![
                "00000000000000000000.index",
                "00000000000000000000.log",
                "00000000000000000005.index",
                "00000000000000000005.log"
            ]
        );
        assert!(
            std::fs::metadata(dir.path().join(segment::file_name(0, ".log")))
                .expect("log")
                .len()
                > 0
        );
    }

    #[test]
    fn a_crash_after_the_swap_file_completes_the_swap() {
        let dir = tempfile::tempdir().expect("dir");
        // Segments 0 and 5 were cleaned into one holding offsets 3..=7; segment 10 is untouched.
        write_segment(dir.path(), 0, 5, ".log");
        write_segment(dir.path(), 5, 5, ".log");
        write_segment(dir.path(), 10, 2, ".log");
        let mut swap = Vec::new();
        for o in 3..8 {
            swap.extend(build_batch(o, 0, &[(Some(b"k"), Some(b"v"))], 1));
        }
        std::fs::write(dir.path().join(segment::file_name(0, SWAP_SUFFIX)), &swap).expect("swap");
        // The crash came after the first old segment was already deleted.
        std::fs::remove_file(dir.path().join(segment::file_name(0, ".log"))).expect("rm");
        recover_interrupted_swaps(dir.path()).expect("recover");
        assert_eq!(
            files(dir.path()),
            vec![
                "00000000000000000000.log",
                "00000000000000000010.index",
                "00000000000000000010.log"
            ]
        );
        assert_eq!(
            std::fs::read(dir.path().join(segment::file_name(0, ".log"))).expect("read"),
            swap
        );
    }
}
