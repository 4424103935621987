//! Operator tools behind `kastle` subcommands that are more than a few lines of CLI glue.

pub mod cli;
pub mod health;
pub mod perf_cleaner;
pub mod perf_consume;
pub mod perf_groups;
pub mod perf_log;
pub mod perf_produce;
