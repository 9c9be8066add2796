//! A sample's members read straight into their `bytes` objects.
//!
//! Python allocates one `bytes` object per member, of the size its row
//! says; then, with the GIL released, `Dataset::read_sample_into` reads
//! every payload into those objects (one vectored read per shard when the
//! members' checks are remembered) and checks each header against its row.
//! A payload is copied once, by the kernel, where reading into a window and
//! then into `bytes` copied it twice. A failed check or read drops the
//! objects: nothing half-read is handed out.
//!
//! `PyBytes::new_with` lends each object's buffer only inside a closure,
//! so the objects are made by nesting one closure per member (at most
//! [`DIRECT_MEMBERS`]), the innermost one doing the read.

use binfmt_core::Source;
use binfmt_taridx::{Dataset, MemberInfo, Row};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::{errors, remote};

/// Samples of more members than this are read through member readers.
pub(crate) const DIRECT_MEMBERS: usize = 16;

/// The most bytes a member read this way may have: each object is
/// allocated by its row's size before the row is checked, so the size is
/// bounded here (64 KiB each, 1 MiB a sample).
const DIRECT_MEMBER_BYTES: u64 = 64 * 1024;

/// What each member's header said, and its payload as a `bytes` object.
pub(crate) type Members<'py> = (Vec<MemberInfo>, Vec<Bound<'py, PyBytes>>);

/// The members of `rows` (a sample's) as `bytes` objects, with what each
/// header said; `None` when the sample is not read this way (too many
/// members, or one too large).
pub(crate) fn read_sample<'py>(
    py: Python<'py>,
    dataset: &Dataset<Box<dyn Source>>,
    rows: &[Row],
) -> PyResult<Option<Members<'py>>> {
    if rows.len() > DIRECT_MEMBERS || rows.iter().any(|row| row.size.get() > DIRECT_MEMBER_BYTES) {
        return Ok(None);
    }
    let sizes: Vec<usize> = rows
        .iter()
        .filter_map(|row| usize::try_from(row.size.get()).ok())
        .collect();
    let mut objects = Vec::with_capacity(rows.len());
    let mut infos = None;
    let mut work = |buffers: &mut [&mut [u8]]| -> PyResult<()> {
        let read = remote::detach(py, || dataset.read_sample_into(rows, buffers))?
            .map_err(|error| errors::binfmt(&error))?;
        infos = Some(read);
        Ok(())
    };
    nest(py, &sizes, Vec::new(), &mut objects, &mut work)?;
    // The innermost object (the last member's) was finished first.
    objects.reverse();
    Ok(infos.map(|infos| (infos, objects)))
}

/// Makes a `bytes` object of each of `sizes`, one inside the other's
/// making, and runs `work` on all their buffers (those of `buffers` first)
/// inside the innermost one; the objects are pushed innermost first.
fn nest<'py>(
    py: Python<'py>,
    sizes: &[usize],
    buffers: Vec<&mut [u8]>,
    objects: &mut Vec<Bound<'py, PyBytes>>,
    work: &mut dyn FnMut(&mut [&mut [u8]]) -> PyResult<()>,
) -> PyResult<()> {
    let Some((&len, rest)) = sizes.split_first() else {
        let mut buffers = buffers;
        return work(&mut buffers);
    };
    let mut inner = Vec::new();
    let object = PyBytes::new_with(py, len, |buffer| {
        let mut all: Vec<&mut [u8]> = Vec::with_capacity(buffers.len() + 1);
        all.extend(buffers);
        all.push(buffer);
        nest(py, rest, all, &mut inner, work)
    })?;
    objects.append(&mut inner);
    objects.push(object);
    Ok(())
}
