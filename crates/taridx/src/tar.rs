//! Tar header blocks: the 512-byte unit of every tar variant.
//!
//! ```text
//! offset  size  field
//!      0   100  name
//!    124    12  size (octal, or GNU base-256)
//!    148     8  chksum: octal sum of all 512 bytes, this field counted as spaces
//!    156     1  typeflag
//!    257     6  magic "ustar\0" (POSIX) or "ustar " (GNU, followed by " \0")
//! ```

/// The size of a tar header block, and the unit payloads are padded to.
pub const BLOCK_SIZE: usize = 512;

/// Where the 8-byte checksum field sits in a header block.
const CHECKSUM_FIELD: std::ops::Range<usize> = 148..156;

/// Where the `ustar` magic sits in a header block.
pub const USTAR_MAGIC_OFFSET: usize = 257;

/// The five bytes shared by the POSIX (`ustar\0`) and GNU (`ustar `) magics.
pub const USTAR_MAGIC: [u8; 5] = *b"ustar";

/// Whether `block` stores the checksum of its own bytes. Accepts the
/// unsigned sum POSIX specifies and the signed sum some historic tars wrote.
/// An all-zero block (the end-of-archive marker) has no checksum and fails.
pub fn checksum_is_valid(block: &[u8; BLOCK_SIZE]) -> bool {
    let Some(stored) = block.get(CHECKSUM_FIELD).and_then(parse_checksum_field) else {
        return false;
    };
    let (unsigned, signed) =
        block
            .iter()
            .enumerate()
            .fold((0u64, 0i64), |(unsigned, signed), (index, &byte)| {
                let byte = if CHECKSUM_FIELD.contains(&index) {
                    b' '
                } else {
                    byte
                };
                (unsigned + u64::from(byte), signed + i64::from(byte as i8))
            });
    stored == unsigned || i64::try_from(stored).is_ok_and(|stored| stored == signed)
}

/// Parses the checksum field: optional leading spaces, at least one octal
/// digit, then NUL or space terminators only.
fn parse_checksum_field(field: &[u8]) -> Option<u64> {
    let digits_start = field.iter().position(|&b| b != b' ')?;
    let rest = field.get(digits_start..)?;
    let digits_len = rest
        .iter()
        .position(|b| !(b'0'..=b'7').contains(b))
        .unwrap_or(rest.len());
    if digits_len == 0 || rest.get(digits_len..)?.iter().any(|&b| b != 0 && b != b' ') {
        return None;
    }
    rest.get(..digits_len)?
        .iter()
        .try_fold(0u64, |value, &digit| {
            value.checked_mul(8)?.checked_add(u64::from(digit - b'0'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ustar header for a regular file, checksum written as GNU tar does
    /// ("%06o\0 ").
    fn header(name: &str) -> [u8; BLOCK_SIZE] {
        let mut block = [0u8; BLOCK_SIZE];
        block[..name.len()].copy_from_slice(name.as_bytes());
        block[100..108].copy_from_slice(b"0000644\0");
        block[124..136].copy_from_slice(b"00000000005\0");
        block[156] = b'0';
        block[257..263].copy_from_slice(b"ustar\0");
        block[263..265].copy_from_slice(b"00");
        block[148..156].fill(b' ');
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        block
    }

    #[test]
    fn accepts_a_correct_checksum() {
        assert!(checksum_is_valid(&header("a/b.jpg")));
    }

    #[test]
    fn accepts_other_terminator_styles() {
        let mut block = header("x.txt");
        // Written as "%06o\0 ", the sum has a leading zero to spare.
        let digits = std::str::from_utf8(&block[149..154]).unwrap().to_owned();
        // " 12345 \0"-style: a leading space, then space and NUL.
        block[148..156].copy_from_slice(format!(" {digits} \0").as_bytes());
        assert!(checksum_is_valid(&block));
    }

    #[test]
    fn rejects_a_flipped_byte() {
        let mut block = header("a/b.jpg");
        block[3] ^= 0x01;
        assert!(!checksum_is_valid(&block));
    }

    #[test]
    fn rejects_zero_blocks_and_garbage_fields() {
        assert!(!checksum_is_valid(&[0; BLOCK_SIZE]));
        let mut block = header("a");
        block[148..156].copy_from_slice(b"12x4567\0");
        assert!(!checksum_is_valid(&block));
        block[148..156].copy_from_slice(b"        ");
        assert!(!checksum_is_valid(&block));
    }

    #[test]
    fn accepts_the_signed_sum_of_historic_tars() {
        let mut block = header("\u{e9}t\u{e9}.txt");
        block[148..156].fill(b' ');
        let signed: i64 = block.iter().map(|&b| i64::from(b as i8)).sum();
        block[148..156].copy_from_slice(format!("{signed:06o}\0 ").as_bytes());
        assert!(checksum_is_valid(&block));
    }
}
