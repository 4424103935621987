//! File access for log segments, with the test seam for disk failures: every operation first
//! asks the shared [`Faults`] whether its log dir has been made to fail, so a test can turn a
//! healthy dir into a dead disk without root. Real I/O errors take the same path out.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Log dirs whose I/O is made to fail (test seam). Cheap to clone; shared by a LogManager.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    failing: Arc<RwLock<HashSet<PathBuf>>>,
}

impl Faults {
    /// From now on every I/O under `dir` fails with EIO.
    pub fn fail_dir(&self, dir: &Path) {
        self.failing
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.to_path_buf());
    }

    /// Errs with EIO when `path` lies under a failing dir.
    pub fn check(&self, path: &Path) -> io::Result<()> {
        let failing = self.failing.read().unwrap_or_else(|p| p.into_inner());
        if failing.iter().any(|d| path.starts_with(d)) {
            return Err(io::Error::from_raw_os_error(5)); // EIO
        }
        Ok(())
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
        self.faults.check(&self.path)?;
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
        self.faults.check(&self.path)?;
        self.file.sync_data()
    }

    /// Cuts the file to `size` bytes.
    pub fn truncate(&mut self, size: u64) -> io::Result<()> {
        self.faults.check(&self.path)?;
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
