//! `.npy` headers against numpy itself (`np.load`, from the interop
//! Python): every header `npy::parse` accepts, numpy reads as the same
//! elements; the repeated key numpy resolves by keeping the last is refused.
//! Skipped, with a note, when the interop Python is not installed.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use binfmt_kastore::npy;
use binfmt_tests::interop::python;

fn file(version: u8, header: &str) -> Vec<u8> {
    let mut header = header.to_owned();
    let prefix = if version == 1 { 10 } else { 12 };
    while (prefix + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY".to_vec();
    bytes.extend_from_slice(&[version, 0]);
    if version == 1 {
        bytes.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
    } else {
        bytes.extend_from_slice(&u32::try_from(header.len()).unwrap().to_le_bytes());
    }
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    bytes
}

#[test]
fn every_header_read_here_numpy_reads_the_same_way() {
    let Some(python) = python() else { return };
    let headers = [
        (
            1,
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
        ),
        (1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}"),
        (
            3,
            "{\"shape\": (2,), \"fortran_order\": True, \"descr\": \"<i4\"}",
        ),
        (2, "{'descr':'<i4','fortran_order':False,'shape':( 2 , )}"),
        (
            1,
            "  {'descr': '<i4',\n 'fortran_order': False,\n\t'shape': (2,)}",
        ),
        (
            1,
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }",
        ),
        (
            1,
            "{'descr': '>u2', 'fortran_order': False, 'shape': (4,), }",
        ),
        (
            1,
            "{'descr': '|u1', 'fortran_order': False, 'shape': (8,), }",
        ),
        // Refused here; numpy keeps the last of each repeated key.
        (
            1,
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'shape': (1,), }",
        ),
        (
            1,
            "{'descr': '<u8', 'descr': '<i4', 'fortran_order': False, 'shape': (2,)}",
        ),
        (
            1,
            "{'descr': '<i4', 'fortran_order': False, # 'shape': (1,)\n 'shape': (2,)}",
        ),
        (
            1,
            "{'descr': '<' 'i4', 'fortran_order': False, 'shape': (2,)}",
        ),
        (
            1,
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2), }",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (number, (version, header)) in headers.iter().enumerate() {
        let path = dir.path().join(format!("{number}.npy"));
        std::fs::write(&path, file(*version, header)).unwrap();
        paths.push(path);
    }
    let script = "import sys, warnings, numpy as np\n\
                  warnings.simplefilter('ignore')\n\
                  for path in sys.argv[1:]:\n\
                  \x20   try:\n\
                  \x20       a = np.load(path)\n\
                  \x20       print(a.dtype.newbyteorder('<').str if a.dtype.itemsize > 1 else a.dtype.str, a.astype(a.dtype.newbyteorder('<')).tobytes().hex())\n\
                  \x20   except Exception as e:\n\
                  \x20       print('error', type(e).__name__)\n";
    let output = Command::new(&python)
        .arg("-c")
        .arg(script)
        .args(&paths)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let numpy = String::from_utf8(output.stdout).unwrap();
    let numpy: Vec<&str> = numpy.lines().collect();
    assert_eq!(numpy.len(), headers.len());
    let mut refused = 0;
    for ((path, (_, header)), numpy) in paths.iter().zip(&headers).zip(numpy) {
        match npy::parse(&std::fs::read(path).unwrap()) {
            Ok((item_type, bytes)) => {
                let (dtype, hex) = numpy.split_once(' ').unwrap();
                let ours: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(hex, ours, "{header}: numpy {numpy}");
                let code = &dtype[1..];
                assert_eq!(
                    code,
                    match item_type.name() {
                        "int32" => "i4",
                        "uint16" => "u2",
                        "uint8" => "u1",
                        other => panic!("{other}"),
                    },
                    "{header}"
                );
            }
            Err(_) => refused += 1,
        }
    }
    assert_eq!(refused, 5);
}
