//! A fuzz loop against a live server: thousands of malformed frames, each on its own
//! connection, while a well-behaved client keeps sending requests that must all be answered.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::bail;
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::ApiKey;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::api_versions::SUPPORTED;
use super::socket_server::NetworkConfig;
use super::test_support::{start_server, within_deadline, TestClient};

const FRAMES: usize = 2_000;

/// xorshift64: deterministic, so a failure names the seed that reproduces it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Bytes biased towards 0x00 and 0xff, which make lengths and counts extreme.
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| match self.below(4) {
                0 => 0,
                1 => 0xff,
                _ => self.next() as u8,
            })
            .collect()
    }
}

/// One malformed (or occasionally accidentally valid) frame, and whether to half-close after it.
fn fuzz_frame(rng: &mut Rng) -> (Vec<u8>, bool) {
    let body_len = rng.below(48) as usize;
    match rng.below(5) {
        // Any size prefix at all, then some bytes.
        0 => {
            let mut frame = (rng.next() as u32).to_be_bytes().to_vec();
            frame.extend(rng.bytes(body_len));
            (frame, true)
        }
        // A correct size around random bytes.
        1 => {
            let body = rng.bytes(body_len);
            let mut frame = (body.len() as u32).to_be_bytes().to_vec();
            frame.extend(body);
            (frame, true)
        }
        // A served API at any version (mostly in range) with a garbage body.
        2 => {
            let idx = rng.below(SUPPORTED.len() as u64) as usize;
            let (key, min, max) = SUPPORTED.get(idx).copied().unwrap_or((ApiKey::Metadata, 0, 12));
            let version = min - 1 + rng.below((max - min + 3) as u64) as i16;
            let mut payload = BytesMut::new();
            payload.put_i16(key as i16);
            payload.put_i16(version);
            payload.put_i32(rng.next() as i32);
            payload.put_slice(&rng.bytes(body_len));
            let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(&payload);
            (frame, true)
        }
        // A frame cut short: the server must notice the EOF mid-frame.
        3 => {
            let mut frame = 64u32.to_be_bytes().to_vec();
            frame.extend(rng.bytes(body_len));
            (frame, true)
        }
        // An api key no Kafka version defines.
        _ => {
            let mut frame = 8u32.to_be_bytes().to_vec();
            frame.extend_from_slice(&(1000 + rng.below(30_000) as i16).to_be_bytes());
            frame.extend(rng.bytes(6));
            (frame, false)
        }
    }
}

/// Sends [`FRAMES`] fuzz frames, each on a new connection, checking each connection ends.
async fn fuzz(addr: SocketAddr, seed: u64) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    for i in 0..FRAMES {
        let (frame, half_close) = fuzz_frame(&mut rng);
        let mut client = TestClient::connect(addr).await?;
        // The server may close before reading everything; a failed write is fine.
        let _ = client.stream.write_all(&frame).await;
        if half_close {
            let _ = client.stream.shutdown().await;
        }
        // Whatever the server answers, it must then close: read to the end.
        let mut sink = Vec::new();
        match within_deadline(
            "the server to finish with a fuzz connection",
            client.stream.read_to_end(&mut sink),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Ok(Err(e)) => bail!("frame {i} (seed {seed:#x}) {frame:02x?}: {e}"),
            Err(e) => bail!("frame {i} (seed {seed:#x}) {frame:02x?}: {e}"),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_frames_never_disturb_a_well_behaved_connection() -> anyhow::Result<()> {
    let seed = 0x5eed_0fca_571e_0042_u64;
    let test = start_server(NetworkConfig {
        socket_request_max_bytes: 4096,
        ..NetworkConfig::default()
    })
    .await?;
    let addr = test.addr;
    let fuzzing = AtomicBool::new(true);

    let fuzzer = async {
        let result = fuzz(addr, seed).await;
        // Stop the steady client however the fuzzing ended.
        fuzzing.store(false, Ordering::Release);
        result
    };

    let steady = async {
        let mut client = TestClient::connect(addr).await?;
        let mut answered = 0u64;
        while fuzzing.load(Ordering::Acquire) {
            client.metadata_round_trip(&format!("steady-{answered}")).await?;
            answered += 1;
        }
        anyhow::Ok(answered)
    };

    let (fuzzed, answered) = tokio::join!(fuzzer, steady);
    fuzzed?;
    let answered = answered?;
    assert!(answered > 0, "the steady client got no turn");
    Ok(())
}
