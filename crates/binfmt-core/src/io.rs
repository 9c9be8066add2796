//! Output helpers.

use std::io::{self, IoSlice, Write};

/// Writes every byte of `buffers`, in order, with as few `writev` calls as
/// the writer allows: a record's parts (a length prefix and a block, a
/// payload and its trailer) land in the file in one write, without being
/// copied together first. Stable Rust lacks `Write::write_all_vectored`.
pub fn write_all_vectored(out: &mut impl Write, mut buffers: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut buffers, 0);
    while !buffers.is_empty() {
        match out.write_vectored(buffers) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut buffers, written),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most 3 bytes a call, to exercise partial writes.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_writes_still_write_everything_in_order() {
        let mut out = Trickle(Vec::new());
        let parts = [b"".as_slice(), b"hello", b"", b", ", b"world"];
        let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
        write_all_vectored(&mut out, &mut slices).unwrap();
        assert_eq!(out.0, b"hello, world");
    }

    #[test]
    fn a_writer_that_takes_nothing_is_an_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Ok(0)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut slices = [IoSlice::new(b"x")];
        assert_eq!(
            write_all_vectored(&mut Full, &mut slices)
                .unwrap_err()
                .kind(),
            io::ErrorKind::WriteZero
        );
    }
}
