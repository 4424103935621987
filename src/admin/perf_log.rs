//! `kastle perf log`: measures the log against this machine's own limits, in one run, on one
//! directory: appends vs a raw sequential write of the same bytes, log reads vs raw file reads,
//! recovery-scan speed vs the CRC-32C rate, and resident memory per open partition. It prints
//! figures; it asserts nothing (speed is measured, not tested).

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log::{Log, LogContext};
use crate::log::log_manager::{lock, LogManager, LogManagerConfig};
use crate::protocol::test_support::build_batch;
use crate::types::TopicPartition;

/// What to measure.
#[derive(Debug, Clone)]
pub struct PerfLogOptions {
    /// Bytes to append (and then read and recover).
    pub bytes: u64,
    /// Partitions for the memory figure.
    pub partitions: usize,
}

/// One batch of 16 records of 1 KiB: a 16 KiB batch as the benchmark specifies.
fn template_batch() -> Vec<u8> {
    let value = vec![b'v'; 1000];
    let records: Vec<crate::protocol::test_support::KeyValue> =
        (0..16).map(|_| (Some(&b"key-0001"[..]), Some(&value[..]))).collect();
    build_batch(0, 0, &records, 1_700_000_000_000)
}

fn rate(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs.max(1e-9) / 1e6
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn ctx() -> LogContext {
    LogContext {
        faults: Faults::default(),
        failures: LogDirFailureChannel::new(),
    }
}

/// Runs every measurement in `dir` and returns a Markdown report.
pub fn run(dir: &Path, options: &PerfLogOptions) -> std::io::Result<String> {
    let err = |e: crate::log::log::LogError| std::io::Error::other(e.to_string());
    let template = template_batch();
    let batches = (options.bytes / template.len() as u64).max(1);
    let total = batches * template.len() as u64;
    let mut report = String::new();
    let _ = writeln!(
        report,
        "| measurement | kastle | machine limit | ratio |\n|---|---|---|---|"
    );

    // Appends vs a raw sequential write of the same bytes (dd bs=16k), three rounds in
    // alternating order, each after the previous round's dirty pages were synced, so page-cache
    // writeback from one side does not slow the other. Medians are reported.
    let raw_path = dir.join("raw.bin");
    let log_dir = dir.join("perf-0");
    let tp = TopicPartition {
        topic: "perf".into(),
        partition: 0,
    };
    let (mut raw_rates, mut log_rates) = (Vec::new(), Vec::new());
    let mut log = None;
    for round in 0..3 {
        for side in [round % 2, 1 - round % 2] {
            if side == 0 {
                let _ = std::fs::remove_file(&raw_path);
                let started = Instant::now();
                let mut f = std::fs::File::create(&raw_path)?;
                for _ in 0..batches {
                    f.write_all(&template)?;
                }
                raw_rates.push(rate(total, started.elapsed().as_secs_f64()));
                f.sync_all()?;
            } else {
                drop(log.take());
                let _ = std::fs::remove_dir_all(&log_dir);
                let (mut l, _) =
                    Log::open(&log_dir, tp.clone(), LogConfig::default(), &ctx(), 0, None, true, 0).map_err(err)?;
                let buf = template.clone();
                let started = Instant::now();
                // The same buffer is appended again and again: offsets and the leader epoch are
                // rewritten in place, outside the CRC, exactly as for a fresh producer batch.
                for _ in 0..batches {
                    l.append_as_leader(&buf, 0, 0).map_err(err)?;
                }
                log_rates.push(rate(total, started.elapsed().as_secs_f64()));
                l.flush(0).map_err(err)?;
                log = Some(l);
            }
        }
    }
    let Some(log) = log else {
        return Err(std::io::Error::other("no log was written"));
    };
    let (raw_write, log_append) = (median(&mut raw_rates), median(&mut log_rates));
    let _ = writeln!(
        report,
        "| append 16 KiB batches (MB/s, median of 3) | {log_append:.0} | raw buffered write {raw_write:.0} | {:.2} |",
        log_append / raw_write
    );

    // Raw sequential read of the file vs reads through the log, 1 MiB at a time, both from the
    // page cache, alternating, medians of 3.
    let leo = log.log_end_offset();
    let (mut raw_reads, mut log_reads) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let started = Instant::now();
        let mut f = std::fs::File::open(&raw_path)?;
        let mut chunk = vec![0u8; 1 << 20];
        let mut read_total = 0u64;
        loop {
            let n = f.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            read_total += n as u64;
        }
        raw_reads.push(rate(read_total, started.elapsed().as_secs_f64()));
        let started = Instant::now();
        let mut offset = 0;
        let mut log_read_total = 0u64;
        while offset < leo {
            let bytes = log.read(offset, 1 << 20, leo, true).map_err(err)?;
            let Some(last) = last_offset_in(&bytes) else { break };
            log_read_total += bytes.len() as u64;
            offset = last + 1;
        }
        log_reads.push(rate(log_read_total, started.elapsed().as_secs_f64()));
    }
    let (raw_read, log_read) = (median(&mut raw_reads), median(&mut log_reads));
    let _ = writeln!(
        report,
        "| sequential read, 1 MiB fetches (MB/s, median of 3) | {log_read:.0} | raw file read {raw_read:.0} | {:.2} |",
        log_read / raw_read
    );
    drop(log);
    std::fs::remove_file(&raw_path)?;

    // Recovery scan of the whole log (in page cache) vs the CRC-32C rate on this machine.
    let crc_buf = vec![0x5Au8; 64 << 20];
    let started = Instant::now();
    let mut crc = 0u32;
    for _ in 0..8 {
        crc = crc32c::crc32c_append(crc, &crc_buf);
    }
    let crc_rate = rate(8 * crc_buf.len() as u64, started.elapsed().as_secs_f64());
    std::hint::black_box(crc);
    let started = Instant::now();
    let (recovered, _) = Log::open(&log_dir, tp, LogConfig::default(), &ctx(), 0, None, false, 0).map_err(err)?;
    let recovery = rate(total, started.elapsed().as_secs_f64());
    let _ = writeln!(
        report,
        "| recovery scan of {:.2} GiB (MB/s) | {recovery:.0} | CRC-32C {crc_rate:.0} | {:.2} |",
        total as f64 / (1u64 << 30) as f64,
        recovery / crc_rate
    );
    if recovered.log_end_offset() != leo {
        return Err(std::io::Error::other(format!(
            "recovery lost data: log end {} instead of {leo}",
            recovered.log_end_offset()
        )));
    }
    drop(recovered);
    std::fs::remove_dir_all(&log_dir)?;

    // Resident memory of many open partitions, each with an open segment.
    let mdir = dir.join("mem");
    std::fs::create_dir_all(&mdir)?;
    let cfg = LogManagerConfig {
        dirs: vec![mdir.clone()],
        clean_dirs: vec![mdir.clone()],
        log: LogConfig::default(),
        recovery_threads_per_dir: 1,
    };
    let before = rss_bytes();
    let manager = LogManager::startup(&cfg, LogDirFailureChannel::new(), Faults::default(), 0);
    for p in 0..options.partitions {
        let tp = TopicPartition {
            topic: "mem".into(),
            partition: p as i32,
        };
        let log = manager.get_or_create_log(&tp, 0).map_err(err)?;
        let b = template.clone();
        lock(&log).append_as_leader(&b, 0, 0).map_err(err)?;
    }
    let grown = rss_bytes().saturating_sub(before);
    let _ = writeln!(
        report,
        "| resident memory for {} open partitions | {:.1} MiB | limit 50 MiB | {:.2} |",
        options.partitions,
        grown as f64 / (1 << 20) as f64,
        grown as f64 / (50u64 << 20) as f64
    );
    drop(manager);
    std::fs::remove_dir_all(&mdir)?;
    Ok(report)
}

/// The last offset of the last whole batch in `bytes`.
fn last_offset_in(bytes: &[u8]) -> Option<i64> {
    crate::protocol::record_batch::BatchScanner::without_crc(bytes)
        .map_while(Result::ok)
        .last()
        .map(|(_, header)| header.last_offset())
}
