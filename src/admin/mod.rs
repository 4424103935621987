//! Operator tools behind `kastle` subcommands that are more than a few lines of CLI glue.

pub mod perf_log;
