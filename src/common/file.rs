//! Reading a small text file that the operator names (the bearer token, broker.yaml) so that no
//! file can block the daemon or make it big: a FIFO, a device (`/dev/zero`) or any other file
//! that is not a regular one is refused before a byte is read, and a regular file is read at
//! most one byte past its limit (it may grow after it is measured).
//!
//! Takes a path and a limit; gives the file's text or an [`std::io::Error`] whose message says
//! which bound it broke.
//!
//! Invariant: the open never waits (`O_NONBLOCK`: opening a FIFO without a writer returns at
//! once) and nothing is read from a file that is not regular, so a read here cannot hold an
//! async worker, whatever the path is replaced by at run time.

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// Reads `path` as UTF-8 text of at most `limit` bytes, refusing anything but a regular file.
pub fn read_regular(path: &Path, limit: usize) -> std::io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(Error::from)?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("not a regular file ({})", describe(&meta.file_type())),
        ));
    }
    let too_large = |size: u64| {
        Error::new(
            ErrorKind::InvalidData,
            format!("file is {size} bytes, larger than the limit of {limit} bytes"),
        )
    };
    if meta.len() > limit as u64 {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| Error::new(ErrorKind::InvalidData, "file is not UTF-8"))
}

/// What kind of file a non-regular one is, for the error.
fn describe(ty: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    match ty {
        t if t.is_dir() => "a directory",
        t if t.is_fifo() => "a FIFO",
        t if t.is_char_device() => "a character device",
        t if t.is_block_device() => "a block device",
        t if t.is_socket() => "a socket",
        _ => "not a regular file",
    }
}

#[cfg(test)]
mod tests {
    use super::read_regular;
    use std::path::Path;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = std::env::temp_dir().join(format!("sentinel-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small");
        std::fs::write(&small, "token\n").unwrap();
        assert_eq!(read_regular(&small, 6).unwrap(), "token\n");
        let err = read_regular(&small, 5).unwrap_err().to_string();
        assert_eq!(err, "file is 6 bytes, larger than the limit of 5 bytes");
        let err = read_regular(Path::new("/dev/zero"), 5)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "not a regular file (a character device)");
        let err = read_regular(&dir, 5).unwrap_err().to_string();
        assert_eq!(err, "not a regular file (a directory)");
        // A FIFO without a writer: refused at once, not waited on.
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        let err = read_regular(&fifo, 5).unwrap_err().to_string();
        assert_eq!(err, "not a regular file (a FIFO)");
        std::fs::write(&small, b"\xff").unwrap();
        assert_eq!(
            read_regular(&small, 5).unwrap_err().to_string(),
            "file is not UTF-8"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
