//! kastle — a Kafka-protocol broker built the classic (ZooKeeper-mode) way.
//!
//! Module map (see `../shared/design/ARCHITECTURE.md` for the whole picture):
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | the broker config: Kafka's property names and 3.9 defaults, YAML / `server.properties` files, env and CLI overrides, the dynamic broker keys and their layering |
//! | [`clock`] | wall-clock milliseconds, read only at the I/O edges |
//! | [`types`] | newtypes for ids, epochs and versions shared by every subsystem |
//! | [`zk`] | Kafka's ZooKeeper layout: typed paths, JSON payload models, the store abstraction (real client and in-memory fake), session handling (SASL and TLS to ZooKeeper), schema validation |
//! | [`protocol`] | wire-level formats without I/O: record batches (validation, leader offset assignment on header copies, compression codecs), Kafka's error codes, KIP-227 fetch session ids and epochs, authorized-operation sets |
//! | [`log`] | Kafka's on-disk log: segments, indexes, checkpoints, leader-epoch cache, recovery, retention, background flushes, the LogManager and log-dir failure signalling |
//! | [`controller`] | the ZK-mode controller: `/controller` election, epoch fencing, leader elections, requests to brokers; a sans-IO core (`step`: inputs in, ZooKeeper operations, requests, timers and answers out) for every controller event (broker and topic changes, ISR notifications, deletion, failover, controlled shutdown, ElectLeaders, log-dir events, CreatePartitions, reassignment) and the elections they end in, and a deterministic simulation of the whole loop |
//! | [`client`] | the internal Kafka-protocol client: connections (TLS and SASL as the inter-broker listener demands), correlation ids, timeouts, reconnect backoff, version negotiation, the fetching side of KIP-227 fetch sessions |
//! | [`network`] | listeners (plaintext and TLS streams), framing, request headers, ApiVersions, SASL authentication before serving, per-connection ordering |
//! | [`replica`] | the partitions this broker hosts: leader/follower state, high watermark, appends and reads (`append_records`, `fetch_messages`, disk work on one I/O thread per log dir, `replica::io`), the delayed-operation purgatory keyed by partition, DeleteRecords (`delete_records`) |
//! | [`coordinator`] | consumer groups on `__consumer_offsets`: the group state machine, its records, loading and unloading with leadership |
//! | [`admin`] | operator tools behind subcommands: Kafka's `topics`, `configs`, `consumer-groups`, `delete-records`, `leader-election` over the protocol (`admin::cli`), `perf`, `health` |
//! | [`fuzz_entry`] | entry points of the `fuzz/` targets (bytes through every decoder a peer or a file reaches) and their seed corpus; not an API |
//! | [`security`] | who a connection is (`KafkaPrincipal`), how it authenticated (TLS with rustls, SASL PLAIN/SCRAM with credentials in `/config/users`), what it may do (the ACL authorizer, ACLs in `/kafka-acl*`), the broker's own inter-broker TLS/SASL settings, and the shared JAAS parser |
//! | [`server`] | broker wiring: start-up order, ZooKeeper registration, listener sockets, shutdown; the request handlers, KIP-227 fetch sessions, and the `/config/changes` listener that applies dynamic configs (TLS keystore reloads among them) |
//!
//! Logic that decides things is kept free of I/O; ZooKeeper, sockets and files stay at the edges.

pub mod admin;
pub mod client;
pub mod clock;
pub mod config;
pub mod controller;
pub mod coordinator;
#[doc(hidden)]
pub mod fuzz_entry;
pub mod log;
pub mod network;
pub mod protocol;
pub mod replica;
pub mod security;
pub mod server;
pub mod types;
pub mod zk;
