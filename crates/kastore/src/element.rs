//! Rust element types of kastore arrays.

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::format::ItemType;

/// A Rust type that is the element of one kastore array type: `i8`, `u8`,
/// `i16`, `u16`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
pub trait Element:
    FromBytes + IntoBytes + Immutable + Copy + std::fmt::Debug + PartialEq + sealed::Sealed
{
    /// The kastore type of arrays of this element.
    const TYPE: ItemType;

    /// Swaps between little-endian storage order and the host's order (a
    /// no-op on little-endian hosts; the same swap serves both directions).
    fn swap_le(self) -> Self;
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
        }
    )*};
}

float_element!(f32 => Float32, u32, f64 => Float64, u64);
