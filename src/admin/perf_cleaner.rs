//! `kastle perf cleaner`: log cleaner throughput on this machine. Builds a compacted log of
//! `bytes` (16-record batches of 1,000-byte values over `keys` keys, 64 MiB segments, one
//! batch left in the active segment), then times one cleaning (map, rewrite, fsync, swap, index
//! rebuild) and reports MB of log cleaned per second against a raw `write(2)` + fsync of the
//! same number of bytes in the same directory (the disk-write limit of the rewrite), measured
//! before the log is built and after the cleaning; the higher one is the ratio's denominator.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::log::cleaner::{CleanerConfig, LogCleaner};
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log_manager::{lock, LogManager, LogManagerConfig};
use crate::protocol::test_support::BatchBuilder;
use crate::types::TopicPartition;

/// What to measure.
#[derive(Debug, Clone)]
pub struct PerfCleanerOptions {
    pub bytes: u64,
    pub keys: u64,
}

fn rate(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs.max(1e-9) / 1e6
}

/// Runs the measurement in `dir` and returns a Markdown report.
pub fn run(dir: &Path, options: &PerfCleanerOptions) -> std::io::Result<String> {
    let err = |e: crate::log::log::LogError| std::io::Error::other(e.to_string());
    let cfg = LogManagerConfig {
        dirs: vec![dir.to_path_buf()],
        clean_dirs: vec![dir.to_path_buf()],
        log: LogConfig::default(),
        recovery_threads_per_dir: 1,
    };
    let manager = Arc::new(LogManager::startup(
        &cfg,
        LogDirFailureChannel::new(),
        Faults::default(),
        0,
    ));
    let overrides: BTreeMap<String, String> = [
        ("cleanup.policy", "compact"),
        ("segment.bytes", "67108864"),
        ("min.cleanable.dirty.ratio", "0.01"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    manager.update_topic_config("perf", overrides);
    let tp = TopicPartition {
        topic: "perf".into(),
        partition: 0,
    };
    // The limit is measured before the log is built and after the cleaning (writeback of other
    // work makes single runs of it noisy); the higher of the two is the ratio's denominator.
    let before = raw_write_rate(dir, options.bytes)?;
    let log = manager.get_or_create_log(&tp, 0).map_err(err)?;
    let value = vec![b'v'; 1000];
    let keys: Vec<String> = (0..options.keys.max(1)).map(|k| format!("key-{k:08}")).collect();
    let mut written = 0u64;
    let mut i = 0usize;
    {
        let mut l = lock(&log);
        while written < options.bytes {
            let mut b = BatchBuilder::new(0).timestamp(1);
            for _ in 0..16 {
                b = b.record(Some(keys[i % keys.len()].as_bytes()), Some(&value));
                i += 1;
            }
            let batch = b.build();
            written += batch.len() as u64;
            l.append_as_leader(&batch, 0, 0).map_err(err)?;
        }
        l.roll(0).map_err(err)?;
        let last = BatchBuilder::new(0)
            .timestamp(1)
            .record(Some(b"tail"), Some(&value))
            .build();
        l.append_as_leader(&last, 0, 0).map_err(err)?;
        l.flush(0).map_err(err)?;
    }
    let config = CleanerConfig {
        enable: true,
        threads: 1,
        backoff: std::time::Duration::from_secs(1),
        dedupe_buffer_size: 128 << 20,
        io_buffer_size: 1 << 20,
    };
    let cleaner = LogCleaner::new(manager.clone(), config, Arc::new(|_| i64::MAX));
    let started = Instant::now();
    let stats = cleaner
        .clean_filthiest(0, 1_000)
        .ok_or_else(|| std::io::Error::other("nothing was cleaned"))?;
    let clean_secs = started.elapsed().as_secs_f64();

    let after = raw_write_rate(dir, written)?;
    let cleaned = rate(written, clean_secs);
    let limit = before.max(after);
    let mut report = String::new();
    let _ = writeln!(
        report,
        "| measurement | kastle | machine limit | ratio |\n|---|---|---|---|"
    );
    let _ = writeln!(
        report,
        "| clean {} MiB, {} keys (MB/s of log cleaned) | {cleaned:.0} | write+fsync {limit:.0} (before {:.0}, after {:.0}) | {:.2} |",
        written >> 20,
        keys.len(),
        before,
        after,
        cleaned / limit
    );
    let _ = writeln!(
        report,
        "\nread {} bytes, wrote {} bytes, removed {} records, {} segments swapped, {:.2} s",
        stats.bytes_read, stats.bytes_written, stats.records_removed, stats.segments_swapped, clean_secs
    );
    Ok(report)
}

/// MB/s of writing `bytes` to a fresh file 1 MiB at a time and fsyncing it.
fn raw_write_rate(dir: &Path, bytes: u64) -> std::io::Result<f64> {
    let raw = dir.join("raw.bin");
    let chunk = vec![0u8; 1 << 20];
    let started = Instant::now();
    let mut f = std::fs::File::create(&raw)?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    let secs = started.elapsed().as_secs_f64();
    drop(f);
    std::fs::remove_file(&raw)?;
    Ok(rate(bytes, secs))
}
