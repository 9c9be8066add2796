//! Reading one-dimensional `.npy` files (numpy's `save`) as kastore arrays.
//!
//! ```text
//! "\x93NUMPY" | major u8 | minor u8 | header length (u16 LE in 1.x, u32 LE in 2.x/3.x)
//! | header: a Python dict literal, e.g. {'descr': '<f8', 'fortran_order': False, 'shape': (3,), }
//! | the elements
//! ```
//!
//! The element type comes from `descr` (`i1`..`u8`, `f4`, `f8`, little- or
//! big-endian; big-endian values are swapped into the little-endian order
//! kastore stores) and the length from `shape`, which must have exactly one
//! dimension. Anything else (more dimensions, a scalar, structured or
//! object dtypes, a data section of the wrong size) is an error.

use std::borrow::Cow;
use std::path::Path;

use crate::error::{KastError, Result};
use crate::format::ItemType;

/// The magic every `.npy` file starts with.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses the bytes of a `.npy` file into its element type and the
/// little-endian bytes of its elements (borrowed unless they had to be
/// swapped).
pub fn parse(bytes: &[u8]) -> std::result::Result<(ItemType, Cow<'_, [u8]>), String> {
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("not an .npy file (no \\x93NUMPY magic)")?;
    let (&major, rest) = rest.split_first().ok_or("truncated .npy header")?;
    let (_minor, rest) = rest.split_first().ok_or("truncated .npy header")?;
    let (header_len, rest) = match major {
        1 => {
            let (len, rest) = rest
                .split_first_chunk::<2>()
                .ok_or("truncated .npy header")?;
            (usize::from(u16::from_le_bytes(*len)), rest)
        }
        2 | 3 => {
            let (len, rest) = rest
                .split_first_chunk::<4>()
                .ok_or("truncated .npy header")?;
            (u32::from_le_bytes(*len) as usize, rest)
        }
        other => return Err(format!(".npy format version {other} is not 1, 2 or 3")),
    };
    if header_len > rest.len() {
        return Err(format!(
            "the .npy header claims {header_len} bytes, the file has {}",
            rest.len()
        ));
    }
    let (header, data) = rest.split_at(header_len);
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let descr = quoted_value(header, "descr").ok_or("the .npy header has no 'descr'")?;
    let (endian, code) = descr.split_at(descr.len().min(1));
    let item_type = match code {
        "i1" => ItemType::Int8,
        "u1" => ItemType::Uint8,
        "i2" => ItemType::Int16,
        "u2" => ItemType::Uint16,
        "i4" => ItemType::Int32,
        "u4" => ItemType::Uint32,
        "i8" => ItemType::Int64,
        "u8" => ItemType::Uint64,
        "f4" => ItemType::Float32,
        "f8" => ItemType::Float64,
        _ => return Err(format!("dtype {descr:?} is not one of kastore's ten types")),
    };
    if !matches!(endian, "<" | ">" | "|") {
        return Err(format!(
            "dtype {descr:?} has no byte order kastore can read"
        ));
    }
    let fortran = header
        .split_once("'fortran_order':")
        .map(|(_, rest)| rest.trim_start().starts_with("True"));
    if fortran.is_none() {
        return Err("the .npy header has no 'fortran_order'".into());
    }
    let len = shape_1d(header)?;
    let expected = len
        .checked_mul(item_type.size())
        .filter(|&bytes| bytes == data.len() as u64)
        .ok_or_else(|| {
            format!(
                "shape ({len},) of {item_type} needs {} bytes of data, the file has {}",
                u128::from(len) * u128::from(item_type.size()),
                data.len()
            )
        })?;
    debug_assert_eq!(expected, data.len() as u64);
    if endian == ">" && item_type.size() > 1 {
        let size = item_type.size() as usize;
        let mut swapped = data.to_vec();
        swapped.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        return Ok((item_type, Cow::Owned(swapped)));
    }
    Ok((item_type, Cow::Borrowed(data)))
}

/// Reads the `.npy` file at `path`: its element type and little-endian
/// element bytes, or an error naming the file.
pub fn read(path: impl AsRef<Path>) -> Result<(ItemType, Vec<u8>)> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| binfmt_core::Error::io(path, error))?;
    parse(&bytes)
        .map(|(item_type, data)| (item_type, data.into_owned()))
        .map_err(|why| KastError::Npy {
            path: path.display().to_string(),
            why,
        })
}

/// The string value of `'key': '...'` in a header dict.
fn quoted_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let (_, after) = header.split_once(&format!("'{key}':"))?;
    let after = after.trim_start();
    let quote = after.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = after.get(1..)?;
    inner.split_once(quote).map(|(value, _)| value)
}

/// The length of a one-dimensional `'shape': (N,)`.
fn shape_1d(header: &str) -> std::result::Result<u64, String> {
    let (_, after) = header
        .split_once("'shape':")
        .ok_or("the .npy header has no 'shape'")?;
    let tuple = after
        .trim_start()
        .strip_prefix('(')
        .and_then(|rest| rest.split_once(')'))
        .map(|(inside, _)| inside)
        .ok_or("the .npy shape is not a tuple")?;
    let dims: Vec<&str> = tuple
        .split(',')
        .map(str::trim)
        .filter(|dim| !dim.is_empty())
        .collect();
    match dims.as_slice() {
        [len] => len
            .trim_end_matches('L')
            .parse::<u64>()
            .map_err(|_| format!("the .npy shape ({tuple}) is not a length")),
        _ => Err(format!(
            "the array has shape ({tuple}): only one-dimensional arrays can be stored"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn one_dimensional_arrays_of_every_type() {
        let file = npy("<i4", "(2,)", &[1, 0, 0, 0, 2, 0, 0, 0]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!(
            (item_type, &*data),
            (ItemType::Int32, &[1, 0, 0, 0, 2, 0, 0, 0][..])
        );
        let file = npy("|u1", "(3,)", &[7, 8, 9]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!((item_type, &*data), (ItemType::Uint8, &[7, 8, 9][..]));
        let file = npy(">u2", "(1,)", &[1, 2]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!((item_type, &*data), (ItemType::Uint16, &[2, 1][..]));
        let file = npy("<f8", "(0,)", &[]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!((item_type, data.len()), (ItemType::Float64, 0));
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        for (bytes, fragment) in [
            (npy("<i4", "(2, 2)", &[0; 16]), "only one-dimensional"),
            (npy("<i4", "()", &[0; 4]), "only one-dimensional"),
            (
                npy("<c16", "(1,)", &[0; 16]),
                "not one of kastore's ten types",
            ),
            (npy("<i4", "(3,)", &[0; 8]), "needs 12 bytes"),
            (b"PK\x03\x04".to_vec(), "not an .npy file"),
        ] {
            let error = parse(&bytes).unwrap_err();
            assert!(error.contains(fragment), "{error}");
        }
    }
}
