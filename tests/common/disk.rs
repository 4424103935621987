//! Disks that fail for real, for the log-dir failure cases (reliability.md R12, R13): an ext4
//! file system on a loop device that `EXT4_IOC_SHUTDOWN` (`xfs_io -x -c shutdown`) kills, so
//! every I/O on it fails with EIO, even on files already open; and a small tmpfs that a filler
//! file fills, so the next write fails with ENOSPC. Both need root; [`unavailable`] says why
//! not. Unmounted (and the loop device detached) on drop, also while a test panics.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Why real disk faults cannot be made here, or `None` when they can.
pub fn unavailable() -> Option<String> {
    let root = run(Command::new("id").arg("-u")).ok()?;
    if root != "0" {
        return Some("loop devices and mounts need root".to_string());
    }
    for tool in ["losetup", "mkfs.ext4", "xfs_io", "mount"] {
        if run(Command::new("sh").args(["-c", &format!("command -v {tool}")])).is_err() {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// A mounted file system that a test makes fail.
#[derive(Debug)]
pub struct FailingDisk {
    pub mount: PathBuf,
    /// The loop device of an ext4 disk; `None` for a tmpfs.
    device: Option<String>,
}

impl FailingDisk {
    /// A 64 MiB ext4 image at `image` on a loop device, mounted at `mount`.
    pub fn ext4(image: &Path, mount: &Path) -> Result<FailingDisk, String> {
        run(Command::new("truncate").args(["-s", "64M"]).arg(image))?;
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(image))?;
        let device = run(Command::new("losetup").args(["--find", "--show"]).arg(image))?;
        std::fs::create_dir_all(mount).map_err(|e| e.to_string())?;
        let disk = FailingDisk {
            mount: mount.to_path_buf(),
            device: Some(device.clone()),
        };
        run(Command::new("mount").arg(&device).arg(mount))?;
        Ok(disk)
    }

    /// A tmpfs of `mib` MiB mounted at `mount`.
    pub fn tmpfs(mount: &Path, mib: u32) -> Result<FailingDisk, String> {
        std::fs::create_dir_all(mount).map_err(|e| e.to_string())?;
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(mount))?;
        Ok(FailingDisk {
            mount: mount.to_path_buf(),
            device: None,
        })
    }

    /// EXT4_IOC_SHUTDOWN: every later I/O on the disk fails with EIO.
    pub fn shut_down(&self) -> Result<(), String> {
        run(Command::new("xfs_io").args(["-x", "-c", "shutdown"]).arg(&self.mount)).map(|_| ())
    }

    /// Writes a filler file until the disk is full: the next write of anyone fails with ENOSPC.
    pub fn fill(&self) -> Result<(), String> {
        use std::io::Write;
        let mut f = std::fs::File::create(self.mount.join("filler")).map_err(|e| e.to_string())?;
        let block = vec![0u8; 64 * 1024];
        loop {
            match f.write(&block) {
                Ok(0) => return Ok(()),
                Ok(_) => continue,
                Err(e) if e.raw_os_error() == Some(28) => return Ok(()),
                Err(e) => return Err(format!("filling {}: {e}", self.mount.display())),
            }
        }
    }
}

impl Drop for FailingDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        if let Some(device) = &self.device {
            let _ = Command::new("losetup").arg("-d").arg(device).status();
        }
    }
}
