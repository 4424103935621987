//! File access for log segments, with the test seam for disk faults: every operation first
//! asks the shared [`Faults`] whether its log dir has been made to fail, so a test can turn a
//! healthy dir into a dead disk without root, and every write and fsync asks whether the dir
//! has been made slow, so a test can stall a disk. Real I/O errors take the same path out.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Log dirs whose I/O is made to fail or stall (test seam). Cheap to clone; shared by a
/// LogManager.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    failing: Arc<RwLock<HashSet<PathBuf>>>,
    stalled: Arc<RwLock<HashMap<PathBuf, Duration>>>,
}

impl Faults {
    /// From now on every I/O under `dir` fails with EIO.
    pub fn fail_dir(&self, dir: &Path) {
        self.failing
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.to_path_buf());
    }

    /// From now on every write and fsync under `dir` takes `stall` longer, blocking the calling
    /// thread as a slow disk does (`Duration::ZERO` makes the dir fast again).
    pub fn stall_dir(&self, dir: &Path, stall: Duration) {
        let mut stalled = self.stalled.write().unwrap_or_else(|p| p.into_inner());
        if stall.is_zero() {
            stalled.remove(dir);
        } else {
            stalled.insert(dir.to_path_buf(), stall);
        }
    }

    /// Errs with EIO when `path` lies under a failing dir.
    pub fn check(&self, path: &Path) -> io::Result<()> {
        let failing = self.failing.read().unwrap_or_else(|p| p.into_inner());
        if failing.iter().any(|d| path.starts_with(d)) {
            return Err(io::Error::from_raw_os_error(5)); // EIO
        }
        Ok(())
    }

    /// Before a write or fsync of `path`: [`Self::check`], then the dir's stall, if any.
    pub fn check_write(&self, path: &Path) -> io::Result<()> {
        self.check(path)?;
        let stall = {
            let stalled = self.stalled.read().unwrap_or_else(|p| p.into_inner());
            stalled
                .iter()
                .filter(|(d, _)| path.starts_with(d))
                .map(|(_, s)| *s)
                .max()
        };
        if let Some(stall) = stall {
            std::thread::sleep(stall);
        }
        Ok(())
    }

    /// fsyncs `file` (data, as [`LogFile::sync`]) through the seam; `path` names it.
    pub fn sync(&self, path: &Path, file: &File) -> io::Result<()> {
        self.check_write(path)?;
        file.sync_data()
    }
}

/// `Write::write_all` for several buffers: `write_vectored` until every byte is written.
fn write_all_vectored(out: &mut impl Write, parts: &[&[u8]]) -> io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match out.write_vectored(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A segment's `.log` file: appended at the end, read at positions.
#[derive(Debug)]
pub struct LogFile {
    file: File,
    path: PathBuf,
    size: u64,
    faults: Faults,
}

impl LogFile {
    /// Opens (creating if missing) for append and positional reads.
    pub fn open(path: &Path, faults: &Faults) -> io::Result<LogFile> {
        faults.check(path)?;
        let file = OpenOptions::new().read(true).append(true).create(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(LogFile {
            file,
            path: path.to_path_buf(),
            size,
            faults: faults.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes in the file.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.append_parts(&[data])
    }

    /// Appends `parts` back to back with vectored writes (one `writev` unless the kernel takes
    /// less), so a batch whose patched header lives apart from its records is written without
    /// first being assembled in one buffer.
    pub fn append_parts(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        self.faults.check_write(&self.path)?;
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if let Err(e) = write_all_vectored(&mut self.file, parts) {
            // A partial write leaves garbage at the tail; cut it so the file stays a valid log.
            let _ = self.file.set_len(self.size);
            return Err(e);
        }
        self.size += total as u64;
        Ok(())
    }

    /// Reads up to `len` bytes from `position` into fresh, uninitialised memory (no zero fill);
    /// the result is short at the end of the file.
    pub fn read_vec_at(&self, len: usize, position: u64) -> io::Result<Vec<u8>> {
        self.faults.check(&self.path)?;
        let mut buf = Vec::with_capacity(len);
        while buf.len() < len {
            let at = position + buf.len() as u64;
            // Reads into the uninitialised spare capacity and extends `len` by what arrived.
            match rustix::io::pread(&self.file, rustix::buffer::spare_capacity(&mut buf), at) {
                Ok(0) => break,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        buf.truncate(len); // the allocator may have given more capacity than asked for
        Ok(buf)
    }

    /// Fills `buf` from `position`; returns how many bytes were read (short at the end of file).
    pub fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        self.faults.check(&self.path)?;
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], position + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.faults.sync(&self.path, &self.file)
    }

    /// Another handle on the open file, to fsync it without the log's lock (the background
    /// flush of a rolled segment). Valid after a rename or delete of the path.
    pub fn sync_handle(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// Cuts the file to `size` bytes.
    pub fn truncate(&mut self, size: u64) -> io::Result<()> {
        self.faults.check_write(&self.path)?;
        self.file.set_len(size)?;
        self.size = size;
        Ok(())
    }

    /// Renames the file (the handle stays valid).
    pub fn rename(&mut self, to: &Path) -> io::Result<()> {
        self.faults.check(&self.path)?;
        std::fs::rename(&self.path, to)?;
        self.path = to.to_path_buf();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_stalled_dir_makes_writes_and_fsyncs_slow_and_only_there() {
        let root = tempfile::tempdir().expect("tempdir");
        let (slow, fast) = (root.path().join("slow"), root.path().join("fast"));
        std::fs::create_dir_all(&slow).expect("mkdir");
        std::fs::create_dir_all(&fast).expect("mkdir");
        let faults = Faults::default();
        let mut stalled = LogFile::open(&slow.join("0.log"), &faults).expect("open");
        let mut healthy = LogFile::open(&fast.join("0.log"), &faults).expect("open");
        faults.stall_dir(&slow, Duration::from_millis(200));
        let started = Instant::now();
        stalled.append(b"x").expect("append");
        stalled.sync().expect("sync");
        assert!(
            started.elapsed() >= Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
        let mut buf = [0u8; 1];
        let started = Instant::now();
        stalled.read_at(&mut buf, 0).expect("read");
        healthy.append(b"y").expect("append");
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "reads and other dirs are not stalled"
        );
        faults.stall_dir(&slow, Duration::ZERO);
        let started = Instant::now();
        stalled.append(b"z").expect("append");
        assert!(started.elapsed() < Duration::from_millis(200), "the stall was lifted");
    }
}
