//! Wall-clock time in milliseconds, the unit of every Kafka timestamp. Logic that decides things
//! takes `now` as a parameter; only the I/O edges call this.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Kafka's scheduler, for background chores: runs the blocking `job` every `every` (first run
/// after one interval) on the blocking pool, until `stop` turns true. A slow run delays the next
/// one rather than piling runs up.
pub async fn run_periodically<F>(every: std::time::Duration, mut stop: tokio::sync::watch::Receiver<bool>, job: F)
where
    F: Fn() + Send + Sync + 'static,
{
    let job = std::sync::Arc::new(job);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {},
            _ = stop.changed() => return,
        }
        let job = job.clone();
        let _ = tokio::task::spawn_blocking(move || job()).await;
    }
}
