//! placeholder until the socket server lands
pub mod handler;
