//! Reconnect backoff, as Kafka's `ClusterConnectionStates` does it: after the n-th consecutive
//! failed connect (or the loss of an established connection) the next attempt waits
//! `reconnect.backoff.ms · 2^(n-1)`, capped at `reconnect.backoff.max.ms`, with ±20 % jitter so
//! that many clients do not reconnect in lockstep. A successful connect resets the count.
//!
//! Pure logic: time and randomness come in as arguments; the pool owns the clock and the sleep.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio::time::Instant;

/// Kafka's `org.apache.kafka.common.utils.ExponentialBackoff` with base 2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialBackoff {
    initial: Duration,
    max: Duration,
    /// Fraction of the un-jittered value the result may deviate by (Kafka: 0.2).
    jitter: f64,
}

impl ExponentialBackoff {
    pub fn new(initial: Duration, max: Duration, jitter: f64) -> Self {
        ExponentialBackoff {
            initial,
            max,
            jitter: jitter.clamp(0.0, 1.0),
        }
    }

    /// The wait before the next attempt after `attempts + 1` consecutive failures, for a
    /// `random` value in `[0, 1)`. Mirrors Kafka: the exponent stops growing once the term
    /// reaches `max`, jitter applies to the term, and the result is capped at `max`.
    pub fn backoff(&self, attempts: u32, random: f64) -> Duration {
        let initial = self.initial.as_secs_f64();
        let max = self.max.as_secs_f64();
        if max <= initial {
            return self.initial;
        }
        // Kafka guards the division with max(initial, 1 ms).
        let exp_max = (max / initial.max(0.001)).log2();
        let term = initial * f64::from(attempts).min(exp_max).exp2();
        let factor = if self.jitter < f64::MIN_POSITIVE {
            1.0
        } else {
            1.0 - self.jitter + 2.0 * self.jitter * random.clamp(0.0, 1.0)
        };
        Duration::from_secs_f64((factor * term).min(max))
    }
}

/// A value in `[0, 1)` for jitter. `RandomState` is seeded per instance by the standard library,
/// which is random enough to spread reconnects without another dependency.
pub fn random_unit() -> f64 {
    let bits = RandomState::new().build_hasher().finish() >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// Per-broker reconnect bookkeeping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReconnectState {
    /// Consecutive failures since the last successful connect.
    failed_attempts: u32,
    /// No connect may start before this instant.
    next_attempt: Option<Instant>,
}

impl ReconnectState {
    /// Records a failed connect, or the loss of an established connection, that happened at
    /// `at` (Kafka times the backoff from the disconnect, not from when it is noticed).
    pub fn on_failure(&mut self, at: Instant, backoff: &ExponentialBackoff, random: f64) {
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        self.next_attempt = Some(at + backoff.backoff(self.failed_attempts - 1, random));
    }

    pub fn on_connected(&mut self) {
        *self = ReconnectState::default();
    }

    /// When the next connect may start; `None` means now.
    pub fn next_attempt(&self) -> Option<Instant> {
        self.next_attempt
    }

    pub fn failed_attempts(&self) -> u32 {
        self.failed_attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn kafka_defaults(jitter: f64) -> ExponentialBackoff {
        ExponentialBackoff::new(50 * MS, 1000 * MS, jitter)
    }

    fn millis(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    #[test]
    fn backoff_doubles_from_50ms_and_is_capped_at_1s_like_kafka_defaults() {
        let b = kafka_defaults(0.0);
        let table = [
            (0, 50.0),
            (1, 100.0),
            (2, 200.0),
            (3, 400.0),
            (4, 800.0),
            (5, 1000.0),
            (40, 1000.0),
        ];
        for (attempts, expected) in table {
            let got = millis(b.backoff(attempts, 0.5));
            assert!(
                (got - expected).abs() < 1e-6,
                "attempt {attempts}: {got} ms, expected {expected} ms"
            );
        }
    }

    #[test]
    fn jitter_stays_within_twenty_percent_and_never_exceeds_the_max() {
        let b = kafka_defaults(0.2);
        for attempts in 0..8 {
            let plain = millis(kafka_defaults(0.0).backoff(attempts, 0.0));
            let low = millis(b.backoff(attempts, 0.0));
            let high = millis(b.backoff(attempts, 0.999_999));
            assert!(
                (low - plain * 0.8).abs() < 1e-3,
                "attempt {attempts}: low {low} for {plain}"
            );
            assert!(high <= 1000.0 + 1e-6, "attempt {attempts}: {high} above the max");
            assert!(
                high <= plain * 1.2 + 1e-3,
                "attempt {attempts}: {high} above +20 % of {plain}"
            );
        }
    }

    #[test]
    fn a_max_not_above_the_initial_backoff_gives_a_constant_backoff() {
        let b = ExponentialBackoff::new(50 * MS, 10 * MS, 0.2);
        assert_eq!(b.backoff(0, 0.9), 50 * MS);
        assert_eq!(b.backoff(7, 0.1), 50 * MS);
    }

    #[test]
    fn random_unit_is_in_the_unit_interval() {
        for _ in 0..1000 {
            let r = random_unit();
            assert!((0.0..1.0).contains(&r), "{r}");
        }
    }

    #[test]
    fn consecutive_failures_push_the_next_attempt_out_and_a_connect_resets_them() {
        let b = kafka_defaults(0.0);
        let t0 = Instant::now();
        let mut state = ReconnectState::default();
        assert_eq!(state.next_attempt(), None);

        state.on_failure(t0, &b, 0.5);
        assert_eq!(state.next_attempt(), Some(t0 + 50 * MS));
        state.on_failure(t0 + 60 * MS, &b, 0.5);
        assert_eq!(state.next_attempt(), Some(t0 + 160 * MS));
        assert_eq!(state.failed_attempts(), 2);

        state.on_connected();
        assert_eq!(state, ReconnectState::default());
    }
}
