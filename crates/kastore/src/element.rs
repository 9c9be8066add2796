//! Rust element types of kastore arrays, and the one dispatch from a
//! runtime [`ItemType`] to its element type, [`with_element!`](crate::with_element).
//!
//! ```text
//! ItemType  Int8 Uint8 Int16 Uint16 Int32 Uint32 Int64 Uint64 Float32 Float64
//! Element   i8   u8    i16   u16    i32   u32    i64   u64    f32     f64
//! ```

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::format::ItemType;

/// A Rust type that is the element of one kastore array type: `i8`, `u8`,
/// `i16`, `u16`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
pub trait Element:
    FromBytes
    + IntoBytes
    + Immutable
    + Copy
    + std::fmt::Debug
    + std::fmt::Display
    + PartialEq
    + sealed::Sealed
{
    /// The kastore type of arrays of this element.
    const TYPE: ItemType;

    /// Swaps between little-endian storage order and the host's order (a
    /// no-op on little-endian hosts; the same swap serves both directions).
    fn swap_le(self) -> Self;

    /// The value as an `f64` when the element is a float (an `f32` widens
    /// exactly); `None` for an integer, which [`Display`](std::fmt::Display)
    /// shows as it is.
    fn float_value(self) -> Option<f64>;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! integer_element {
    ($($ty:ty => $variant:ident),*) => {$(
        impl sealed::Sealed for $ty {}
        impl Element for $ty {
            const TYPE: ItemType = ItemType::$variant;
            fn swap_le(self) -> Self {
                <$ty>::from_le(self)
            }
            fn float_value(self) -> Option<f64> {
                None
            }
        }
    )*};
}

integer_element!(i8 => Int8, u8 => Uint8, i16 => Int16, u16 => Uint16, i32 => Int32, u32 => Uint32, i64 => Int64, u64 => Uint64);

macro_rules! float_element {
    ($($ty:ty => $variant:ident, $bits:ty),*) => {$(
        impl sealed::Sealed for $ty {}
        impl Element for $ty {
            const TYPE: ItemType = ItemType::$variant;
            fn swap_le(self) -> Self {
                <$ty>::from_bits(<$bits>::from_le(self.to_bits()))
            }
            fn float_value(self) -> Option<f64> {
                Some(f64::from(self))
            }
        }
    )*};
}

float_element!(f32 => Float32, u32, f64 => Float64, u64);

/// Runs `$body` with `$T` the Rust element type ([`Element`]) of the
/// [`ItemType`](crate::ItemType) `$item_type`: the one place the workspace
/// goes from a type read from a file to a type parameter. `ItemType` is
/// `#[non_exhaustive]`, so the last arm, `$other => $fallback`, takes a type
/// this version has no element for.
///
/// A macro rather than a trait with a generic method: the body may need
/// bounds of its own on `$T` (numpy's element trait, in the Python package),
/// which every concrete element type meets.
///
/// ```
/// use binfmt_kastore::{Element, ItemType, with_element};
///
/// fn size_of_element(item_type: ItemType) -> Option<usize> {
///     with_element!(item_type, T => Some(size_of::<T>()), _ => None)
/// }
/// assert_eq!(size_of_element(ItemType::Float32), Some(4));
/// assert!(ItemType::ALL.iter().all(|&t| {
///     with_element!(t, T => <T as Element>::TYPE == t, _ => false)
/// }));
/// ```
#[macro_export]
macro_rules! with_element {
    ($item_type:expr, $T:ident => $body:expr, $other:pat => $fallback:expr) => {
        match $item_type {
            $crate::ItemType::Int8 => {
                type $T = i8;
                $body
            }
            $crate::ItemType::Uint8 => {
                type $T = u8;
                $body
            }
            $crate::ItemType::Int16 => {
                type $T = i16;
                $body
            }
            $crate::ItemType::Uint16 => {
                type $T = u16;
                $body
            }
            $crate::ItemType::Int32 => {
                type $T = i32;
                $body
            }
            $crate::ItemType::Uint32 => {
                type $T = u32;
                $body
            }
            $crate::ItemType::Int64 => {
                type $T = i64;
                $body
            }
            $crate::ItemType::Uint64 => {
                type $T = u64;
                $body
            }
            $crate::ItemType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::ItemType::Float64 => {
                type $T = f64;
                $body
            }
            #[allow(unreachable_patterns)]
            $other => $fallback,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Element;
    use crate::ItemType;

    #[test]
    fn every_item_type_dispatches_to_its_element() {
        for item_type in ItemType::ALL {
            let (found, size) = with_element!(
                item_type,
                T => (<T as Element>::TYPE, size_of::<T>() as u64),
                _ => unreachable!()
            );
            assert_eq!(found, item_type);
            assert_eq!(size, item_type.size());
        }
    }
}
